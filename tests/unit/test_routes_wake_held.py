"""A Node that moves between pools wakes the hosts remediation holds in the pool it left
and the one it joined, whether its role labels moved it or its MachineConfigNode's
``spec.pool.name`` did (a Node's pool is its MachineConfigNode's where it names one):
either may free a host held because too much of its pool was unhealthy
(runtime/routes.py, runtime/hosts/remediator.py)."""

from __future__ import annotations

from typing import Any

import pytest

from state_controller.cluster.embedded.store import EmbeddedCluster
from state_controller.remediation.policy import Action, RemediationPolicy
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.hosts.remediator import Remediator
from state_controller.runtime.indexes.machines import MachineIndex
from state_controller.runtime.indexes.nodes import NodeIndex
from state_controller.runtime.machinery.workqueue import WorkQueue
from state_controller.runtime.nodes.cordoned_pods import Drains
from state_controller.runtime.routes import EventRoutes
from state_controller.runtime.servicing.slots import ServiceSlots
from state_controller.runtime.shards.lead import Lead
from tests.unit.test_remediator import LATE, NS, a_node, provisioned

HELD = [f"{NS}/w-2", f"{NS}/w-3"]


def mcn(name: str, pool: str) -> dict[str, Any]:
    """The MachineConfigNode of a Node, naming its pool, as the operator reports it."""
    return {
        "metadata": {"name": name},
        "spec": {"node": {"name": name}, "pool": {"name": pool}},
        "status": {"conditions": [{"type": "Updated", "status": "True", "reason": "Updated"}]},
    }


def queued(queue: WorkQueue[str]) -> set[str]:
    keys = set()
    while len(queue):
        key = queue.get(timeout=0)
        assert key is not None
        keys.add(key)
        queue.done(key)
    return keys


@pytest.fixture
def fleet() -> tuple[EventRoutes, NodeIndex, WorkQueue[str]]:
    """Four Nodes of pool worker, two NotReady: their hosts are held (2 of 4 unhealthy)."""
    names = [f"w-{i}" for i in range(4)]
    index = NodeIndex(lambda name: [f"{NS}/{name}"] if name in names else [])
    for i, name in enumerate(names):
        index.observe(name, a_node(name, ready="True" if i < 2 else "False"))
    config = ControllerConfig(remediation=RemediationPolicy(not_ready_after=60.0))
    remediator = Remediator(config, index)
    for name in ("w-2", "w-3"):
        node = index.node_on(f"{NS}/{name}")
        verdict = remediator.consider(provisioned(name), node, deleting=False, now=LATE)
        assert verdict is not None and verdict.action is Action.HELD
    cluster = EmbeddedCluster()
    queue: WorkQueue[str] = WorkQueue()
    routes = EventRoutes(
        config,
        queue,
        machines=MachineIndex(lambda _key: True),
        node_index=index,
        lead=Lead(cluster, sharded=False, node_state_namespace=NS, on_node_state=print),
        slots=ServiceSlots(1, queue.add),
        drains=Drains(cluster, lambda _node: None),
        remediator=remediator,
        bmh_cached=lambda _key: False,
    )
    return routes, index, queue


def test_a_machine_config_node_moving_a_node_to_another_pool_wakes_the_held(
    fleet: tuple[EventRoutes, NodeIndex, WorkQueue[str]],
) -> None:
    routes, index, queue = fleet
    routes.on_mcn("w-1", mcn("w-1", "infra"))
    assert index.pool("w-1") == "infra"
    assert set(HELD) <= queued(queue)


def test_a_label_moving_a_node_to_another_pool_wakes_the_held_of_both(
    fleet: tuple[EventRoutes, NodeIndex, WorkQueue[str]],
) -> None:
    routes, index, queue = fleet
    routes.on_node("w-1", a_node("w-1", pool="infra"))
    assert index.pool("w-1") == "infra"
    assert set(HELD) <= queued(queue)  # held in worker, the pool it left
