"""Pods watched only for cordoned nodes, never cached cluster-wide.

A cluster-wide pod informer would cost a cached copy of every pod (tens of
thousands, 5 to 20 KB each) and an event for every pod change anywhere, to learn
about the few nodes that drain at a time. Here the first :data:`PER_NODE_WATCHES`
cordoned nodes get one pod watch each, ``fieldSelector=spec.nodeName=<node>``, from
the moment they are cordoned until they are uncordoned (or gone), and only their pods
are cached. Nodes cordoned beyond those share one watch of every scheduled pod
(:mod:`.shared_pod_watch`), which keeps only their pods, cut down: a watch per node costs a
thread and a connection each, which a fleet-wide cordon of 1,000 nodes turned into
1,000 threads and 134 MB. PodDisruptionBudgets are few (about one per application) and
cached in one watch, started with the first cordon. Each pod or budget change queues
the books of the nodes it may hold (``on_change`` with the node's name).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ...api.objects import Obj
from ...cluster.interface import PDBS, PODS, Cluster
from ...updates.adapters import DrainStatus
from ...updates.drain import drain_status, evictable
from ..machinery.informer import Informer
from .shared_pod_watch import NodePods

PER_NODE_WATCHES = 16  # cordoned nodes watched each on its own; the rest share one watch


class Drains:
    def __init__(
        self,
        cluster: Cluster,
        on_change: Callable[[str], None],
        *,
        per_node_watches: int = PER_NODE_WATCHES,
    ) -> None:
        self.cluster = cluster
        self.on_change = on_change
        self.per_node_watches = per_node_watches
        self._lock = threading.Lock()
        self._pods: dict[str, Informer] = {}  # node -> its pods, one watch each
        self._shared: NodePods | None = None  # the nodes beyond those: one watch
        self._budgets: Informer | None = None
        self._stopped = False

    def follow(self, node: str, cordoned: bool) -> None:
        """Watch the pods of a node while it is cordoned (called on each Node change)."""
        with self._lock:
            if self._stopped:
                return
            if cordoned:
                self._start(node)
                return
            ended = self._end(node)
        if ended is not None:
            ended.stop(wait=False)  # called from a reconcile: never wait for its thread

    def _start(self, node: str) -> None:
        """Begin to watch a node's pods (under the lock)."""
        shared = self._shared
        if node in self._pods or (shared is not None and shared.follows(node)):
            return
        if self._budgets is None:
            self._budgets = Informer(
                self.cluster,
                PDBS,
                None,
                handlers=[self._on_budget],
                on_synced=self._on_budgets_synced,
            )
            self._budgets.start()
        if len(self._pods) >= self.per_node_watches:
            if shared is None:
                shared = self._shared = NodePods(self.cluster, self.on_change)
            shared.follow(node)
            return
        watching = Informer(
            self.cluster,
            PODS,
            None,
            handlers=[lambda _key, _pod: self.on_change(node)],
            field_selector=f"spec.nodeName={node}",
            on_synced=lambda: self.on_change(node),  # none left is news too
        )
        self._pods[node] = watching
        watching.start()

    def _end(self, node: str) -> Informer | NodePods | None:
        """Stop following a node (under the lock): the watch to stop, if none is left."""
        watching = self._pods.pop(node, None)
        if watching is not None:
            return watching
        shared = self._shared
        if shared is None or not shared.follows(node):
            return None
        shared.unfollow(node)
        if shared.followed():
            return None
        self._shared = None  # the last one: no watch of every pod left
        return shared

    def _listed(self, node: str) -> list[Obj] | None:
        """The pods of a followed node, or None until they are listed."""
        with self._lock:
            pods, shared = self._pods.get(node), self._shared
        if pods is not None:
            return pods.items() if pods.wait_synced(0) else None
        return shared.items(node) if shared is not None else None

    def status(self, node: str) -> DrainStatus:
        """How far the node's drain is; ``known`` only once its pods and budgets are listed."""
        pods, budgets = self._listed(node), self._budgets
        if pods is None or budgets is None or not budgets.wait_synced(0):
            return DrainStatus()
        return drain_status(pods, budgets.items())

    def evictable(self, node: str) -> list[Obj]:
        """The pods of a watched node that a drain evicts (none until they are listed)."""
        return [pod for pod in self._listed(node) or [] if evictable(pod)]

    def watched(self) -> list[str]:
        with self._lock:
            shared = self._shared.followed() if self._shared is not None else []
            return sorted([*self._pods, *shared])

    def synced(self) -> int:
        """How many of the followed nodes have their pods listed."""
        return sum(1 for node in self.watched() if self._listed(node) is not None)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            informers = list(self._pods.values())
            if self._budgets is not None:
                informers.append(self._budgets)
            self._pods.clear()
            shared, self._shared = self._shared, None
        for informer in informers:
            informer.stop()
        if shared is not None:
            shared.stop()

    def _on_budget(self, _key: str, _budget: Obj | None) -> None:
        self._on_budgets_synced()

    def _on_budgets_synced(self) -> None:
        for node in self.watched():
            self.on_change(node)
