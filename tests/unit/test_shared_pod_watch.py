"""One watch of every scheduled pod for many cordoned nodes
(runtime/nodes/shared_pod_watch.py, class NodePods): it never lists every pod, only each
followed node's, once; it keeps only the followed nodes' pods, cut down, and tells only
their changes; a change that arrives while a node's pods are being listed is not lost;
a watch that expires (410 Gone) lists every followed node again."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from state_controller.api.objects import Obj
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import PODS, Gone, Resource, WatchEvent
from state_controller.runtime.nodes.shared_pod_watch import NO_POD, NodePods
from state_controller.simulation.nodes import SimulatedNode
from testbed.scenarios import NS, allow_pods
from testbed.waiting import wait_for


class Staged(EmbeddedCluster):
    """The embedded store, with what NodePods asks of it recorded, and two holds a test
    can put on it: a node's pod list answered only when released, and the next pod watch
    answered, when released, with 410 Gone."""

    def __init__(self) -> None:
        super().__init__()
        self.lists: list[tuple[str, str]] = []  # (field selector, label selector) of pod lists
        self.hold_list_of = ""  # a node whose pod list waits for release_list
        self.list_held = threading.Event()
        self.release_list = threading.Event()
        self.processed: list[str] = []  # pods whose watch events NodePods has dealt with
        self.gone_next = False
        self.watch_held = threading.Event()
        self.release_watch = threading.Event()
        self.watches: list[Any] = []

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        field_selector: str = "",
        label_selector: str = "",
        metadata_only: bool = False,
    ) -> tuple[list[Obj], str]:
        answer = super().list(resource, namespace, field_selector, label_selector, metadata_only)
        if resource == PODS:
            self.lists.append((field_selector, label_selector))
            if self.hold_list_of and field_selector == f"spec.nodeName={self.hold_list_of}":
                self.list_held.set()
                assert self.release_list.wait(15), "the held list was never released"
        return answer

    def watch(self, resource: Resource, *args: Any, **kwargs: Any) -> Any:
        if resource == PODS and self.gone_next:
            self.gone_next = False
            self.watch_held.set()
            assert self.release_watch.wait(15), "the held watch was never released"
            raise Gone("too old resource version")
        inner = super().watch(resource, *args, **kwargs)
        self.watches.append(inner)
        return Recorded(inner, self.processed) if resource == PODS else inner


class Recorded:
    """A watch that notes each pod's event once the reader has dealt with it (it asks
    for the next one only then)."""

    def __init__(self, inner: Any, processed: list[str]) -> None:
        self.inner = inner
        self.processed = processed

    def __iter__(self) -> Iterator[WatchEvent]:
        for event in self.inner:
            yield event
            self.processed.append(str(event.object["metadata"].get("name")))

    def stop(self) -> None:
        self.inner.stop()


class Told:
    def __init__(self) -> None:
        self.nodes: list[str] = []

    def __call__(self, node: str) -> None:
        self.nodes.append(node)


@pytest.fixture
def cluster() -> Iterator[Staged]:
    store = Staged()
    allow_pods(store)
    yield store
    store.release_list.set()
    store.release_watch.set()
    store.close()


@pytest.fixture
def told() -> Told:
    return Told()


@pytest.fixture
def pods(cluster: Staged, told: Told) -> Iterator[NodePods]:
    watching = NodePods(cluster, told, relist_delay=0.05)
    yield watching
    watching.stop()


def node(cluster: Staged, name: str, *pod_names: str) -> SimulatedNode:
    made = SimulatedNode(cluster, name)
    made.register()
    for pod in pod_names:
        made.run_pod(NS, pod, {"app": "web"})
    return made


def names(pods: NodePods, node: str) -> list[str] | None:
    listed = pods.items(node)
    return None if listed is None else sorted(p["metadata"]["name"] for p in listed)


def test_only_the_followed_nodes_pods_are_listed_and_kept_cut_down(
    cluster: Staged, pods: NodePods, told: Told
) -> None:
    node(cluster, "sp-1", "a-0", "a-1")
    other = node(cluster, "sp-2", "b-0")
    assert pods.items("sp-1") is None  # not followed: nothing, not an empty list

    pods.follow("sp-1")
    pods.follow("sp-1")  # followed once, listed once
    wait_for(lambda: names(pods, "sp-1") == ["a-0", "a-1"], what="sp-1 listed")

    assert sorted(cluster.lists) == [("", NO_POD), ("spec.nodeName=sp-1", "")]
    assert pods.followed() == ["sp-1"] and pods.items("sp-2") is None
    kept = (pods.items("sp-1") or [])[0]
    assert kept["spec"] == {"nodeName": "sp-1"}  # cut to what a drain reads: no containers
    assert "uid" not in kept["metadata"] and "resourceVersion" not in kept["metadata"]
    assert "sp-1" in told.nodes

    other.run_pod(NS, "b-1", {"app": "web"})  # on a node not followed: dropped
    wait_for(lambda: "b-1" in cluster.processed, what="the other node's pod event read")
    assert pods.items("sp-2") is None and "sp-2" not in told.nodes


def test_changes_on_a_followed_node_are_told_and_kept(
    cluster: Staged, pods: NodePods, told: Told
) -> None:
    followed = node(cluster, "sp-1", "a-0")
    pods.follow("sp-1")
    wait_for(lambda: names(pods, "sp-1") == ["a-0"], what="sp-1 listed")
    told.nodes.clear()

    followed.run_pod(NS, "a-1", {"app": "web"})
    wait_for(lambda: names(pods, "sp-1") == ["a-0", "a-1"], what="the new pod kept")
    followed.evict(NS, "a-0")
    wait_for(lambda: names(pods, "sp-1") == ["a-1"], what="the evicted pod dropped")
    assert told.nodes.count("sp-1") >= 2

    pods.unfollow("sp-1")
    assert pods.items("sp-1") is None and pods.followed() == []


def test_a_change_while_the_node_is_being_listed_is_not_lost(
    cluster: Staged, pods: NodePods
) -> None:
    followed = node(cluster, "sp-1", "a-0", "a-1")
    cluster.hold_list_of = "sp-1"
    pods.follow("sp-1")
    assert cluster.list_held.wait(15)  # its list read the store: a-0 and a-1, no a-2

    followed.run_pod(NS, "a-2", {"app": "web"})
    followed.evict(NS, "a-0")
    wait_for(lambda: "a-0" in cluster.processed, what="the changes dealt with while listing")
    assert pods.items("sp-1") is None  # still being listed

    cluster.release_list.set()

    wait_for(lambda: names(pods, "sp-1") is not None, what="sp-1 listed")
    assert names(pods, "sp-1") == ["a-1", "a-2"]


def expire_the_watch(cluster: Staged, meanwhile: Callable[[], None]) -> None:
    """End the running pod watch as a server does and refuse its resumption (410 Gone),
    doing ``meanwhile`` while no watch runs (only a list can then tell it)."""
    wait_for(lambda: cluster.watches, what="the watch begun")
    cluster.gone_next = True
    cluster.watches[-1].stop()
    assert cluster.watch_held.wait(15)
    meanwhile()
    cluster.release_watch.set()


def test_an_expired_watch_lists_every_followed_node_again(cluster: Staged, pods: NodePods) -> None:
    first = node(cluster, "sp-1", "a-0")
    second = node(cluster, "sp-2", "b-0")
    for name in ("sp-1", "sp-2"):
        pods.follow(name)
    wait_for(lambda: names(pods, "sp-1") == ["a-0"], what="sp-1 listed")
    wait_for(lambda: names(pods, "sp-2") == ["b-0"], what="sp-2 listed")

    def meanwhile() -> None:
        first.run_pod(NS, "a-1", {"app": "web"})
        second.run_pod(NS, "b-1", {"app": "web"})

    expire_the_watch(cluster, meanwhile)

    wait_for(lambda: names(pods, "sp-1") == ["a-0", "a-1"], what="sp-1 listed again")
    wait_for(lambda: names(pods, "sp-2") == ["b-0", "b-1"], what="sp-2 listed again")
    per_node = [selector for selector, _ in cluster.lists if selector]
    assert sorted(per_node) == ["spec.nodeName=sp-1"] * 2 + ["spec.nodeName=sp-2"] * 2


def test_a_pod_deleted_while_the_watch_was_away_is_dropped_by_the_new_list(
    cluster: Staged, pods: NodePods, told: Told
) -> None:
    followed = node(cluster, "sp-1", "a-0", "a-1")
    pods.follow("sp-1")
    wait_for(lambda: names(pods, "sp-1") == ["a-0", "a-1"], what="sp-1 listed")
    before = len(told.nodes)

    expire_the_watch(cluster, lambda: followed.evict(NS, "a-0"))

    wait_for(lambda: len(told.nodes) > before, what="sp-1 listed again and told")
    assert names(pods, "sp-1") == ["a-1"]
