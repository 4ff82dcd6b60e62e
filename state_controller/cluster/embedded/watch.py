"""Watches of the embedded store: the event history, the watchers and the fan-out to them.

Every committed change is one event, appended to a bounded history and put into the queue of
each watcher of its resource (and namespace). A watch starts from the stored objects, or
resumes from a resourceVersion by replaying the history after it, or is :class:`Gone` when
the history no longer reaches back that far.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from queue import SimpleQueue
from typing import Final

import orjson

from state_controller.api.objects import Obj
from state_controller.cluster.embedded.semantics import FieldMatch, Key, Record
from state_controller.cluster.interface import EventType, Gone, Invalid, WatchEvent

# what a watcher receives: (type, body, the body before a MODIFIED change or None)
_Change = tuple[EventType, bytes, bytes | None]
_Event = tuple[int, str, str, EventType, bytes, bytes | None]  # (rv, resource key, ns, *change)

_STOP: Final = None


class EmbeddedWatch:
    """One watcher: a private queue the store fans changes into, parsed on the reader side.

    Parsing happens in the consumer's thread so writers pay only a queue put per watcher.
    """

    def __init__(
        self,
        hub: WatchHub,
        resource_key: str,
        namespace: str | None,
        backlog: list[_Change],
        gone: str | None = None,
        match: FieldMatch | None = None,
    ) -> None:
        self.resource_key = resource_key
        self._match = match
        self.namespace = namespace
        self.queue: SimpleQueue[_Change | None] = SimpleQueue()
        self._hub = hub
        self._backlog = backlog
        self._gone = gone
        self._stopped = False
        self.shape: Callable[[Obj], Obj] | None = None  # what of each object is shown

    def __iter__(self) -> Iterator[WatchEvent]:
        return self._events()

    def _events(self) -> Iterator[WatchEvent]:
        if self._gone is not None:
            raise Gone(self._gone)
        backlog, self._backlog = self._backlog, []
        for change in backlog:
            if self._stopped:
                return
            event = self._seen(change)
            if event is not None:
                yield event
        while not self._stopped:
            item = self.queue.get()
            if item is _STOP or self._stopped:
                return
            event = self._seen(item)
            if event is not None:
                yield event

    def _seen(self, change: _Change) -> WatchEvent | None:
        """The event as this watcher's selectors show it (None: not shown).

        As the API server's watch cache: a change to an object that matched before and no
        longer does is DELETED, one to an object that comes to match is ADDED.
        """
        event_type, body, before = change
        obj = orjson.loads(body)
        shown = obj if self.shape is None else self.shape(obj)
        if self._match is None:
            return WatchEvent(event_type, shown)
        now = self._match(obj)
        if event_type != "MODIFIED":
            return WatchEvent(event_type, shown) if now else None
        was = before is not None and self._match(orjson.loads(before))
        if now:
            return WatchEvent("MODIFIED" if was else "ADDED", shown)
        return WatchEvent("DELETED", shown) if was else None

    def stop(self) -> None:
        """Ends iteration, also for a thread blocked waiting for the next event."""
        if self._stopped:
            return
        self._stopped = True
        self._hub.unregister(self)
        self.queue.put(_STOP)


class WatchHub:
    """The watch side of one store: the bounded event history and the registered watchers.

    The store owns the hub and calls its ``*_locked`` methods under the store's lock, which
    the hub is given so that a watcher stopping in its own thread unregisters under it too.
    ``history`` bounds the events kept for watches resuming from a resourceVersion.
    """

    def __init__(self, lock: threading.Lock, history: int) -> None:
        self._lock = lock
        self._history: deque[_Event] = deque(maxlen=max(history, 0))
        self._watchers: dict[str, tuple[EmbeddedWatch, ...]] = {}

    def emit_locked(
        self, rv: int, key: Key, event_type: EventType, body: bytes, before: bytes | None = None
    ) -> None:
        """Fan-out under the lock keeps every watcher's order equal to commit order; a put
        into a ``SimpleQueue`` never blocks. ``before`` is the object's previous body (for a
        watcher's selectors); it is kept only for MODIFIED events."""
        if event_type != "MODIFIED":
            before = None
        self._history.append((rv, key[0], key[1], event_type, body, before))
        change: _Change = (event_type, body, before)
        for watcher in self._watchers.get(key[0], ()):
            if watcher.namespace is None or watcher.namespace == key[1]:
                watcher.queue.put(change)

    def watch_locked(
        self,
        rkey: str,
        ns: str | None,
        since: int | None,
        stored: Mapping[tuple[str, str], Record],
        rv: int,
        match: FieldMatch | None = None,
    ) -> EmbeddedWatch:
        """A registered watcher of ``rkey`` in ``ns`` (None: every namespace).

        Without ``since`` it starts with ``stored`` (the resource's objects) as ADDED events;
        with it, with the history after ``since``, or it is Gone if that is older than the
        history holds. ``rv`` is the store's current resourceVersion.
        """
        if since is None:
            backlog = _snapshot(stored, ns)
        else:
            floor = self._history[0][0] - 1 if self._history else rv
            if since < floor:
                gone = f"too old resource version: {since} ({floor})"
                return EmbeddedWatch(self, rkey, ns, [], gone=gone)
            backlog = self._replay_locked(rkey, ns, since, floor)
        watcher = EmbeddedWatch(self, rkey, ns, backlog, match=match)
        self._watchers[rkey] = (*self._watchers.get(rkey, ()), watcher)
        return watcher

    def watchers_locked(self) -> list[EmbeddedWatch]:
        """Every registered watcher, e.g. to stop them all once the lock is released."""
        return [w for group in self._watchers.values() for w in group]

    def unregister(self, watcher: EmbeddedWatch) -> None:
        with self._lock:
            group = self._watchers.get(watcher.resource_key, ())
            self._watchers[watcher.resource_key] = tuple(w for w in group if w is not watcher)

    def _replay_locked(self, rkey: str, ns: str | None, since: int, floor: int) -> list[_Change]:
        """History versions are consecutive, so the first event after ``since`` is at a known
        index."""
        start = max(since - floor, 0)
        return [
            (event_type, body, before)
            for rv, event_rkey, event_ns, event_type, body, before in itertools.islice(
                self._history, start, None
            )
            if rv > since and event_rkey == rkey and ns in (None, event_ns)
        ]


def _snapshot(stored: Mapping[tuple[str, str], Record], ns: str | None) -> list[_Change]:
    items = sorted(stored.items())
    return [("ADDED", body, None) for (obj_ns, _), (_, body) in items if ns in (None, obj_ns)]


def parse_version(resource_version: str) -> int | None:
    """Where a watch starts: None for the current state ("" or "0"), else the version."""
    if resource_version in ("", "0"):
        return None
    try:
        return int(resource_version)
    except ValueError:
        raise Invalid(f"invalid resourceVersion {resource_version!r}") from None
