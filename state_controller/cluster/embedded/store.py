"""An in-process object store with the Kubernetes API semantics the controller relies on.

:class:`EmbeddedCluster` lets the controller run (``demo``, ``bootstrap``, tests) without
Kubernetes while exercising the same contract as a real API server: optimistic concurrency,
a status subresource, ``generation``, finalizers, owner-reference garbage collection and
watches that resume from a resourceVersion or fail with :class:`Gone`.

Design choices, each made for speed or for fidelity:

- Objects are stored serialized (``orjson`` bytes), like etcd does. Every read parses a fresh
  copy, so no caller can ever mutate stored state by accident.
- One global resourceVersion counter, bumped by every committed change. Every change is
  exactly one event in a bounded history, so the history holds consecutive versions and a
  watch can resume from any version it still holds.
- Writes are compare-and-swap: the new object is computed (and validated — validators are
  user code) *outside* the lock against a snapshot, then committed under the lock only if
  the stored object is still that snapshot; otherwise the write is recomputed. Under the
  lock there is only bookkeeping, serialization, fan-out and (optionally) sqlite.
- A write that changes nothing is not committed (no new resourceVersion, no event), as the
  API server does.
- With a pruner (see ``EmbeddedCluster``), every write drops the fields the resource's
  schema does not declare before anything else looks at it, as the API server does for a
  request without ``fieldValidation``: a write that only adds unknown fields changes
  nothing, and does not bump ``generation``.
- Unlike the API server, ``create`` keeps a ``status`` given in the body (the API server
  drops it for resources with a status subresource): it makes seeding fixtures simpler.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from queue import SimpleQueue
from types import TracebackType
from typing import Any, Final, Protocol, runtime_checkable

import orjson

from state_controller.api.objects import Obj
from state_controller.cluster.embedded.persistence import SqliteFile, load
from state_controller.cluster.embedded.semantics import (
    Key,
    Record,
    check_precondition,
    dumps,
    finish_change,
    identify,
    is_removable,
    merge_patch,
    namespace_of,
    now_rfc3339,
    owner_uids,
    prepare_create,
)
from state_controller.cluster.interface import (
    EVENTS,
    AlreadyExists,
    ApiError,
    EventType,
    Gone,
    Invalid,
    NotFound,
    Resource,
    WatchEvent,
)

Validator = Callable[[Obj], None]


@runtime_checkable
class Pruner(Protocol):
    """A validator that also knows its resource's schema, and prunes objects to it."""

    def prune(self, obj: Obj) -> Obj:
        """The object without the fields its schema does not declare; never modifies it."""
        ...


_Change = tuple[EventType, bytes]  # what a watcher receives
_Event = tuple[int, str, str, EventType, bytes]  # (rv, resource key, namespace, type, body)
# Aliases because ``EmbeddedCluster.list`` shadows the builtin in annotations inside the class.
_Changes = list[_Change]
_Keys = list[Key]
_Work = list[tuple[Key, bool]]  # keys to delete; True = garbage-collected dependent

_VERBS: Final = ("create", "update", "update_status", "patch", "delete", "get", "list", "watch")
_EVENTS_KEY: Final = str(EVENTS)
_STOP: Final = None


class ReadOnlyStore(ApiError):
    """A write reached a store opened read-only (a snapshot) or already closed."""

    code = 405
    reason = "MethodNotAllowed"


class EmbeddedWatch:
    """One watcher: a private queue the store fans changes into, parsed on the reader side.

    Parsing happens in the consumer's thread so writers pay only a queue put per watcher.
    """

    def __init__(
        self,
        cluster: EmbeddedCluster,
        resource_key: str,
        namespace: str | None,
        backlog: list[_Change],
        gone: str | None = None,
    ) -> None:
        self.resource_key = resource_key
        self.namespace = namespace
        self.queue: SimpleQueue[_Change | None] = SimpleQueue()
        self._cluster = cluster
        self._backlog = backlog
        self._gone = gone
        self._stopped = False

    def __iter__(self) -> Iterator[WatchEvent]:
        return self._events()

    def _events(self) -> Iterator[WatchEvent]:
        if self._gone is not None:
            raise Gone(self._gone)
        backlog, self._backlog = self._backlog, []
        for event_type, body in backlog:
            if self._stopped:
                return
            yield WatchEvent(event_type, orjson.loads(body), body)
        while not self._stopped:
            item = self.queue.get()
            if item is _STOP or self._stopped:
                return
            yield WatchEvent(item[0], orjson.loads(item[1]), item[1])

    def stop(self) -> None:
        """Ends iteration, also for a thread blocked waiting for the next event."""
        if self._stopped:
            return
        self._stopped = True
        self._cluster._unregister(self)
        self.queue.put(_STOP)


