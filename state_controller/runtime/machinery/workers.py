"""The workers: threads that take keys off the queue and reconcile each by its kind.

As controller-runtime's controller: a key is never reconciled by two workers at once
(the queue's promise), an error is retried with the key's backoff, a result says when to
look again, and every reconcile is counted and traced under the kind of its key. What
each kind is reconciled by, and where its book is, is one table (:class:`KindOfBook` by
:class:`~.keys.Kind`) handed in by the manager that assembled the reconcilers.

The workers also keep, for each key whose object the cache holds, the newest
resourceVersion a finished reconcile of it read: :meth:`Workers.reconciled` answers
"has the change I wrote been acted on?" for tests and the demo without a sleep.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ...books.book import Book
from .keys import Kind, parse
from .outages import log_failure
from .reporting import NOWHERE, Reporter, Where
from .results import ReconcileResult
from .workqueue import WorkQueue

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class KindOfBook:
    """One kind of queue key: what reconciles it, and what a worker reads of it around
    that (its book, for the span; its object's cached version, for
    :meth:`Workers.reconciled`)."""

    reconcile: Callable[[str], ReconcileResult]
    book: Callable[[str], Book | None]
    version: Callable[[str], int | None]


class Workers:
    def __init__(
        self,
        queue: WorkQueue[str],
        kinds: Mapping[Kind, KindOfBook],
        reporter: Reporter,
        *,
        count: int,
    ) -> None:
        self.queue = queue
        self.kinds = kinds
        self.reporter = reporter
        self.count = count
        self.active: Counter[str] = Counter()  # by kind of the key worked on
        self.reconciles = 0
        # key -> the newest resourceVersion a finished reconcile of it read from the cache,
        # for the objects the cache holds (a reconcile that finds one gone drops its key)
        self._reconciled: dict[str, int] = {}
        self._lock = threading.Lock()  # += on an attribute is not atomic across threads
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for index in range(self.count):
            worker = threading.Thread(target=self._work, name=f"worker-{index}", daemon=True)
            worker.start()
            self._threads.append(worker)

    def join(self, timeout: float) -> None:
        """Wait for the workers to end (after the queue was shut down)."""
        for worker in self._threads:
            worker.join(timeout=timeout)

    # -- what was reconciled ------------------------------------------------------------

    def reconciled(self, key: str, resource_version: str) -> bool:
        """Whether a reconcile of ``key`` has finished that read the object at
        ``resource_version`` or later from the cache: the write under test was seen and
        acted on (or deliberately not)."""
        with self._lock:
            done = self._reconciled.get(key, -1)
        return done >= int(resource_version)  # integers, as the informer relies on too

    def remembered(self) -> set[str]:
        """The keys whose reconciled version is kept: those whose object the cache held
        at their last reconcile."""
        with self._lock:
            return set(self._reconciled)

    def where(self, key: str) -> Where:
        """The state (and update step) of the book a key reconciles, for its span."""
        kind, name = parse(key)
        book = self.kinds[kind].book(name)
        if book is None:
            return Where()
        update = book.node_update()
        return Where(book.cursor.state.value, update.step.value if update is not None else "")

    # -- the loop -----------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            self._one(key)

    def _one(self, key: str) -> None:
        kind, name = parse(key)
        kind_name, handler = kind.value, self.kinds[kind]
        with self._lock:
            self.active[kind_name] += 1
        seen = handler.version(name)  # what this reconcile reads, at the latest
        started = time.perf_counter()
        with self.reporter.reconcile_span(key) as span:
            before = self.where(key) if span.recording else NOWHERE
            failure = None
            try:
                outcome = handler.reconcile(name)
            except Exception as err:
                log_failure(
                    log,
                    err,
                    "reconcile of %s failed; retrying with backoff",
                    key,
                    extra={"host": key, "state": self.where(key).state},
                )
                self.queue.add_rate_limited(key)
                result, failure = "error", err
            else:
                result = self._requeue(key, outcome)
            finally:
                with self._lock:
                    self.active[kind_name] -= 1
                    self.reconciles += 1
                    if seen is None:  # gone from the cache: nothing left to tell
                        self._reconciled.pop(key, None)
                    elif seen > self._reconciled.get(key, -1):
                        self._reconciled[key] = seen
                self.queue.done(key)
            if span.recording:
                span.finish(result, before, self.where(key), failure)
            self.reporter.reconciled(kind_name, result, time.perf_counter() - started)

    def _requeue(self, key: str, outcome: ReconcileResult) -> str:
        result = "success"
        if outcome.rate_limited:
            self.queue.add_rate_limited(key)
            result = "requeue"
        else:
            self.queue.forget(key)
            if outcome.requeue_after is not None:
                self.queue.add_after(key, outcome.requeue_after)
                result = "requeue" if outcome.requeue_after <= 0 else "requeue_after"
        if outcome.wake_after is not None:
            self.queue.add_after(key, outcome.wake_after + 0.001)
        return result
