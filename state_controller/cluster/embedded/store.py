"""The store itself: the verbs, each taking the one lock, and the writes' compare-and-swap.

A write is computed outside the lock (pruned, validated) against a snapshot of the stored
object, and committed under it only if the stored object is still that snapshot; what a commit
changes (resourceVersions, the indexes, garbage collection, the watch hub, the sqlite file)
is :mod:`~state_controller.cluster.embedded.table`'s, which never takes the lock itself, so
every acquisition is here. Selectors are parsed here and matched by
:mod:`~state_controller.cluster.embedded.semantics`. The package docstring gives the design
choices.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Final, Protocol, runtime_checkable

import orjson

from state_controller.api.objects import Obj
from state_controller.cluster.embedded.persistence import SqliteFile, load
from state_controller.cluster.embedded.semantics import (
    check_precondition,
    eviction_allowed,
    finish_change,
    identify,
    merge_patch,
    namespace_of,
    prepare_create,
    selector_matcher,
)
from state_controller.cluster.embedded.table import ObjectTable
from state_controller.cluster.embedded.watch import EmbeddedWatch, WatchHub, parse_version
from state_controller.cluster.interface import (
    PDBS,
    PODS,
    AlreadyExists,
    ApiError,
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


_VERBS: Final = ("create", "update", "update_status", "patch", "delete", "get", "list", "watch")


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
        self._hub = WatchHub(self._lock, history)
        self._table = ObjectTable(self._hub, max_events)
        self._stats = dict.fromkeys(_VERBS, 0)
        self._writes: dict[tuple[str, str], int] = {}  # (verb, resource plural) -> writes
        self._read_only = read_only
        self.path = Path(path) if path is not None else None  # None: in memory only
        self._closed = False
        if path is not None:
            self._open(Path(path))

    def _open(self, path: Path) -> None:
        rows, rv = load(path, self._read_only)
        self._table.load(rows, rv)
        if not self._read_only:
            self._table.sqlite = SqliteFile(path)

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Stops every watch and closes the database; later writes are rejected."""
        with self._lock:
            self._closed = True
            watchers = self._hub.watchers_locked()
            sqlite, self._table.sqlite = self._table.sqlite, None
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
        return str(self._table.rv)

    # -- reads -----------------------------------------------------------------------------

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        ns = namespace_of(resource, namespace)
        with self._lock:
            self._stats["get"] += 1
            record = self._table.objects.get(str(resource), {}).get((ns, name))
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
            items = list(self._table.objects.get(str(resource), {}).items())
            rv = self._table.rv
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
            table = self._table
            watcher = self._hub.watch_locked(
                rkey, ns, since, table.objects.get(rkey, {}), table.rv, match
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
                if (key[1], key[2]) in self._table.objects.get(key[0], {}):
                    if generated:
                        continue  # a generated name collided: draw another one
                    raise AlreadyExists(f'{resource} "{key[2]}" already exists')
                body = self._table.add(key, new)
                self._table.flush()
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
            if (key[1], key[2]) not in self._table.objects.get(key[0], {}):
                raise NotFound(f'{resource} "{name}" not found')
            self._table.delete([(key, False)])
            self._table.flush()

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

    # -- compare-and-swap -------------------------------------------------------------------

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
                record = self._table.objects.get(key[0], {}).get((ns, name))
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
                if self._table.objects.get(key[0], {}).get((ns, name)) is not record:
                    continue  # lost a race: recompute against what is stored now
                body = self._table.commit(key, old, new)
                self._table.flush()
            return orjson.loads(body)  # type: ignore[no-any-return]

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
