"""controller-runtime's families, under its names so that existing dashboards work
unchanged: reconciles, workers and the work queue, labelled with the controller."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from .children import Children

RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5,
    0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10,
    15, 20, 25, 30, 40, 50, 60,
)  # fmt: skip
QUEUE_BUCKETS = tuple(10.0**e for e in range(-8, 2))
RECONCILE_RESULTS = ("success", "error", "requeue", "requeue_after")


class ControllerRuntimeMetrics:
    """``controller_runtime_*`` and ``workqueue_*`` of one controller; the work queue's
    sink (:meth:`added`, :meth:`got`, :meth:`finished`, :meth:`retried`)."""

    def __init__(self, registry: CollectorRegistry, controller: str, child: Children) -> None:
        r = registry
        self.controller = controller
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
        c = controller
        self._q = (c, c)  # the queue is named after its controller
        self._depth = self.queue_depth.labels(*self._q)
        self._adds = self.queue_adds.labels(*self._q)
        self._qlat = self.queue_latency.labels(*self._q)
        self._work = self.work_duration.labels(*self._q)
        self._retries = self.queue_retries.labels(*self._q)
        self._rtime = self.reconcile_time.labels(c)

    def zero_error_series(self) -> None:
        """Every reconcile result and error series starts at 0 (see
        :meth:`.Metrics.zero_error_series`)."""
        for result in RECONCILE_RESULTS:
            self._child(self.reconcile_total, self.controller, result)
        self._child(self.reconcile_errors, self.controller)

    def watch_workers(
        self,
        workers: int,
        active: Callable[[], float],
        unfinished: Callable[[], float],
        longest: Callable[[], float],
    ) -> None:
        self.max_concurrent.labels(self.controller).set(workers)
        self.active_workers.labels(self.controller).set_function(active)
        self.unfinished.labels(*self._q).set_function(unfinished)
        self.longest.labels(*self._q).set_function(longest)

    def reconciled(
        self, result: str, seconds: float, exemplar: dict[str, str] | None = None
    ) -> None:
        """One reconcile; ``exemplar``: its trace, shown in the OpenMetrics exposition."""
        self._child(self.reconcile_total, self.controller, result).inc()
        if result == "error":
            self._child(self.reconcile_errors, self.controller).inc()
        self._rtime.observe(seconds, exemplar)

    # -- QueueMetricsSink ---------------------------------------------------------------

    def added(self, depth: int) -> None:
        self._adds.inc()
        self._depth.set(depth)

    def got(self, wait_seconds: float, depth: int) -> None:
        self._qlat.observe(wait_seconds)
        self._depth.set(depth)

    def finished(self, work_seconds: float) -> None:
        self._work.observe(work_seconds)

    def retried(self) -> None:
        self._retries.inc()