class EmbeddedCluster:
    """The :class:`~state_controller.cluster.interface.Cluster` protocol, in process.

    ``validators`` are called with the candidate object of create/update/patch before it is
    committed; raising :class:`Invalid` rejects the write. They must not modify the object.
    A validator that is also a :class:`Pruner` prunes every write of its resource first,
    status writes included (state_controller.cluster.schema has them for our CRDs).
    ``history`` bounds the events kept for watches resuming from a resourceVersion (memory is
    roughly ``history`` times the object size). ``max_events`` bounds the Events kept, oldest
    removed first, as the API server's ``--event-ttl`` does. With ``path`` the store is persisted
    in sqlite; with
    ``read_only=True`` it is a snapshot of that file, e.g. for a ``get`` command reading the
    store of a running ``demo`` from another process.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        validators: Mapping[Resource, Validator] | None = None,
        history: int = 10_000,
        max_events: int = 10_000,
        read_only: bool = False,
    ) -> None:
        if read_only and path is None:
            raise ValueError("read_only needs a path to read from")
        self._lock = threading.Lock()
        self._validators: dict[Resource, Validator] = dict(validators or {})
        self._objects: dict[str, dict[tuple[str, str], Record]] = {}
        self._history: deque[_Event] = deque(maxlen=max(history, 0))
        self._max_events = max_events
        self._watchers: dict[str, tuple[EmbeddedWatch, ...]] = {}
        self._uids: dict[str, Key] = {}
        self._owned: dict[str, set[Key]] = {}
        self._stats = dict.fromkeys(_VERBS, 0)
        self._rv = 0
        self._read_only = read_only
        self._closed = False
        self._sqlite: SqliteFile | None = None
        if path is not None:
            self._open(Path(path))

    @classmethod
    def open_snapshot(cls, path: str | os.PathLike[str]) -> EmbeddedCluster:
        """A read-only copy of a persisted store, safe while another process writes it."""
        return cls(path, read_only=True)

    def _open(self, path: Path) -> None:
        rows, rv = load(path, self._read_only)
        for key, body in rows:
            obj = orjson.loads(body)
            obj_rv = int(obj["metadata"].get("resourceVersion") or 0)
            rv = max(rv, obj_rv)
            self._objects.setdefault(key[0], {})[(key[1], key[2])] = (obj_rv, body)
            self._reindex(key, None, obj["metadata"])
        self._rv = rv
        if not self._read_only:
            self._sqlite = SqliteFile(path)

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Stops every watch and closes the database; later writes are rejected."""
        with self._lock:
            self._closed = True
            watchers = [w for group in self._watchers.values() for w in group]
            sqlite, self._sqlite = self._sqlite, None
            if sqlite is not None:
                sqlite.close()
        for watcher in watchers:
            watcher.stop()

    def __enter__(self) -> EmbeddedCluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def stats(self) -> dict[str, int]:
        """Calls per verb since creation (a copy), for benchmarks and tests."""
        return dict(self._stats)

    @property
    def resource_version(self) -> str:
        """The current global resourceVersion."""
        return str(self._rv)

    # -- reads -----------------------------------------------------------------------------

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        ns = namespace_of(resource, namespace)
        with self._lock:
            self._stats["get"] += 1
            record = self._objects.get(str(resource), {}).get((ns, name))
        if record is None:
            raise NotFound(f'{resource} "{name}" not found')
        return orjson.loads(record[1])  # type: ignore[no-any-return]

    def list(self, resource: Resource, namespace: str | None = None) -> tuple[list[Obj], str]:
        """Sorted by namespace/name like etcd; parsing happens after releasing the lock."""
        with self._lock:
            self._stats["list"] += 1
            items = list(self._objects.get(str(resource), {}).items())
            rv = self._rv
        if namespace is not None and resource.namespaced:
            items = [item for item in items if item[0][0] == namespace]
        items.sort(key=lambda item: item[0])
        return [orjson.loads(body) for _, (_, body) in items], str(rv)

    def watch(
        self, resource: Resource, namespace: str | None = None, resource_version: str = ""
    ) -> EmbeddedWatch:
        rkey = str(resource)
        ns = namespace if resource.namespaced else None
        since = self._parse_version(resource_version)
        with self._lock:
            self._stats["watch"] += 1
            if since is None:
                backlog = self._snapshot_locked(rkey, ns)
            else:
                floor = self._history[0][0] - 1 if self._history else self._rv
                if since < floor:
                    gone = f"too old resource version: {since} ({floor})"
                    return EmbeddedWatch(self, rkey, ns, [], gone=gone)
                backlog = self._replay_locked(rkey, ns, since, floor)
            watcher = EmbeddedWatch(self, rkey, ns, backlog)
            self._watchers[rkey] = (*self._watchers.get(rkey, ()), watcher)
        return watcher

    @staticmethod
    def _parse_version(resource_version: str) -> int | None:
        if resource_version in ("", "0"):
            return None
        try:
            return int(resource_version)
        except ValueError:
            raise Invalid(f"invalid resourceVersion {resource_version!r}") from None

    def _snapshot_locked(self, rkey: str, ns: str | None) -> _Changes:
        items = sorted(self._objects.get(rkey, {}).items())
        return [("ADDED", body) for (obj_ns, _), (_, body) in items if ns in (None, obj_ns)]

    def _replay_locked(self, rkey: str, ns: str | None, since: int, floor: int) -> _Changes:
        """History versions are consecutive, so the first event after ``since`` is at a known
        index."""
        start = max(since - floor, 0)
        return [
            (event_type, body)
            for rv, event_rkey, event_ns, event_type, body in itertools.islice(
                self._history, start, None
            )
            if rv > since and event_rkey == rkey and ns in (None, event_ns)
        ]

    def _unregister(self, watcher: EmbeddedWatch) -> None:
        with self._lock:
            group = self._watchers.get(watcher.resource_key, ())
            self._watchers[watcher.resource_key] = tuple(w for w in group if w is not watcher)

    # -- writes ----------------------------------------------------------------------------

    def create(self, resource: Resource, obj: Obj) -> Obj:
        self._check_writable()
        counted = False
        while True:
            new, generated = prepare_create(resource, obj)
            new = self._prune(resource, new)
            self._validate(resource, new)
            meta = new["metadata"]
            key = (str(resource), meta.get("namespace", ""), meta["name"])
            with self._lock:
                self._check_writable()
                if not counted:
                    self._stats["create"] += 1  # counted under the lock the commit takes anyway
                    counted = True
                if (key[1], key[2]) in self._objects.get(key[0], {}):
                    if generated:
                        continue  # a generated name collided: draw another one
                    raise AlreadyExists(f'{resource} "{key[2]}" already exists')
                body = self._put_locked(key, None, new, "ADDED")
                if key[0] == _EVENTS_KEY:
                    self._expire_events_locked()
                self._flush_locked()
            return orjson.loads(body)  # type: ignore[no-any-return]

    def update(self, resource: Resource, obj: Obj) -> Obj:
        meta = obj.get("metadata") or {}
        ns, name = identify(resource, meta)

        def change(old: Obj) -> Obj:
            check_precondition(meta.get("resourceVersion"), old["metadata"])
            new = {k: v for k, v in obj.items() if k != "status" or not resource.has_status}
            if resource.has_status and "status" in old:
                new["status"] = old["status"]
            return finish_change(resource, old, self._prune(resource, new), meta)

        return self._modify(resource, ns, name, "update", change, validate=True)

    def update_status(self, resource: Resource, obj: Obj) -> Obj:
        if not resource.has_status:
            raise NotFound(f"{resource} has no status subresource")
        meta = obj.get("metadata") or {}
        ns, name = identify(resource, meta)

        def change(old: Obj) -> Obj:
            check_precondition(meta.get("resourceVersion"), old["metadata"])
            new = {**old, "metadata": dict(old["metadata"])}
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            return self._prune(resource, new)

        return self._modify(resource, ns, name, "update_status", change, validate=False)

    def patch(self, resource: Resource, namespace: str | None, name: str, patch: Obj) -> Obj:
        ns = namespace_of(resource, namespace)
        patch_meta = patch.get("metadata") or {}
        if resource.has_status:
            patch = {k: v for k, v in patch.items() if k != "status"}

        def change(old: Obj) -> Obj:
            check_precondition(patch_meta.get("resourceVersion"), old["metadata"])
            new: Obj = merge_patch(old, patch)
            user_meta = new.get("metadata") or {}
            return finish_change(resource, old, self._prune(resource, new), user_meta)

        return self._modify(resource, ns, name, "patch", change, validate=True)

    def delete(self, resource: Resource, namespace: str | None, name: str) -> None:
        self._check_writable()
        key = (str(resource), namespace_of(resource, namespace), name)
        with self._lock:
            self._check_writable()
            self._stats["delete"] += 1
            if (key[1], key[2]) not in self._objects.get(key[0], {}):
                raise NotFound(f'{resource} "{name}" not found')
            self._delete_locked([(key, False)])
            self._flush_locked()

    # -- write machinery -------------------------------------------------------------------

    def _modify(
        self,
        resource: Resource,
        ns: str,
        name: str,
        verb: str,
        change: Callable[[Obj], Obj],
        *,
        validate: bool,
    ) -> Obj:
        """Compare-and-swap: compute outside the lock, commit if nobody wrote in between."""
        self._check_writable()
        key = (str(resource), ns, name)
        first = True
        while True:
            with self._lock:
                if first:
                    self._stats[verb] += 1
                    first = False
                record = self._objects.get(key[0], {}).get((ns, name))
            if record is None:
                raise NotFound(f'{resource} "{name}" not found')
            old: Obj = orjson.loads(record[1])
            new = change(old)
            if new == old:
                return old  # nothing changed: no new resourceVersion, no event
            if validate:
                self._validate(resource, new)
            with self._lock:
                self._check_writable()
                if self._objects.get(key[0], {}).get((ns, name)) is not record:
                    continue  # lost a race: recompute against what is stored now
                body = self._commit_locked(key, old, new)
                self._flush_locked()
            return orjson.loads(body)  # type: ignore[no-any-return]

    def _commit_locked(self, key: Key, old: Obj, new: Obj) -> bytes:
        if is_removable(new["metadata"]):
            body, orphans = self._remove_locked(key, old, new)
            self._delete_locked([(orphan, True) for orphan in orphans])
            return body
        return self._put_locked(key, old, new, "MODIFIED")

    def _delete_locked(self, work: _Work) -> None:
        """Delete rules applied to each key, cascading to dependents (garbage collection).

        A key marked ``True`` is a dependent whose owner went away; like the Kubernetes
        garbage collector, it is deleted only when none of its owners remains.
        """
        while work:
            key, collected = work.pop()
            record = self._objects.get(key[0], {}).get((key[1], key[2]))
            if record is None:
                continue
            obj: Obj = orjson.loads(record[1])
            meta = obj["metadata"]
            if collected and any(uid in self._uids for uid in owner_uids(meta)):
                continue
            if meta.get("finalizers"):
                if "deletionTimestamp" not in meta:
                    self._mark_deleting_locked(key, obj)
                continue
            _, orphans = self._remove_locked(key, obj, obj)
            work.extend((orphan, True) for orphan in orphans)

    def _mark_deleting_locked(self, key: Key, old: Obj) -> None:
        """As the API server: deletionTimestamp once, and generation bumps with it."""
        new_meta = dict(old["metadata"])
        new_meta["deletionTimestamp"] = now_rfc3339()
        new_meta["deletionGracePeriodSeconds"] = 0
        new_meta["generation"] = int(new_meta.get("generation") or 0) + 1
        self._put_locked(key, old, {**old, "metadata": new_meta}, "MODIFIED")

    def _put_locked(self, key: Key, old: Obj | None, new: Obj, event_type: EventType) -> bytes:
        rv = self._rv + 1
        new["metadata"]["resourceVersion"] = str(rv)
        body = dumps(new)  # may raise: nothing is changed before this point
        self._rv = rv
        self._objects.setdefault(key[0], {})[(key[1], key[2])] = (rv, body)
        self._reindex(key, old["metadata"] if old else None, new["metadata"])
        self._emit_locked(rv, key, event_type, body)
        if self._sqlite is not None:
            self._sqlite.put(key, body)
        return body

    def _remove_locked(self, key: Key, old: Obj, last: Obj) -> tuple[bytes, _Keys]:
        """Removes the object; returns its final state and the dependents left ownerless."""
        rv = self._rv + 1
        last["metadata"]["resourceVersion"] = str(rv)
        body = dumps(last)
        self._rv = rv
        del self._objects[key[0]][(key[1], key[2])]
        self._reindex(key, old["metadata"], None)
        self._emit_locked(rv, key, "DELETED", body)
        if self._sqlite is not None:
            self._sqlite.remove(key)
        uid = old["metadata"].get("uid")
        return body, sorted(self._owned.pop(uid, ())) if uid else []

    def _expire_events_locked(self) -> None:
        events = self._objects.get(_EVENTS_KEY, {})
        while len(events) > self._max_events:
            (namespace, name), (_, body) = next(iter(events.items()))
            last = orjson.loads(body)
            self._remove_locked((_EVENTS_KEY, namespace, name), last, last)

    def _reindex(
        self, key: Key, old_meta: Mapping[str, Any] | None, new_meta: Mapping[str, Any] | None
    ) -> None:
        """Keeps the uid and owner indexes that garbage collection needs in step."""
        old_uid = old_meta.get("uid") if old_meta else None
        new_uid = new_meta.get("uid") if new_meta else None
        if old_uid != new_uid:
            if old_uid:
                self._uids.pop(old_uid, None)
            if new_uid:
                self._uids[new_uid] = key
        old_refs = old_meta.get("ownerReferences") if old_meta else None
        new_refs = new_meta.get("ownerReferences") if new_meta else None
        if old_refs is new_refs or old_refs == new_refs:
            return
        for owner in owner_uids(old_meta or {}):
            dependents = self._owned.get(owner)
            if dependents is not None:
                dependents.discard(key)
                if not dependents:
                    del self._owned[owner]
        for owner in owner_uids(new_meta or {}):
            self._owned.setdefault(owner, set()).add(key)

    def _emit_locked(self, rv: int, key: Key, event_type: EventType, body: bytes) -> None:
        """Fan-out under the lock keeps every watcher's order equal to commit order; a put
        into a ``SimpleQueue`` never blocks."""
        self._history.append((rv, key[0], key[1], event_type, body))
        change = (event_type, body)
        for watcher in self._watchers.get(key[0], ()):
            if watcher.namespace is None or watcher.namespace == key[1]:
                watcher.queue.put(change)

    def _flush_locked(self) -> None:
        if self._sqlite is not None:
            self._sqlite.flush(self._rv)

    # -- helpers ---------------------------------------------------------------------------

    def _check_writable(self) -> None:
        if self._read_only:
            raise ReadOnlyStore("the store is open read-only (a snapshot); writes are rejected")
        if self._closed:
            raise ReadOnlyStore("the store is closed; writes are rejected")

    def _prune(self, resource: Resource, obj: Obj) -> Obj:
        validator = self._validators.get(resource)
        return validator.prune(obj) if isinstance(validator, Pruner) else obj

    def _validate(self, resource: Resource, obj: Obj) -> None:
        validator = self._validators.get(resource)
        if validator is not None:
            validator(obj)
