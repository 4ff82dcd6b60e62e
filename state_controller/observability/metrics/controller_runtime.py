"""controller-runtime's families, under its names so that existing dashboards work
unchanged: reconciles, workers and the work queue, each labelled with the kind of key it
is about (``controller`` and ``name`` = host, node, baremetalhost or pool:
:class:`~state_controller.runtime.machinery.keys.Kind`). One queue and one pool of workers serve
every kind; each kind is shown as controller-runtime shows one controller and its queue,
and the workers' own count (``max_concurrent_reconciles``) is the whole pool's, under
each kind, since any of them may take every worker."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from ...runtime.machinery.keys import Kind
from .children import Children

RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5,
    0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10,
    15, 20, 25, 30, 40, 50, 60,
)  # fmt: skip
QUEUE_BUCKETS = tuple(10.0**e for e in range(-8, 2))
RECONCILE_RESULTS = ("success", "error", "requeue", "requeue_after")


class ControllerRuntimeMetrics:
    """``controller_runtime_*`` and ``workqueue_*`` by kind of key; the work queue's sink
    (:meth:`added`, :meth:`got`, :meth:`finished`, :meth:`retried`)."""

    def __init__(self, registry: CollectorRegistry, child: Children) -> None:
        r = registry
        self._child = child
        self.reconcile_total = Counter(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=r,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=RECONCILE_BUCKETS,
            registry=r,
        )
        self.max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ["controller"],
            registry=r,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ["controller"],
            registry=r,
        )
        self.queue_depth = Gauge(
            "workqueue_depth", "Current depth of workqueue", ["controller", "name"], registry=r
        )
        self.queue_adds = Counter(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            ["controller", "name"],
            registry=r,
        )
        self.queue_latency = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["controller", "name"],
            buckets=QUEUE_BUCKETS,
            registry=r,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            ["controller", "name"],
            buckets=QUEUE_BUCKETS,
            registry=r,
        )
        self.queue_retries = Counter(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            ["controller", "name"],
            registry=r,
        )
        self.unfinished = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration.",
            ["controller", "name"],
            registry=r,
        )
        self.longest = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            ["controller", "name"],
            registry=r,
        )

    def zero_error_series(self) -> None:
        """Every reconcile result and error series, and every queue's series, of every kind
        start at 0 (see :meth:`.Metrics.zero_error_series`): a kind never queued yet shows
        an empty queue, not no data."""
        for kind in Kind:
            for result in RECONCILE_RESULTS:
                self._child(self.reconcile_total, kind, result)
            self._child(self.reconcile_errors, kind)
            self._child(self.reconcile_time, kind)
            for family in (
                self.queue_depth,
                self.queue_adds,
                self.queue_latency,
                self.work_duration,
                self.queue_retries,
            ):
                self._child(family, kind, kind)

    def watch_workers(
        self,
        workers: int,
        active: Callable[[str], float],
        unfinished: Callable[[str], float],
        longest: Callable[[str], float],
    ) -> None:
        """Read at scrape time, for each kind: the workers busy with it, and its work under
        way in the queue."""
        for kind in Kind:
            self.max_concurrent.labels(kind).set(workers)
            self.active_workers.labels(kind).set_function(partial(active, kind))
            self.unfinished.labels(kind, kind).set_function(partial(unfinished, kind))
            self.longest.labels(kind, kind).set_function(partial(longest, kind))

    def reconciled(
        self, kind: str, result: str, seconds: float, exemplar: dict[str, str] | None = None
    ) -> None:
        """One reconcile of a key of ``kind``; ``exemplar``: its trace, shown in the
        OpenMetrics exposition."""
        self._child(self.reconcile_total, kind, result).inc()
        if result == "error":
            self._child(self.reconcile_errors, kind).inc()
        self._child(self.reconcile_time, kind).observe(seconds, exemplar)

    # -- QueueMetricsSink ---------------------------------------------------------------

    def added(self, kind: str, depth: int) -> None:
        self._child(self.queue_adds, kind, kind).inc()  # the queue is named after its kind
        self._child(self.queue_depth, kind, kind).set(depth)

    def got(self, kind: str, wait_seconds: float, depth: int) -> None:
        self._child(self.queue_latency, kind, kind).observe(wait_seconds)
        self._child(self.queue_depth, kind, kind).set(depth)

    def finished(self, kind: str, work_seconds: float) -> None:
        self._child(self.work_duration, kind, kind).observe(work_seconds)

    def retried(self, kind: str) -> None:
        self._child(self.queue_retries, kind, kind).inc()
