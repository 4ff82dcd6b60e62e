"""The store itself: the objects under one lock, the verbs, commits and garbage collection.

Writes are computed outside the lock and committed by compare-and-swap; each commit is handed
to the watch hub and the sqlite file. The package docstring gives the design choices.

One module on purpose: what is left is the one class whose verbs share
the lock, the object map and the commit path (label selectors added to list and watch only
pass their filter through to it; the matching lives in semantics.py); splitting it further
would spread that lock discipline over files.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
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
    eviction_allowed,
    finish_change,
    identify,
    is_removable,
    merge_patch,
    namespace_of,
    now_rfc3339,
    owner_uids,
    prepare_create,
    selector_matcher,
)
from state_controller.cluster.embedded.watch import EmbeddedWatch, WatchHub, parse_version
from state_controller.cluster.interface import (
    EVENTS,
    PDBS,
    PODS,
    AlreadyExists,
    ApiError,
    EventType,
    NotFound,
    Resource,
    metadata_of,
)

Validator = Callable[[Obj], None]


@runtime_checkable
class Pruner(Protocol):
    """A validator that also knows its resource's schema, and prunes objects to it."""

    def prune(self, obj: Obj) -> Obj:
        """The object without the fields its schema does not declare; never modifies it."""
        ...


# Aliases because ``EmbeddedCluster.list`` shadows the builtin in annotations inside the class.
_Keys = list[Key]
_Work = list[tuple[Key, bool]]  # keys to delete; True = garbage-collected dependent

_VERBS: Final = ("create", "update", "update_status", "patch", "delete", "get", "list", "watch")
_EVENTS_KEY: Final = str(EVENTS)


class ReadOnlyStore(ApiError):
    """A write reached a store opened read-only (a snapshot) or already closed."""

    code = 405
    reason = "MethodNotAllowed"


class EmbeddedCluster:
    """The :class:`~state_controller.cluster.interface.Cluster` protocol, in process.

    ``validators`` are called with the candidate object of create/update/patch before it is
    committed; raising :class:`Invalid` rejects the write. They must not modify the object.
    A validator that is also a :class:`Pruner` prunes every write of its resource first,
    status writes included (state_controller.cluster.schema has them for our CRDs).
    ``history`` bounds the events kept for watches resuming from a resourceVersion (memory is
    roughly ``history`` times the object size). ``max_events`` bounds the Events kept, oldest
    removed first, as the API server's ``--event-ttl`` does. With ``path`` the store is persisted
    in sqlite; with ``read_only=True`` it is a snapshot of that file, e.g. for a ``get``
    command reading the store of a running ``demo`` from another process.
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
        # Resolved once: isinstance() against a Protocol costs ~15 µs, on every write.
        self._pruners: dict[Resource, Callable[[Obj], Obj]] = {}
        for resource, validator in self._validators.items():
            if isinstance(validator, Pruner):
                self._pruners[resource] = validator.prune
        self._objects: dict[str, dict[tuple[str, str], Record]] = {}
        self._hub = WatchHub(self._lock, history)
        self._max_events = max_events
        self._uids: dict[str, Key] = {}
        self._owned: dict[str, set[Key]] = {}
        self._stats = dict.fromkeys(_VERBS, 0)
        self._writes: dict[tuple[str, str], int] = {}  # (verb, resource plural) -> writes
        self._rv = 0
        self._read_only = read_only
        self.path = Path(path) if path is not None else None  # None: in memory only
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
            watchers = self._hub.watchers_locked()
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
    def writes(self) -> dict[tuple[str, str], int]:
        """Writes per verb and resource (plural) since creation (a copy)."""
        with self._lock:
            return dict(self._writes)

    def _wrote(self, verb: str, resource: Resource) -> None:
        """Count a write (under the lock)."""
        self._stats[verb] += 1
        key = (verb, resource.plural)
        self._writes[key] = self._writes.get(key, 0) + 1

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

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        field_selector: str = "",
        label_selector: str = "",
        metadata_only: bool = False,
    ) -> tuple[list[Obj], str]:
        """Sorted by namespace/name like etcd; parsing happens after releasing the lock."""
        match = selector_matcher(field_selector, label_selector)
        with self._lock:
            self._stats["list"] += 1
            items = list(self._objects.get(str(resource), {}).items())
            rv = self._rv
        if namespace is not None and resource.namespaced:
            items = [item for item in items if item[0][0] == namespace]
        items.sort(key=lambda item: item[0])
        parsed = [orjson.loads(body) for _, (_, body) in items]
        shown = [o for o in parsed if match is None or match(o)]
        return [metadata_of(o) for o in shown] if metadata_only else shown, str(rv)

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        resource_version: str = "",
        field_selector: str = "",
        label_selector: str = "",
        metadata_only: bool = False,
    ) -> EmbeddedWatch:
        """Selectors filter events as the API server does: by the object before and after
        the change, so one that stops matching is DELETED and one that comes to match ADDED."""
        rkey = str(resource)
        ns = namespace if resource.namespaced else None
        since = parse_version(resource_version)
        match = selector_matcher(field_selector, label_selector)
        with self._lock:
            self._stats["watch"] += 1
            watcher = self._hub.watch_locked(
                rkey, ns, since, self._objects.get(rkey, {}), self._rv, match
            )
        if metadata_only:
            watcher.shape = metadata_of
        return watcher

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
                    self._wrote("create", resource)  # under the lock the commit takes anyway
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
            self._wrote("delete", resource)
            if (key[1], key[2]) not in self._objects.get(key[0], {}):
                raise NotFound(f'{resource} "{name}" not found')
            self._delete_locked([(key, False)])
            self._flush_locked()

    def evict(self, namespace: str, pod: str) -> bool:
        """As the API server's eviction: refused while a budget selecting the pod allows no
        disruption (the budget's status is the disruption controller's, not updated here)."""
        try:
            found = self.get(PODS, namespace, pod)
            if not eviction_allowed(found, self.list(PDBS, namespace)[0]):
                return False
            self.delete(PODS, namespace, pod)
        except NotFound:
            pass  # gone already
        return True

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
                    self._wrote(verb, resource)
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
        objects = self._objects.setdefault(key[0], {})
        before = objects.get((key[1], key[2]))
        objects[(key[1], key[2])] = (rv, body)
        self._reindex(key, old["metadata"] if old else None, new["metadata"])
        self._hub.emit_locked(rv, key, event_type, body, before[1] if before else None)
        if self._sqlite is not None:
            self._sqlite.put(key, body, replacing=old is not None)
        return body

    def _remove_locked(self, key: Key, old: Obj, last: Obj) -> tuple[bytes, _Keys]:
        """Removes the object; returns its final state and the dependents left ownerless."""
        rv = self._rv + 1
        last["metadata"]["resourceVersion"] = str(rv)
        body = dumps(last)
        self._rv = rv
        del self._objects[key[0]][(key[1], key[2])]
        self._reindex(key, old["metadata"], None)
        self._hub.emit_locked(rv, key, "DELETED", body)
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
        pruner = self._pruners.get(resource)
        return pruner(obj) if pruner is not None else obj

    def _validate(self, resource: Resource, obj: Obj) -> None:
        validator = self._validators.get(resource)
        if validator is not None:
            validator(obj)
