"""The pods of cordoned nodes, on both backends: the first nodes each with a watch of
their own, those beyond sharing one watch of every scheduled pod that keeps only theirs
(cut down), with the same answers; the shared watch ends with its last node."""

from __future__ import annotations

import threading
from collections import Counter

from state_controller.cluster.interface import Cluster
from state_controller.runtime.nodes.cordoned_pods import Drains
from state_controller.simulation.nodes import SimulatedNode
from testbed.scenarios import NS, allow_pods
from testbed.waiting import wait_for


def shared_watch_running() -> bool:
    return any(t.name == "node-pods" and t.is_alive() for t in threading.enumerate())


def test_nodes_beyond_the_own_watches_share_one_and_answer_the_same(cluster: Cluster) -> None:
    allow_pods(cluster)
    told: Counter[str] = Counter()
    nodes = [SimulatedNode(cluster, f"rack-{i}") for i in range(3)]
    other = SimulatedNode(cluster, "not-cordoned")
    for node in nodes:
        for j in range(2):
            node.run_pod(NS, f"{node.name}-app-{j}", {"app": "web"})
    other.run_pod(NS, "elsewhere", {"app": "web"})
    drains = Drains(cluster, lambda node: told.update([node]), per_node_watches=1)
    try:
        for node in nodes:
            drains.follow(node.name, True)
        assert drains.watched() == ["rack-0", "rack-1", "rack-2"]
        wait_for(lambda: shared_watch_running(), what="the shared watch started")

        def left(node: str) -> int | None:
            status = drains.status(node)
            return status.pods_left if status.known else None

        wait_for(lambda: [left(n.name) for n in nodes] == [2, 2, 2], what="every node listed")
        assert drains.synced() == 3
        # the same pods, cut down, whichever watch holds them
        own = sorted(p["metadata"]["name"] for p in drains.evictable("rack-0"))
        shared = sorted(p["metadata"]["name"] for p in drains.evictable("rack-2"))
        assert own == ["rack-0-app-0", "rack-0-app-1"]
        assert shared == ["rack-2-app-0", "rack-2-app-1"]
        (pod,) = [p for p in drains.evictable("rack-2") if p["metadata"]["name"].endswith("-0")]
        assert set(pod["metadata"]) <= {"name", "namespace", "creationTimestamp", "labels"}

        # what changes on a shared node is told, and only for it
        before = dict(told)
        nodes[2].evict(NS, "rack-2-app-0")
        wait_for(lambda: left("rack-2") == 1, what="an eviction on a shared node seen")
        nodes[1].run_pod(NS, "rack-1-app-2", {"app": "web"})
        wait_for(lambda: left("rack-1") == 3, what="a new pod on a shared node seen")
        other.evict(NS, "elsewhere")
        nodes[2].run_pod(NS, "rack-2-app-9", {"app": "web"})  # after the eviction elsewhere
        wait_for(lambda: left("rack-2") == 2, what="the last change seen")
        assert told["not-cordoned"] == 0
        assert told["rack-2"] > before.get("rack-2", 0)

        # uncordoned: forgotten; the shared watch ends with its last node
        drains.follow("rack-1", False)
        assert drains.watched() == ["rack-0", "rack-2"]
        assert shared_watch_running()
        drains.follow("rack-2", False)
        assert drains.watched() == ["rack-0"] and not drains.status("rack-2").known
        wait_for(lambda: not shared_watch_running(), what="the shared watch stopped")
        # cordoned again: listed afresh
        drains.follow("rack-2", True)
        wait_for(lambda: left("rack-2") == 2, what="rack-2 listed again")
    finally:
        drains.stop()
    assert not shared_watch_running()
