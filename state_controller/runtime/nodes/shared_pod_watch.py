"""The pods of many cordoned nodes, through one cluster-wide pod watch.

One pod watch per cordoned node (``fieldSelector=spec.nodeName=<node>``) is cheapest
for the API server while few nodes drain, and :class:`~.cordoned_pods.Drains` uses it for the
first :data:`~.cordoned_pods.PER_NODE_WATCHES`. It costs a thread and a connection each:
measured on a fleet-wide cordon of 1,000 nodes, 1,000 threads and 134 MB. Beyond
those, the nodes share this one watch of every scheduled pod
(``spec.nodeName!=``), which keeps only the pods of the nodes it follows, each cut to
what a drain reads (:func:`~..updates.drain.compact_pod`).

It never lists every pod: it starts watching from the resourceVersion of an empty
list (one that matches no pod), and lists the pods of each node once, when it begins
to follow it, on one of two lister threads. An event for a pod of a node not (yet)
followed is dropped: the node is followed before its list begins, so whatever such an
event said, the list tells. A watch that expires (410 Gone) starts again from a fresh
resourceVersion and lists every followed node again; until then their pods are
unknown (:meth:`NodePods.items` says None), as a drain must not count on pods an
expired watch may have missed the deletion of.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ...api.objects import Obj
from ...cluster.interface import PODS, Cluster, Gone, Watch
from ...updates.drain import compact_pod
from ..machinery.outages import log_failure

log = logging.getLogger(__name__)

SCHEDULED = "spec.nodeName!="  # every pod bound to a node
NO_POD = "hoststate.io/matches-no-pod=x"  # a list that finds nothing: its version alone
LISTERS = 2  # threads listing the pods of newly followed nodes
Seen = tuple[str, int, Obj]  # a pod as kept: its key, resourceVersion, and the pod cut down


def _version(pod: Obj) -> int:
    try:
        return int(pod["metadata"].get("resourceVersion") or 0)
    except ValueError:
        return 0


class NodePods:
    def __init__(
        self, cluster: Cluster, on_change: Callable[[str], None], *, relist_delay: float = 1.0
    ) -> None:
        self.cluster = cluster
        self.on_change = on_change
        self.relist_delay = relist_delay
        self._lock = threading.Lock()
        # node -> pod key -> (resourceVersion, the pod cut down); None until listed
        self._pods: dict[str, dict[str, tuple[int, Obj]] | None] = {}
        self._aside: dict[str, list[tuple[str, Seen]]] = {}  # events while a node is listed
        self._listers = ThreadPoolExecutor(LISTERS, thread_name_prefix="node-pods-list")
        self._thread: threading.Thread | None = None
        self._watch: Watch | None = None
        self._stopping = threading.Event()
        self.relists = 0

    # -- following ----------------------------------------------------------------------

    def follow(self, node: str) -> None:
        with self._lock:
            if node in self._pods or self._stopping.is_set():
                return
            self._pods[node] = None
            self._aside[node] = []
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="node-pods", daemon=True)
                self._thread.start()
        self._listers.submit(self._list, node)

    def unfollow(self, node: str) -> None:
        with self._lock:
            self._pods.pop(node, None)
            self._aside.pop(node, None)

    def follows(self, node: str) -> bool:
        with self._lock:
            return node in self._pods

    def followed(self) -> list[str]:
        with self._lock:
            return sorted(self._pods)

    def items(self, node: str) -> list[Obj] | None:
        """The node's pods (cut down), or None until they have been listed."""
        with self._lock:
            pods = self._pods.get(node)
            return None if pods is None else [pod for _, pod in pods.values()]

    def stop(self, wait: bool = True) -> None:
        """Stop watching; with ``wait``, until the watch's thread has ended."""
        self._stopping.set()
        with self._lock:
            watch, thread = self._watch, self._thread
        if watch is not None:
            watch.stop()
        self._listers.shutdown(wait=False, cancel_futures=True)
        if wait and thread is not None:
            thread.join(timeout=5)

    # -- listing and watching -----------------------------------------------------------

    def _list(self, node: str) -> None:
        while not self._stopping.is_set():
            try:
                items, _ = self.cluster.list(PODS, None, f"spec.nodeName={node}")
            except Exception as err:
                log_failure(log, err, "listing the pods of node %s failed; retrying", node)
                self._stopping.wait(self.relist_delay)
                continue
            with self._lock:
                if node not in self._pods:
                    return  # unfollowed meanwhile
                known: dict[str, tuple[int, Obj]] = {}
                for pod in items:
                    _apply(known, "ADDED", _seen(pod))
                for kind, seen in self._aside.pop(node, []):
                    _apply(known, kind, seen)
                self._pods[node] = known
            self.on_change(node)
            return

    def _run(self) -> None:
        version = ""
        while not self._stopping.is_set():
            try:
                if not version:
                    version = self._start_version()
                version = self._follow(version)
            except Gone:
                log.info("the watch of the cordoned nodes' pods expired; listing them again")
                version = ""
                for node in self._forget_all():
                    self._listers.submit(self._list, node)
            except Exception as err:
                if self._stopping.is_set():
                    return
                log_failure(log, err, "watch of the cordoned nodes' pods failed; retrying")
                self._stopping.wait(self.relist_delay)

    def _forget_all(self) -> list[str]:
        """Every followed node back to not listed: what the expired watch missed (a pod
        deleted meanwhile) only a new list can tell, so the node's pods are unknown until
        it has been listed again, and the new watch's events wait for that list."""
        with self._lock:
            for node in self._pods:
                self._pods[node] = None
                self._aside[node] = []
            return sorted(self._pods)

    def _start_version(self) -> str:
        _, version = self.cluster.list(PODS, None, label_selector=NO_POD)
        return version

    def _follow(self, version: str) -> str:
        watch = self.cluster.watch(PODS, None, resource_version=version, field_selector=SCHEDULED)
        with self._lock:
            self._watch = watch
        if self._stopping.is_set():
            watch.stop()
        for event in watch:
            pod = event.object
            meta = pod.get("metadata") or {}
            version = meta.get("resourceVersion", version)
            if event.type == "BOOKMARK":
                continue
            node = (pod.get("spec") or {}).get("nodeName") or ""
            with self._lock:
                if node not in self._pods:
                    continue  # a node not followed
                pods = self._pods[node]
                if pods is None:  # its list is under way: applied after it
                    self._aside[node].append((event.type, _seen(pod)))
                    continue
                changed = _apply(pods, event.type, _seen(pod))
            if changed:
                self.on_change(node)
        return version


def _apply(pods: dict[str, tuple[int, Obj]], kind: str, seen: Seen) -> bool:
    """One event (or listed pod) into a node's pods, the newest version winning; whether
    anything changed."""
    key, version, cut = seen
    known = pods.get(key)
    if kind == "DELETED":
        if known is None or known[0] > version:
            return False
        del pods[key]
        return True
    if known is not None and known[0] >= version:
        return False  # what is kept is as new
    pods[key] = (version, cut)
    return True


def _seen(pod: Obj) -> Seen:
    """A pod as kept: its key, its resourceVersion, cut down."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}", _version(pod), compact_pod(pod)
