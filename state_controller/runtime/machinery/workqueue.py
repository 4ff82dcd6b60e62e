"""A work queue with the semantics of client-go's ``util/workqueue``.

Controllers key their work by object (``namespace/name``), so the queue is built around
three guarantees that make reconcile loops correct without extra locking:

- an item waiting in the queue is never queued twice (many events, one reconcile);
- an item is never handed to two workers at once: adding an item that is being processed
  only marks it *dirty*, and it is queued again when its worker calls :meth:`done`;
- delayed adds (``add_after``) and per-item exponential back-off (``add_rate_limited``)
  feed the same de-duplicated queue.

One lock with two conditions (ready items, timer) keeps the hot path to a few set and deque
operations; a single timer thread, started on the first delayed add, moves due items in.

Two deviations from client-go:

- Items whose time came (a delayed add, a poll of work under way on a machine, work that
  goes on at once) are served before items added by events, in a lane of their own: a poll
  is due *now*, because the machine moved on at that time, while an event's item only has
  to be reconciled soon. With
  one FIFO, a burst of events (a thousand Hosts patched at once) held every due poll behind
  it for seconds, and a step shorter than that wait never reached the history. So that
  events are never starved, one event item is served after every :data:`DUE_BURST` due ones
  while both wait. An item already waiting for an event that comes due moves to the due
  lane (it is still queued once). With ``event_limit``, at most that many event items are
  processed at once, so that a worker is free when a poll comes due in a burst of events
  (the controller keeps one of its workers so).
- After :meth:`WorkQueue.shutdown`, :meth:`WorkQueue.get` returns ``None`` at once even if
  items remain (client-go drains them first), so workers stop promptly when the controller
  stops.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

T = TypeVar("T", bound=Hashable)

_MAX_BACKOFF_EXPONENT = 64  # beyond this, base * 2**n is above any sane max_delay anyway

DUE, EVENT = 0, 1  # the lanes, in the order they are served
DUE_BURST = 4  # due items served in a row while event items wait, before one of those


class QueueMetricsSink(Protocol):
    """Receives what controller-runtime's ``workqueue_*`` metrics are made of, for each
    kind of item (the queue's ``kind_of``: one queue carries several kinds of key, and
    each is shown as a queue of its own, as controller-runtime shows one per controller).

    Called with the queue's lock held, so implementations must be cheap and must not call
    back into the queue; ``depth`` (of that kind) is passed so they never need to.
    """

    def added(self, kind: str, depth: int) -> None:
        """An item was queued for processing (``workqueue_adds_total``, ``workqueue_depth``)."""

    def got(self, kind: str, wait_seconds: float, depth: int) -> None:
        """A worker took an item that waited ``wait_seconds`` (``queue_duration_seconds``)."""

    def finished(self, kind: str, work_seconds: float) -> None:
        """A worker finished an item after ``work_seconds`` (``work_duration_seconds``)."""

    def retried(self, kind: str) -> None:
        """An item was re-added after a delay (``workqueue_retries_total``)."""


class NoMetrics:
    """The default sink: records nothing."""

    def added(self, kind: str, depth: int) -> None:
        pass

    def got(self, kind: str, wait_seconds: float, depth: int) -> None:
        pass

    def finished(self, kind: str, work_seconds: float) -> None:
        pass

    def retried(self, kind: str) -> None:
        pass


class WorkQueue(Generic[T]):
    """De-duplicating, delaying, rate-limited work queue (see the module docstring)."""

    def __init__(
        self,
        *,
        base_delay: float = 0.005,
        max_delay: float = 1000.0,
        sink: QueueMetricsSink | None = None,
        name: str = "",
        kind_of: Callable[[T], str] | None = None,
        event_limit: int | None = None,
    ) -> None:
        self.name = name
        self._event_limit = event_limit  # event items processed at once, at most
        self._events_processing = 0
        self._event_items: set[T] = set()  # those being processed
        self.kind_of: Callable[[T], str] = kind_of or (lambda _: name)
        self._depths: Counter[str] = Counter()  # items ready, by kind
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._metrics: QueueMetricsSink = sink or NoMetrics()
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._timer_wakeup = threading.Condition(self._lock)
        # each lane's entries; an entry is live while its item is dirty in that lane and not
        # being processed (one moved to the due lane leaves a stale entry, skipped when met)
        self._lanes: tuple[deque[T], deque[T]] = (deque(), deque())
        self._ready_in = [0, 0]  # live entries, by lane
        self._due_streak = 0  # due items served in a row while event items waited
        self._dirty: dict[T, int] = {}  # item -> the lane it is (or will be) queued in
        self._processing: dict[T, float] = {}  # item -> when a worker took it
        self._added_at: dict[T, float] = {}  # item -> when it was first added (queue duration)
        self._waiting: dict[T, tuple[float, int]] = {}  # item -> (due, seq) of its live entry
        self._heap: list[tuple[float, int, T]] = []
        self._seq = itertools.count()
        self._failures: dict[T, int] = {}
        self._shutting_down = False
        self._timer: threading.Thread | None = None

    # -- the basic queue -------------------------------------------------------------------

    def add(self, item: T) -> None:
        """Queues ``item`` unless it is already waiting; while it is processed, marks it dirty."""
        with self._lock:
            self._add_locked(item, time.monotonic(), EVENT)

    def _add_locked(self, item: T, now: float, lane: int) -> None:
        if self._shutting_down:
            return
        queued_in = self._dirty.get(item)
        if queued_in is not None:
            if lane < queued_in:  # came due while waiting for an event: served sooner
                self._dirty[item] = lane
                if item not in self._processing:
                    self._ready_in[queued_in] -= 1
                    self._ready_in[lane] += 1
                    self._lanes[lane].append(item)
            return
        self._dirty[item] = lane
        self._added_at.setdefault(item, now)
        if item in self._processing:
            return  # queued again by done()
        self._queued(item, lane)
        self._ready.notify()

    def _queued(self, item: T, lane: int) -> None:
        kind = self.kind_of(item)
        self._lanes[lane].append(item)
        self._ready_in[lane] += 1
        self._depths[kind] += 1
        self._metrics.added(kind, self._depths[kind])

    def _events_allowed(self) -> bool:
        limit = self._event_limit
        return limit is None or self._events_processing < limit

    def _takeable(self) -> bool:
        due, events = self._ready_in
        return bool(due or (events and self._events_allowed()))

    def _take_locked(self) -> T:
        """The next live entry: from the due lane, but an event's after each burst (when
        one may be processed now)."""
        due, events = self._ready_in
        events = events if self._events_allowed() else 0
        if due and (not events or self._due_streak < DUE_BURST):
            lane, self._due_streak = DUE, self._due_streak + 1
        else:
            lane, self._due_streak = EVENT, 0
        entries = self._lanes[lane]
        while True:
            item = entries.popleft()
            if self._dirty.get(item) == lane and item not in self._processing:
                self._ready_in[lane] -= 1
                return item

    def get(self, timeout: float | None = None) -> T | None:
        """The next item, blocking; ``None`` on timeout or once the queue is shut down."""
        with self._lock:
            if not self._wait_ready(timeout):
                return None
            item = self._take_locked()
            kind = self.kind_of(item)
            self._depths[kind] -= 1
            now = time.monotonic()
            if self._dirty.pop(item) == EVENT:
                self._events_processing += 1
                self._event_items.add(item)
            self._processing[item] = now
            self._metrics.got(kind, now - self._added_at.pop(item, now), self._depths[kind])
            return item

    def _wait_ready(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._takeable() and not self._shutting_down:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            self._ready.wait(remaining)
        return not self._shutting_down

    def done(self, item: T) -> None:
        """Marks the worker finished; an item added meanwhile is queued again now."""
        with self._lock:
            started = self._processing.pop(item, None)
            if item in self._event_items:
                self._event_items.discard(item)
                self._events_processing -= 1
                if self._ready_in[EVENT]:
                    self._ready.notify()  # an event item may be taken again
            if started is not None:
                self._metrics.finished(self.kind_of(item), time.monotonic() - started)
            lane = self._dirty.get(item)
            if lane is not None and not self._shutting_down:
                self._queued(item, lane)
                self._ready.notify()

    def __len__(self) -> int:
        """Items ready to be processed (``workqueue_depth``)."""
        return self.ready_count()

    def ready_count(self) -> int:
        return self._ready_in[DUE] + self._ready_in[EVENT]

    def idle(self) -> bool:
        """No item ready and none being processed, read at one moment under the lock (a
        worker takes an item and marks it processing in one step)."""
        with self._lock:
            return not self.ready_count() and not self._processing

    # -- delays and rate limiting ----------------------------------------------------------

    def add_after(self, item: T, delay_seconds: float) -> None:
        """Adds ``item`` after a delay; if it is already scheduled, the earlier time wins."""
        with self._lock:
            if self._shutting_down:
                return
            now = time.monotonic()
            if delay_seconds <= 0:
                self._add_locked(item, now, DUE)  # work under way that goes on at once
                return
            due = now + delay_seconds
            scheduled = self._waiting.get(item)
            if scheduled is not None and scheduled[0] <= due:
                return
            entry = (due, next(self._seq), item)
            self._waiting[item] = entry[:2]
            heapq.heappush(self._heap, entry)
            self._ensure_timer_locked()
            if self._heap[0] is entry:
                self._timer_wakeup.notify()

    def add_rate_limited(self, item: T) -> None:
        """Adds ``item`` after ``base_delay * 2**failures`` (capped); counts one more failure."""
        with self._lock:
            failures = self._failures.get(item, 0)
            self._failures[item] = failures + 1
            self._metrics.retried(
                self.kind_of(item)
            )  # as client-go: a retry is a rate-limited add, not a delay
        exponent = min(failures, _MAX_BACKOFF_EXPONENT)
        self.add_after(item, min(self._base_delay * 2**exponent, self._max_delay))

    def forget(self, item: T) -> None:
        """Resets the item's back-off, typically after a successful reconcile."""
        if item not in self._failures:  # the common case needs no lock (a dict read is atomic)
            return
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        with self._lock:
            return self._failures.get(item, 0)

    def _ensure_timer_locked(self) -> None:
        if self._timer is None:
            name = f"workqueue-timer-{self.name}" if self.name else "workqueue-timer"
            self._timer = threading.Thread(target=self._run_timer, name=name, daemon=True)
            self._timer.start()

    def _run_timer(self) -> None:
        """Moves due items into the queue; sleeps until the earliest due time or a wake-up."""
        with self._lock:
            while not self._shutting_down:
                now = time.monotonic()
                while self._heap and self._heap[0][0] <= now:
                    due, seq, item = heapq.heappop(self._heap)
                    if self._waiting.get(item) == (due, seq):
                        del self._waiting[item]
                        self._add_locked(item, now, DUE)
                timeout = self._heap[0][0] - now if self._heap else None
                self._timer_wakeup.wait(timeout)

    # -- shutdown and scrape-time metrics --------------------------------------------------

    def shutdown(self) -> None:
        """Wakes every getter (they get ``None``) and stops the timer thread."""
        with self._lock:
            self._shutting_down = True
            self._ready.notify_all()
            self._timer_wakeup.notify_all()
            timer = self._timer
        if timer is not None and timer is not threading.current_thread():
            timer.join()

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def _started(self, kind: str | None) -> list[float]:
        with self._lock:
            processing = list(self._processing.items())
        return [at for item, at in processing if kind is None or self.kind_of(item) == kind]

    def unfinished_work_seconds(self, kind: str | None = None) -> float:
        """Sum of the running time of items (of one kind) being processed, at scrape time."""
        now = time.monotonic()
        return sum(now - t for t in self._started(kind))

    def longest_running_seconds(self, kind: str | None = None) -> float:
        """Running time of the longest item (of one kind) being processed, at scrape time."""
        earliest = min(self._started(kind), default=None)
        return 0.0 if earliest is None else time.monotonic() - earliest
