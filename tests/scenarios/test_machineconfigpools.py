"""OpenShift's MachineConfigPool beside the NodePool of the same name: the operator's own
counts shown read-only, and a degraded count that does not match the pool's Nodes told
(condition SourcesAgree, series hoststate_nodepool_sources_disagree) until the operator's
count catches up; and each OpenShift Node in the pool the operator puts it in. On
openshift/api's own MachineConfigNode and MachineConfigPool CRDs (tools/openshift/crds.sh),
on the real kube-apiserver as in process; the operator is played by testbed/mco.py, as
openshift/machine-config-operator writes its objects at 1c5e40f25."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from typing import Any

import pytest

from state_controller.cluster.interface import (
    MACHINECONFIGNODES,
    MACHINECONFIGPOOLS,
    NODEPOOLS,
    Cluster,
    NotFound,
)
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.nodes import SimulatedNode
from testbed.mco import PlayedMCO, PlayedPool
from testbed.scenarios import WORKER
from tests.conftest import FAST_BACKOFF, wait_for

CONFIG = "rendered-worker-5e6f"
NODES = ("pool-w-0", "pool-w-1")


@pytest.fixture
def openshift_objects(cluster: Cluster) -> Iterator[None]:
    """MachineConfigNodes and -Pools are cluster-scoped: the session's control plane would
    keep them for the next test."""
    yield
    for resource in (MACHINECONFIGNODES, MACHINECONFIGPOOLS):
        for obj in cluster.list(resource)[0]:
            with suppress(NotFound):
                cluster.delete(resource, None, obj["metadata"]["name"])


def nodepool(cluster: Cluster, name: str = "worker") -> dict[str, Any]:
    try:
        return dict(cluster.get(NODEPOOLS, None, name))
    except NotFound:
        return {}


def sources_agree(cluster: Cluster, name: str = "worker") -> dict[str, Any]:
    conditions = (nodepool(cluster, name).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "SourcesAgree"), {})


def test_a_pools_degraded_count_that_does_not_match_its_nodes_is_told(
    cluster: Cluster, run_controller: Any, openshift_objects: None
) -> None:
    config = ControllerConfig(
        workers=2,
        backoff=FAST_BACKOFF,
        observe_machineconfignodes=True,
        pool_status_interval=0.2,
        pool_counts_grace=1.0,
    )
    with run_controller(cluster, config=config) as running:
        mcns = []
        for name in NODES:
            SimulatedNode(cluster, name, labels=WORKER).register()
            mcns.append(PlayedMCO(cluster, name, "worker", CONFIG))
        pool = PlayedPool(cluster, "worker", CONFIG)
        pool.recount(mcns)

        def shown() -> dict[str, Any]:
            return dict((nodepool(cluster).get("status") or {}).get("machineConfigPool") or {})

        wait_for(lambda: shown().get("machineCount") == 2, what="the MCO's counts shown")
        wait_for(lambda: sources_agree(cluster).get("status") == "True", what="SourcesAgree")
        mcp = shown()
        assert {k: v for k, v in mcp.items() if k != "conditions"} == {
            "name": "worker",
            "configuration": CONFIG,
            "machineCount": 2,
            "updatedMachineCount": 2,
            "readyMachineCount": 2,
            "unavailableMachineCount": 0,
            "degradedMachineCount": 0,
        }
        assert [(c["type"], c["status"]) for c in mcp["conditions"]] == [
            ("Updated", "True"),
            ("Updating", "False"),
            ("Degraded", "False"),
        ]

        def ours() -> tuple[int, int]:  # our own counts, kept beside the MCO's
            status = nodepool(cluster)["status"]
            return status["machineCount"], status["degradedMachineCount"]

        # SourcesAgree can hold while our count still lacks a Node (both degraded 0)
        wait_for(lambda: ours() == (2, 0), what="our own counts of both Nodes")
        labels = {"pool": "worker"}
        assert running.sample("hoststate_nodepool_sources_disagree", labels) == 0

        # the node fails its update; the operator's pool count misses it (MCO PR #5110)
        # update.go, reportMachineNodeDegradeStatus (Updated turns False with it)
        mcns[1].write(("NodeDegraded", "True", "NodeDegraded", "failed to apply files: disk full"))
        pool.recount(mcns, degraded=0)
        told = (
            "the MachineConfigPool worker counts 0 degraded machines; the pool's Nodes show 1 "
            "(pool-w-1)"
        )
        wait_for(
            lambda: sources_agree(cluster).get("message") == told,
            timeout=30,
            what="SourcesAgree False, both counts",
        )
        assert (sources_agree(cluster)["status"], sources_agree(cluster)["reason"]) == (
            "False",
            "PoolCountsDisagree",
        )
        assert shown()["degradedMachineCount"] == 0
        assert nodepool(cluster)["status"]["degradedMachineCount"] == 1
        wait_for(
            lambda: running.sample("hoststate_nodepool_sources_disagree", labels) == 1,
            what="the pool's series at 1",
        )

        pool.recount(mcns)  # the operator catches up
        wait_for(
            lambda: sources_agree(cluster).get("status") == "True",
            timeout=30,
            what="SourcesAgree True again",
        )
        assert sources_agree(cluster)["reason"] == "PoolCountsAgree"
        assert shown()["degradedMachineCount"] == 1
        assert [(c["type"], c["status"]) for c in shown()["conditions"]][-1] == ("Degraded", "True")
        wait_for(
            lambda: running.sample("hoststate_nodepool_sources_disagree", labels) == 0,
            what="the pool's series back at 0",
        )


def test_without_a_machineconfigpool_the_nodepool_is_as_before(
    cluster: Cluster, run_controller: Any, openshift_objects: None
) -> None:
    config = ControllerConfig(
        workers=2, backoff=FAST_BACKOFF, observe_machineconfignodes=True, pool_status_interval=0.2
    )
    with run_controller(cluster, config=config) as running:
        SimulatedNode(cluster, NODES[0], labels=WORKER).register()
        PlayedMCO(cluster, NODES[0], "worker", CONFIG)
        wait_for(
            lambda: (nodepool(cluster).get("status") or {}).get("machineCount") == 1,
            what="the NodePool counted",
        )
        status = nodepool(cluster)["status"]
        assert "machineConfigPool" not in status and "conditions" not in status
        assert running.sample("hoststate_nodepool_sources_disagree", {"pool": "worker"}) == 0


def test_openshift_nodes_are_in_the_pools_the_operator_puts_them_in(
    cluster: Cluster, run_controller: Any, openshift_objects: None
) -> None:
    """A control-plane node (labelled master and control-plane, as OpenShift labels every
    one) is in the pool master, where its MachineConfigPool is compared; infra and custom
    roles are pools of their own (pkg/helpers/helpers.go, GetPoolsForNode, at MCO
    1c5e40f25); a MachineConfigNode's spec.pool.name, the operator's own choice, places a
    node its labels do not (a pool selecting Nodes by another label)."""
    role = "node-role.kubernetes.io/"
    nodes = {
        "cp-0": ({role + "master": "", role + "control-plane": ""}, "master"),
        "infra-0": ({role + "infra": "", role + "worker": ""}, "infra"),
        "gpu-0": ({role + "worker": "", "example.com/accelerator": "nvidia"}, "gpu"),
    }
    config = ControllerConfig(
        workers=2, backoff=FAST_BACKOFF, observe_machineconfignodes=True, pool_status_interval=0.2
    )

    def machines(name: str) -> int | None:
        return (nodepool(cluster, name).get("status") or {}).get("machineCount")

    with run_controller(cluster, config=config):
        for name, (labels, _) in nodes.items():
            SimulatedNode(cluster, name, labels=labels).register()
        for pool, count in (("master", 1), ("infra", 1), ("worker", 1)):
            wait_for(lambda p=pool, c=count: machines(p) == c, what=f"the NodePool {pool}")
        assert nodepool(cluster, "control-plane") == {}

        mcos = {name: PlayedMCO(cluster, name, pool, CONFIG) for name, (_, pool) in nodes.items()}
        wait_for(lambda: machines("gpu") == 1, what="gpu-0 in the pool its MachineConfigNode names")
        wait_for(lambda: nodepool(cluster, "worker") == {}, what="the worker NodePool, emptied")
        assert (machines("master"), machines("infra")) == (1, 1)

        PlayedPool(cluster, "master", CONFIG).recount([mcos["cp-0"]])

        def shown() -> dict[str, Any]:
            status = nodepool(cluster, "master").get("status") or {}
            return dict(status.get("machineConfigPool") or {})

        wait_for(lambda: shown().get("machineCount") == 1, what="the master pool's counts")
        wait_for(
            lambda: sources_agree(cluster, "master").get("status") == "True",
            what="the master MachineConfigPool compared with its Nodes",
        )
        assert (shown()["name"], shown()["updatedMachineCount"]) == ("master", 1)
