"""The pods of cordoned nodes (runtime/nodes/cordoned_pods.py, class Drains): a node's
drain is known only once its pods and the PodDisruptionBudgets are listed; a pod change
queues its node and no other, a budget change every followed node; an uncordoned node's
watch ends; once stopped, nothing more is watched. (How the nodes beyond the own
watches share one, on both backends: tests/scenarios/test_cordoned_pods_shared_watch.py.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.runtime.nodes.cordoned_pods import Drains
from state_controller.simulation.nodes import SimulatedNode, set_budget
from testbed.scenarios import NS, allow_pods
from testbed.waiting import wait_for


class Told:
    """The nodes ``on_change`` was called with, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: list[str] = []

    def __call__(self, node: str) -> None:
        with self._lock:
            self._nodes.append(node)

    def nodes(self) -> list[str]:
        with self._lock:
            return list(self._nodes)

    def clear(self) -> None:
        with self._lock:
            self._nodes.clear()


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    store = EmbeddedCluster()
    allow_pods(store)
    yield store
    store.close()


@pytest.fixture
def told() -> Told:
    return Told()


@pytest.fixture
def drains(cluster: EmbeddedCluster, told: Told) -> Iterator[Drains]:
    watching = Drains(cluster, told)
    yield watching
    watching.stop()


def node_with_pods(cluster: EmbeddedCluster, name: str, pods: int) -> SimulatedNode:
    node = SimulatedNode(cluster, name)
    node.register()
    for i in range(pods):
        node.run_pod(NS, f"{name}-app-{i}", {"app": name})
    return node


def pods_left(drains: Drains, node: str) -> int | None:
    status = drains.status(node)
    return status.pods_left if status.known else None


def watch_of(node: str) -> bool:
    """Whether the own pod watch of ``node`` is running."""
    name = f"informer-pods-spec.nodeName={node}"
    return any(t.name == name and t.is_alive() for t in threading.enumerate())


def test_a_node_not_followed_is_not_known(drains: Drains, cluster: EmbeddedCluster) -> None:
    node_with_pods(cluster, "np-quiet", 2)
    assert not drains.status("np-quiet").known
    assert drains.evictable("np-quiet") == []
    assert drains.watched() == [] and drains.synced() == 0


def test_a_pod_change_queues_its_node_and_no_other(
    drains: Drains, cluster: EmbeddedCluster, told: Told
) -> None:
    cordoned = node_with_pods(cluster, "np-cordoned", 2)
    other = node_with_pods(cluster, "np-other", 1)
    drains.follow("np-cordoned", True)
    wait_for(lambda: pods_left(drains, "np-cordoned") == 2, what="the cordoned node listed")
    assert "np-cordoned" in told.nodes()  # listed is news too
    assert drains.synced() == 1

    told.clear()
    other.run_pod(NS, "np-other-app-9", {"app": "np-other"})  # a node not followed
    cordoned.evict(NS, "np-cordoned-app-0")
    wait_for(lambda: pods_left(drains, "np-cordoned") == 1, what="the eviction seen")
    wait_for(lambda: "np-cordoned" in told.nodes(), what="the cordoned node queued")
    assert "np-other" not in told.nodes()
    assert [p["metadata"]["name"] for p in drains.evictable("np-cordoned")] == ["np-cordoned-app-1"]


def test_a_budget_change_queues_every_followed_node(
    drains: Drains, cluster: EmbeddedCluster, told: Told
) -> None:
    for name in ("np-a", "np-b"):
        node_with_pods(cluster, name, 1)
        drains.follow(name, True)
    wait_for(lambda: drains.synced() == 2, what="both nodes listed")
    wait_for(lambda: drains.status("np-a").known, what="the budgets listed")

    told.clear()
    set_budget(cluster, NS, "guard-a", {"app": "np-a"}, allowed=0)

    wait_for(lambda: {"np-a", "np-b"} <= set(told.nodes()), what="both nodes queued")
    wait_for(lambda: drains.status("np-a").blocked_by == f"{NS}/guard-a", what="np-a blocked")
    assert drains.status("np-b").blocked_by == ""  # the budget selects none of its pods


def test_an_uncordoned_node_is_forgotten_and_its_watch_ends(
    drains: Drains, cluster: EmbeddedCluster
) -> None:
    node_with_pods(cluster, "np-back", 1)
    drains.follow("np-back", True)
    drains.follow("np-back", True)  # each Node change says it again: one watch
    wait_for(lambda: pods_left(drains, "np-back") == 1, what="the node listed")
    assert watch_of("np-back")

    drains.follow("np-back", False)

    assert drains.watched() == [] and not drains.status("np-back").known
    wait_for(lambda: not watch_of("np-back"), what="the node's watch ended")


def test_once_stopped_nothing_more_is_watched(drains: Drains, cluster: EmbeddedCluster) -> None:
    node_with_pods(cluster, "np-first", 1)
    node_with_pods(cluster, "np-late", 1)
    drains.follow("np-first", True)
    wait_for(lambda: drains.synced() == 1, what="the node listed")

    drains.stop()
    drains.follow("np-late", True)  # a reconcile still under way at shutdown

    assert drains.watched() == []
    assert not watch_of("np-first") and not watch_of("np-late")
