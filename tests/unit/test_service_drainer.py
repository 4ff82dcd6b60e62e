"""A serviced host's Node drained and uncordoned (runtime/servicing/drainer.py): the
cordon is marked as servicing's, every pod a drain moves is evicted (a budget that
allows no disruption holds the drain and is named), the drain is done only once no pod
is left, and uncordoning undoes only a cordon servicing made, never a person's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from state_controller.api.objects import Obj
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import NODES, PODS, Cluster
from state_controller.runtime.nodes.cordoned_pods import Drains
from state_controller.runtime.servicing.drainer import SERVICING, ServiceDrainer
from state_controller.simulation.nodes import SimulatedNode, set_budget
from state_controller.updates.adapters import DrainStatus
from state_controller.updates.signals import CORDONED_FOR, NodeSignals, node_signals
from testbed.scenarios import NS, allow_pods
from testbed.waiting import wait_for


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    store = EmbeddedCluster()
    allow_pods(store)
    yield store
    store.close()


@pytest.fixture
def drains(cluster: EmbeddedCluster) -> Iterator[Drains]:
    watching = Drains(cluster, lambda _node: None)
    yield watching
    watching.stop()


def signals(cluster: Cluster, name: str) -> NodeSignals:
    return node_signals(cluster.get(NODES, None, name))


def pods_on(cluster: Cluster, node: str) -> list[str]:
    return sorted(
        pod["metadata"]["name"]
        for pod in cluster.list(PODS, NS)[0]
        if pod["spec"].get("nodeName") == node
    )


def drain_until_done(drainer: ServiceDrainer, cluster: Cluster, node: str) -> str:
    """Drain as reconciles of the host do, again and again, until it says done; its
    last message."""
    said: list[str] = []

    def done() -> bool:
        finished, message = drainer.drain(signals(cluster, node))
        said.append(message)
        return finished

    wait_for(done, what=f"the drain of {node} done")
    return said[-1]


def test_a_drain_cordons_for_servicing_evicts_every_pod_and_is_done_when_none_is_left(
    cluster: EmbeddedCluster, drains: Drains
) -> None:
    node = SimulatedNode(cluster, "rack-1")
    node.register()
    other = SimulatedNode(cluster, "rack-2")
    other.register()
    for i in range(3):
        node.run_pod(NS, f"app-{i}", {"app": "web"})
    other.run_pod(NS, "elsewhere", {"app": "web"})
    drainer = ServiceDrainer(cluster, drains)

    drainer.drain(signals(cluster, "rack-1"))
    written = cluster.get(NODES, None, "rack-1")
    assert written["spec"]["unschedulable"] is True
    assert written["metadata"]["annotations"][CORDONED_FOR] == SERVICING
    assert drains.watched() == ["rack-1"]

    assert drain_until_done(drainer, cluster, "rack-1") == "draining: 0 pods left"
    assert pods_on(cluster, "rack-1") == []
    assert pods_on(cluster, "rack-2") == ["elsewhere"]  # another node's pods are not its


class NotListed(Drains):
    """Pods followed but never listed: what a drain knows before its watch has listed."""

    def status(self, node: str) -> DrainStatus:
        return DrainStatus()

    def evictable(self, node: str) -> list[Obj]:
        return []


def test_a_drain_whose_pods_are_not_counted_yet_is_not_done(cluster: EmbeddedCluster) -> None:
    node = SimulatedNode(cluster, "rack-1")
    node.register()
    not_listed = NotListed(cluster, lambda _node: None)
    try:
        finished, message = ServiceDrainer(cluster, not_listed).drain(signals(cluster, "rack-1"))
    finally:
        not_listed.stop()
    assert not finished
    assert message == "draining: counting the pods an eviction would move"


def test_a_budget_that_allows_no_disruption_holds_the_drain_and_is_named(
    cluster: EmbeddedCluster, drains: Drains
) -> None:
    node = SimulatedNode(cluster, "rack-1")
    node.register()
    node.run_pod(NS, "db-0", {"app": "db"})
    node.run_pod(NS, "web-0", {"app": "web"})
    set_budget(cluster, NS, "db", {"app": "db"}, allowed=0)
    drainer = ServiceDrainer(cluster, drains)

    def blocked() -> str:
        finished, message = drainer.drain(signals(cluster, "rack-1"))
        assert not finished
        return message if "1 pod left" in message else ""

    message = wait_for(blocked, what="the drain held with one pod left")
    assert f"PodDisruptionBudget {NS}/db" in message
    assert pods_on(cluster, "rack-1") == ["db-0"]

    set_budget(cluster, NS, "db", {"app": "db"}, allowed=1)
    assert drain_until_done(drainer, cluster, "rack-1") == "draining: 0 pods left"


def test_uncordon_undoes_the_servicing_cordon_and_only_that(
    cluster: EmbeddedCluster, drains: Drains
) -> None:
    ours = SimulatedNode(cluster, "rack-1")
    ours.register()
    persons = SimulatedNode(cluster, "rack-2")
    persons.register()
    persons.cordon()  # a person's cordon: no servicing mark
    drainer = ServiceDrainer(cluster, drains)
    drainer.drain(signals(cluster, "rack-1"))

    drainer.uncordon(signals(cluster, "rack-1"))
    drainer.uncordon(signals(cluster, "rack-2"))

    undone = cluster.get(NODES, None, "rack-1")
    assert not undone["spec"].get("unschedulable")
    assert CORDONED_FOR not in (undone["metadata"].get("annotations") or {})
    assert cluster.get(NODES, None, "rack-2")["spec"]["unschedulable"] is True


def test_uncordon_of_a_node_gone_meanwhile_is_no_error(
    cluster: EmbeddedCluster, drains: Drains
) -> None:
    node = SimulatedNode(cluster, "rack-1")
    node.register()
    drainer = ServiceDrainer(cluster, drains)
    drainer.drain(signals(cluster, "rack-1"))
    last_seen = signals(cluster, "rack-1")  # still marked as servicing's
    node.delete()

    drainer.uncordon(last_seen)  # raises nothing

    assert cluster.list(NODES, None)[0] == []
