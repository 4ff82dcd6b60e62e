"""An informer: a local cache of one resource, kept current by a watch.

It lists once, then watches from the list's resourceVersion; when the watch
ends it resumes from the last version seen, and when the server answers 410
Gone it lists again and reports the differences as events. Handlers run on
the informer's thread and must only enqueue work.

Objects are kept as compressed JSON and parsed on each read (so a read always
returns a private copy): a parsed HostState takes about five times the memory of
its JSON. Before it is kept, an object loses its ``metadata.managedFields`` (the
API server's record of who set which field, which nothing here reads: 40% of a
Host's or HostState's JSON, as controller-runtime's TransformStripManagedFields
drops it too), and is deflated (zlib, level 1) with a preset dictionary, the
largest object of the resource seen so far: the objects of one resource share most
of their text, so a settled Host of 5.9 KB (3.5 KB without managedFields) is kept in
about 350 bytes (HostStates alike). Measured on a real kube-apiserver: 25 µs to pack an object,
9 µs to unpack one, against 120 MB of cache at 10,000 hosts. This, and the write-through
below, is why this is not the kubernetes client's ``SharedInformer``: that
one keeps every object parsed and cannot take the answers to our own writes;
with parsed caches peak RSS passed 450 MB at 5,000 hosts. The client's watch
stream is used underneath (cluster/kube.py).

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
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from ...api.objects import Obj
from ...cluster.interface import Cluster, Gone, Resource, Watch, object_key
from .outages import log_failure

log = logging.getLogger(__name__)

Handler = Callable[[str, Obj | None], None]  # (key, object); None: deleted


def _rv(obj: Obj | None) -> int:
    try:
        return int((obj or {}).get("metadata", {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


# (resourceVersion, JSON deflated with a preset dictionary, that dictionary)
_Entry = tuple[int, bytes, bytes]
ZDICT_MAX = 32 * 1024  # deflate reads no further back
DELETED_KEPT = 4096  # deletions remembered against late answers to our own writes


def _without_managed_fields(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


@dataclass
class Informer:
    cluster: Cluster
    resource: Resource
    namespace: str | None = None
    handlers: list[Handler] = field(default_factory=list)
    relist_delay: float = 1.0
    field_selector: str = ""  # e.g. the pods of one node: "spec.nodeName=worker-1"
    label_selector: str = ""  # e.g. the BMC Secrets: "hoststate.io/bmc-credentials=true"
    metadata_only: bool = False  # keep each object's metadata alone (PartialObjectMetadata)
    on_synced: Callable[[], None] | None = None  # after every full list (handlers saw changes)

    def __post_init__(self) -> None:
        self._cache: dict[str, _Entry] = {}
        # key -> the resourceVersion at which it was seen deleted, so that an answer to our
        # own write made before the deletion cannot bring the object back (bounded: such
        # an answer arrives within one reconcile of the deletion)
        self._deleted: dict[str, int] = {}
        self._lock = threading.Lock()
        self._zdict = b""  # the largest object's JSON so far: new entries' dictionary
        self._synced = threading.Event()
        self._stopping = threading.Event()
        self._watch: Watch | None = None
        self._thread: threading.Thread | None = None
        self.relists = 0

    # -- reading ------------------------------------------------------------------------

    def _entry(self, obj: Obj) -> _Entry:
        body = orjson.dumps(_without_managed_fields(obj))
        zdict = self._zdict
        if len(zdict) < len(body) <= ZDICT_MAX:
            # objects grow as their hosts go on (a status, conditions, history): the
            # largest has most of what the next ones hold (a swap is one reference)
            self._zdict = zdict = body
        packer = zlib.compressobj(1, zdict=zdict) if zdict else zlib.compressobj(1)
        return _rv(obj), packer.compress(body) + packer.flush(), zdict

    @staticmethod
    def _read(entry: _Entry) -> Obj:
        _, packed, zdict = entry
        unpacker = zlib.decompressobj(zdict=zdict) if zdict else zlib.decompressobj()
        return orjson.loads(unpacker.decompress(packed) + unpacker.flush())  # type: ignore[no-any-return]

    def get(self, key: str) -> Obj | None:
        entry = self._cache.get(key)
        return None if entry is None else self._read(entry)

    def version(self, key: str) -> int | None:
        """The cached object's resourceVersion, read without parsing it (None: not cached)."""
        entry = self._cache.get(key)
        return None if entry is None else entry[0]

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._cache)

    def items(self) -> list[Obj]:
        with self._lock:
            entries = list(self._cache.values())
        return [self._read(entry) for entry in entries]

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    # -- writing through ----------------------------------------------------------------

    def mutate(self, obj: Obj) -> None:
        """Take the server's answer to our own write, unless the cache already has newer.

        An answer for an object that is being deleted and has no finalizers left
        describes an object that no longer exists (the write that removed the last
        finalizer deleted it); its DELETED event may already have been handled, so
        taking it would bring back a ghost.
        """
        meta = obj.get("metadata", {})
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self.forget(object_key(obj))
            return
        key = object_key(obj)
        entry = self._entry(obj)
        with self._lock:
            known = self._cache.get(key)
            if known is None and entry[0] <= self._deleted.get(key, 0):
                return  # written before its deletion, which the watch already told
            if known is None or entry[0] > known[0]:
                self._cache[key] = entry
                self._deleted.pop(key, None)

    def forget(self, key: str) -> None:
        with self._lock:
            self._cache.pop(key, None)

    def _remember_deleted(self, key: str, version: int) -> None:
        """Note a deletion seen at ``version`` (the lock held); the oldest notes go first."""
        self._deleted.pop(key, None)
        self._deleted[key] = version
        if len(self._deleted) > DELETED_KEPT:
            del self._deleted[next(iter(self._deleted))]

    # -- running ------------------------------------------------------------------------

    def start(self) -> None:
        scope = f"-{self.field_selector}" if self.field_selector else ""
        self._thread = threading.Thread(
            target=self._run, name=f"informer-{self.resource.plural}{scope}", daemon=True
        )
        self._thread.start()

    def stop(self, wait: bool = True) -> None:
        """Stop watching; with ``wait``, until the thread has ended (a worker that stops
        an informer mid-reconcile does not wait: its thread ends on its own)."""
        self._stopping.set()
        if self._watch is not None:
            self._watch.stop()
        if wait and self._thread is not None:
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
            except Exception as err:
                if self._stopping.is_set():
                    return
                log_failure(log, err, "watch of %s failed; retrying", self.resource)
                self._stopping.wait(self.relist_delay)

    def _relist(self) -> str:
        items, version = self.cluster.list(
            self.resource,
            self.namespace,
            self.field_selector,
            self.label_selector,
            metadata_only=self.metadata_only,
        )
        objects = {object_key(o): o for o in items}
        fresh = {key: self._entry(o) for key, o in objects.items()}
        with self._lock:
            old = self._cache
            self._cache = fresh
        self.relists += 1
        for key, obj in objects.items():
            before = old.get(key)
            if before is None or before[0] != fresh[key][0]:
                self._dispatch(key, obj)
        for key in old:
            if key not in fresh:
                self._dispatch(key, None)
        self._synced.set()
        if self.on_synced is not None:
            try:
                self.on_synced()
            except Exception:
                log.exception("sync handler of %s failed", self.resource)
        return version

    def _follow(self, version: str) -> str:
        watch = self.cluster.watch(
            self.resource,
            self.namespace,
            resource_version=version,
            field_selector=self.field_selector,
            label_selector=self.label_selector,
            metadata_only=self.metadata_only,
        )
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
            version_seen = _rv(obj)
            with self._lock:
                before = self._cache.get(key)
                known = before is not None and version_seen <= before[0]
            if known and event.type != "DELETED":
                continue  # our own write, already in the cache
            entry = self._entry(obj) if event.type != "DELETED" else (version_seen, b"", b"")
            with self._lock:
                before = self._cache.get(key)
                if event.type == "DELETED":
                    self._cache.pop(key, None)
                    self._remember_deleted(key, version_seen)
                elif before is None or entry[0] > before[0]:
                    self._cache[key] = entry
                else:
                    continue  # written through meanwhile
            self._dispatch(key, None if event.type == "DELETED" else obj)
        return version

    def _dispatch(self, key: str, obj: Obj | None) -> None:
        for handler in self.handlers:
            try:
                handler(key, obj)
            except Exception:
                log.exception("handler for %s %s failed", self.resource, key)


