"""An informer: a local cache of one resource, kept current by a watch.

It lists once, then watches from the list's resourceVersion; when the watch
ends it resumes from the last version seen, and when the server answers 410
Gone it lists again and reports the differences as events. Handlers run on
the informer's thread and must only enqueue work.

After the controller writes an object it puts the server's answer into the
cache (:meth:`Informer.mutate`), so the next reconcile never reads an older
copy than its own write, and the watch event of that write is recognised as
already known. This is client-go's mutation cache; like it, it relies on
resourceVersions being increasing integers, which holds for etcd and for the
embedded store.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ..cluster.interface import Cluster, Gone, Obj, Resource, Watch, object_key

log = logging.getLogger(__name__)

Handler = Callable[[str, Obj | None, Obj | None], None]  # (key, old, new); new None: deleted


def _rv(obj: Obj | None) -> int:
    try:
        return int((obj or {}).get("metadata", {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


@dataclass
class Informer:
    cluster: Cluster
    resource: Resource
    namespace: str | None = None
    handlers: list[Handler] = field(default_factory=list)
    relist_delay: float = 1.0

    def __post_init__(self) -> None:
        self._cache: dict[str, Obj] = {}
        self._lock = threading.Lock()
        self._synced = threading.Event()
        self._stopping = threading.Event()
        self._watch: Watch | None = None
        self._thread: threading.Thread | None = None
        self.relists = 0

    # -- reading ------------------------------------------------------------------------

    def get(self, key: str) -> Obj | None:
        return self._cache.get(key)

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._cache)

    def items(self) -> list[Obj]:
        with self._lock:
            return list(self._cache.values())

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    # -- writing through ----------------------------------------------------------------

    def mutate(self, obj: Obj) -> None:
        """Take the server's answer to our own write, unless the cache already has newer."""
        key = object_key(obj)
        with self._lock:
            if _rv(obj) > _rv(self._cache.get(key)):
                self._cache[key] = obj

    def forget(self, key: str) -> None:
        with self._lock:
            self._cache.pop(key, None)

    # -- running ------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"informer-{self.resource.plural}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._watch is not None:
            self._watch.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        version = ""
        while not self._stopping.is_set():
            try:
                if not version:
                    version = self._relist()
                version = self._follow(version)
            except Gone:
                log.info("watch of %s expired; listing again", self.resource)
                version = ""
            except Exception:
                if self._stopping.is_set():
                    return
                log.exception("watch of %s failed; retrying", self.resource)
                self._stopping.wait(self.relist_delay)

    def _relist(self) -> str:
        items, version = self.cluster.list(self.resource, self.namespace)
        fresh = {object_key(o): o for o in items}
        with self._lock:
            old = self._cache
            self._cache = fresh
        self.relists += 1
        for key, obj in fresh.items():
            before = old.get(key)
            if before is None or _rv(before) != _rv(obj):
                self._dispatch(key, before, obj)
        for key, obj in old.items():
            if key not in fresh:
                self._dispatch(key, obj, None)
        self._synced.set()
        return version

    def _follow(self, version: str) -> str:
        watch = self.cluster.watch(self.resource, self.namespace, resource_version=version)
        self._watch = watch
        if self._stopping.is_set():
            watch.stop()
        for event in watch:
            obj = event.object
            if event.type == "BOOKMARK":
                version = obj.get("metadata", {}).get("resourceVersion", version)
                continue
            key = object_key(obj)
            version = obj["metadata"].get("resourceVersion", version)
            with self._lock:
                before = self._cache.get(key)
                if event.type == "DELETED":
                    self._cache.pop(key, None)
                elif _rv(obj) > _rv(before):
                    self._cache[key] = obj
                else:
                    continue  # our own write, already in the cache
            self._dispatch(key, before, None if event.type == "DELETED" else obj)
        return version

    def _dispatch(self, key: str, old: Obj | None, new: Obj | None) -> None:
        for handler in self.handlers:
            try:
                handler(key, old, new)
            except Exception:
                log.exception("handler for %s %s failed", self.resource, key)
