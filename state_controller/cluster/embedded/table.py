"""The embedded store's committed objects, and every change a commit makes to them.

A commit takes the next resourceVersion, replaces or removes one serialized object, keeps
the uid and owner indexes that garbage collection needs in step, and hands the change to
the watch hub and to the sqlite file. Deletion cascades from here: finalizers turn it into
a mark, and a dependent whose owners are all gone follows them.

Nothing here takes the lock: every method of :class:`ObjectTable` is called with the
store's lock held. The lock discipline stays in one place, the verbs of
:class:`~state_controller.cluster.embedded.store.EmbeddedCluster`, which compute a write
outside the lock and commit it here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import orjson

from state_controller.api.objects import Obj
from state_controller.cluster.embedded.persistence import SqliteFile
from state_controller.cluster.embedded.semantics import (
    Key,
    Record,
    dumps,
    is_removable,
    now_rfc3339,
    owner_uids,
)
from state_controller.cluster.embedded.watch import WatchHub
from state_controller.cluster.interface import EVENTS, EventType

_Work = list[tuple[Key, bool]]  # keys to delete; True = garbage-collected dependent

_EVENTS_KEY: Final = str(EVENTS)


class ObjectTable:
    """The objects by resource and namespace/name, the global resourceVersion, the uid and
    owner indexes; commits, deletion and garbage collection, all under the store's lock."""

    def __init__(self, hub: WatchHub, max_events: int) -> None:
        self.objects: dict[str, dict[tuple[str, str], Record]] = {}
        self.rv = 0
        self.sqlite: SqliteFile | None = None  # the store's file, when it persists
        self._hub = hub
        self._max_events = max_events
        self._uids: dict[str, Key] = {}
        self._owned: dict[str, set[Key]] = {}

    def load(self, rows: Iterable[tuple[Key, bytes]], rv: int) -> None:
        """Fill the table from a persisted file's rows, and its resourceVersion."""
        for key, body in rows:
            obj = orjson.loads(body)
            obj_rv = int(obj["metadata"].get("resourceVersion") or 0)
            rv = max(rv, obj_rv)
            self.objects.setdefault(key[0], {})[(key[1], key[2])] = (obj_rv, body)
            self._reindex(key, None, obj["metadata"])
        self.rv = rv

    def add(self, key: Key, new: Obj) -> bytes:
        """Commit a created object; the oldest Events go beyond ``max_events``."""
        body = self._put(key, None, new, "ADDED")
        if key[0] == _EVENTS_KEY:
            self._expire_events()
        return body

    def commit(self, key: Key, old: Obj, new: Obj) -> bytes:
        """Commit a change: the object replaced, or removed when nothing holds it any more
        (its finalizers gone after its deletion), with the dependents it leaves ownerless."""
        if is_removable(new["metadata"]):
            body, orphans = self._remove(key, old, new)
            self.delete([(orphan, True) for orphan in orphans])
            return body
        return self._put(key, old, new, "MODIFIED")

    def delete(self, work: _Work) -> None:
        """Delete rules applied to each key, cascading to dependents (garbage collection).

        A key marked ``True`` is a dependent whose owner went away; like the Kubernetes
        garbage collector, it is deleted only when none of its owners remains.
        """
        while work:
            key, collected = work.pop()
            record = self.objects.get(key[0], {}).get((key[1], key[2]))
            if record is None:
                continue
            obj: Obj = orjson.loads(record[1])
            meta = obj["metadata"]
            if collected and any(uid in self._uids for uid in owner_uids(meta)):
                continue
            if meta.get("finalizers"):
                if "deletionTimestamp" not in meta:
                    self._mark_deleting(key, obj)
                continue
            _, orphans = self._remove(key, obj, obj)
            work.extend((orphan, True) for orphan in orphans)

    def flush(self) -> None:
        """Write one API call's changes to the file, in one transaction."""
        if self.sqlite is not None:
            self.sqlite.flush(self.rv)

    def _mark_deleting(self, key: Key, old: Obj) -> None:
        """As the API server: deletionTimestamp once, and generation bumps with it."""
        new_meta = dict(old["metadata"])
        new_meta["deletionTimestamp"] = now_rfc3339()
        new_meta["deletionGracePeriodSeconds"] = 0
        new_meta["generation"] = int(new_meta.get("generation") or 0) + 1
        self._put(key, old, {**old, "metadata": new_meta}, "MODIFIED")

    def _put(self, key: Key, old: Obj | None, new: Obj, event_type: EventType) -> bytes:
        rv = self.rv + 1
        new["metadata"]["resourceVersion"] = str(rv)
        body = dumps(new)  # may raise: nothing is changed before this point
        self.rv = rv
        objects = self.objects.setdefault(key[0], {})
        before = objects.get((key[1], key[2]))
        objects[(key[1], key[2])] = (rv, body)
        self._reindex(key, old["metadata"] if old else None, new["metadata"])
        self._hub.emit_locked(rv, key, event_type, body, before[1] if before else None)
        if self.sqlite is not None:
            self.sqlite.put(key, body, replacing=old is not None)
        return body

    def _remove(self, key: Key, old: Obj, last: Obj) -> tuple[bytes, list[Key]]:
        """Removes the object; returns its final state and the dependents left ownerless."""
        rv = self.rv + 1
        last["metadata"]["resourceVersion"] = str(rv)
        body = dumps(last)
        self.rv = rv
        del self.objects[key[0]][(key[1], key[2])]
        self._reindex(key, old["metadata"], None)
        self._hub.emit_locked(rv, key, "DELETED", body)
        if self.sqlite is not None:
            self.sqlite.remove(key)
        uid = old["metadata"].get("uid")
        return body, sorted(self._owned.pop(uid, ())) if uid else []

    def _expire_events(self) -> None:
        events = self.objects.get(_EVENTS_KEY, {})
        while len(events) > self._max_events:
            (namespace, name), (_, body) = next(iter(events.items()))
            last = orjson.loads(body)
            self._remove((_EVENTS_KEY, namespace, name), last, last)

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