class InformerSet:
    """One informer per namespace, read as one cache (for a controller scoped to a list)."""

    def __init__(
        self,
        cluster: Cluster,
        resource: Resource,
        namespaces: tuple[str, ...] | None,
        handlers: list[Handler],
        label_selector: str = "",
        metadata_only: bool = False,
    ) -> None:
        self.resource = resource
        scopes: tuple[str | None, ...] = namespaces if namespaces else (None,)
        self._all = [
            Informer(
                cluster,
                resource,
                ns,
                handlers=handlers,
                label_selector=label_selector,
                metadata_only=metadata_only,
            )
            for ns in scopes
        ]
        self._by_namespace = {ns: i for ns, i in zip(scopes, self._all, strict=True)}

    def _for(self, key: str) -> Informer | None:
        if None in self._by_namespace:
            return self._by_namespace[None]
        namespace, _, _ = key.rpartition("/")
        return self._by_namespace.get(namespace)

    def get(self, key: str) -> Obj | None:
        informer = self._for(key)
        return None if informer is None else informer.get(key)

    def version(self, key: str) -> int | None:
        informer = self._for(key)
        return None if informer is None else informer.version(key)

    def mutate(self, obj: Obj) -> None:
        informer = self._for(object_key(obj))
        if informer is not None:
            informer.mutate(obj)

    def forget(self, key: str) -> None:
        informer = self._for(key)
        if informer is not None:
            informer.forget(key)

    def keys(self) -> list[str]:
        return [k for i in self._all for k in i.keys()]  # noqa: SIM118 (not a dict)

    def items(self) -> list[Obj]:
        return [o for i in self._all for o in i.items()]

    def start(self) -> None:
        for informer in self._all:
            informer.start()

    def stop(self) -> None:
        for informer in self._all:
            informer.stop()

    def wait_synced(self, timeout: float | None = None) -> bool:
        return all(i.wait_synced(timeout) for i in self._all)

    @property
    def relists(self) -> int:
        return sum(i.relists for i in self._all)
