"""Pods watched only for cordoned nodes, never cluster-wide.

A cluster-wide pod informer would cost a cached copy of every pod (tens of
thousands, 5 to 20 KB each) and an event for every pod change anywhere, to learn
about the few nodes that drain at a time. Here a node gets one pod watch,
``fieldSelector=spec.nodeName=<node>``, from the moment it is cordoned until it
is uncordoned (or gone), and only its pods are cached. PodDisruptionBudgets are
few (about one per application) and cached in one watch, started with the
first cordon. Each pod or budget change queues the books of the nodes it may
hold (``on_change`` with the node's name).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..api.objects import Obj
from ..cluster.interface import PDBS, PODS, Cluster
from ..updates.adapters import DrainStatus
from ..updates.drain import drain_status, evictable
from .informer import Informer


class Drains:
    def __init__(self, cluster: Cluster, on_change: Callable[[str], None]) -> None:
        self.cluster = cluster
        self.on_change = on_change
        self._lock = threading.Lock()
        self._pods: dict[str, Informer] = {}  # node -> its pods
        self._budgets: Informer | None = None
        self._stopped = False

    def follow(self, node: str, cordoned: bool) -> None:
        """Watch the pods of a node while it is cordoned (called on each Node change)."""
        with self._lock:
            if self._stopped:
                return
            watching = self._pods.get(node)
            if cordoned and watching is None:
                if self._budgets is None:
                    self._budgets = Informer(
                        self.cluster,
                        PDBS,
                        None,
                        handlers=[self._on_budget],
                        on_synced=self._on_budgets_synced,
                    )
                    self._budgets.start()
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
                return
            if cordoned or watching is None:
                return
            del self._pods[node]
        watching.stop(wait=False)  # called from a reconcile: never wait for its thread

    def status(self, node: str) -> DrainStatus:
        """How far the node's drain is; ``known`` only once its pods and budgets are listed."""
        with self._lock:
            pods, budgets = self._pods.get(node), self._budgets
        if pods is None or budgets is None:
            return DrainStatus()
        if not (pods.wait_synced(0) and budgets.wait_synced(0)):
            return DrainStatus()
        return drain_status(pods.items(), budgets.items())

    def evictable(self, node: str) -> list[Obj]:
        """The pods of a watched node that a drain evicts (none until they are listed)."""
        with self._lock:
            pods = self._pods.get(node)
        if pods is None or not pods.wait_synced(0):
            return []
        return [pod for pod in pods.items() if evictable(pod)]

    def watched(self) -> list[str]:
        with self._lock:
            return sorted(self._pods)

    def synced(self) -> int:
        """How many of the pod watches have listed their node's pods."""
        with self._lock:
            informers = list(self._pods.values())
        return sum(1 for informer in informers if informer.wait_synced(0))

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            informers = list(self._pods.values())
            if self._budgets is not None:
                informers.append(self._budgets)
            self._pods.clear()
        for informer in informers:
            informer.stop()

    def _on_budget(self, _key: str, _budget: Obj | None) -> None:
        self._on_budgets_synced()

    def _on_budgets_synced(self) -> None:
        for node in self.watched():
            self.on_change(node)
