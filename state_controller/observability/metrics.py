"""Prometheus metrics: ``hoststate_*`` for hosts, controller-runtime names for machinery.

The names are part of the API: dashboards and alerts use them. Per-host
series are computed from the books when Prometheus scrapes (one series per
host, whatever its state), so a host that changes state never leaves a stale
series behind, and nothing is updated on the hot path but counters.
"""

from __future__ import annotations

import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..api.states import ProvisioningState
from ..api.updates import IN_PROGRESS, UPDATE_COMPLETE, UPDATE_DEGRADED, UpdateStep
from ..books.book import Book
from ..books.chapters import UPDATE_CHAPTER
from ..books.journal import STUCK, Notice
from ..books.projections import phase_of
from ..books.records import Transition
from ..books.stuck import StuckPolicy

STATE_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200)
LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5,
    0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10,
    15, 20, 25, 30, 40, 50, 60,
)  # fmt: skip
QUEUE_BUCKETS = tuple(10.0**e for e in range(-8, 2))
STEP_NAMES = frozenset(s.value for s in (*IN_PROGRESS, UpdateStep.DEGRADED))


class BooksCollector(Collector):
    """Per-host and per-state gauges, read from the books at scrape time."""

    def __init__(
        self,
        books: Callable[[], Mapping[str, Book]],
        stuck: StuckPolicy,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.books = books
        self.stuck = stuck
        self.clock = clock

    def describe(self) -> Iterable[Any]:
        return []  # collected lazily; no fixed descriptions needed at registration

    def collect(self) -> Iterable[Any]:
        now = self.clock()
        per_state: Tally[str] = Tally({s.value: 0 for s in ProvisioningState})
        stuck_per_state: Tally[str] = Tally()
        entered = GaugeMetricFamily(
            "hoststate_host_state_entered_timestamp_seconds",
            "When each host entered its current provisioning state (one series per host).",
            labels=["namespace", "host", "state", "phase"],
        )
        stuck_hosts = GaugeMetricFamily(
            "hoststate_host_stuck",
            "1 for each host that is in its state longer than allowed.",
            labels=["namespace", "host", "state"],
        )
        errors = GaugeMetricFamily(
            "hoststate_host_error_count",
            "Consecutive errors of each host that is in error.",
            labels=["namespace", "host", "type"],
        )
        per_step: Tally[str] = Tally({s.value: 0 for s in UpdateStep})
        step_entered = GaugeMetricFamily(
            "hoststate_node_update_step_entered_timestamp_seconds",
            "When each followed Node entered its current update step (one series per node).",
            labels=["namespace", "hoststate", "node", "step"],
        )
        for key, book in list(self.books().items()):
            namespace, _, name = key.partition("/")
            update = book.node_update()  # immutable, like the cursor
            if update is not None:
                per_step[update.step.value] += 1
                node = book.facts.node or name
                step_entered.add_metric(
                    [namespace, name, node, update.step.value], update.entered_at
                )
            if book.node_only:
                continue  # a Node with no Host has no provisioning to report
            cur = book.cursor  # one immutable snapshot: state, entered-at and errors agree
            per_state[cur.state.value] += 1
            entered.add_metric(
                [namespace, name, cur.state.value, phase_of(cur, book.seen).value], cur.entered_at
            )
            if self.stuck.is_stuck(cur, now):
                stuck_per_state[cur.state.value] += 1
                stuck_hosts.add_metric([namespace, name, cur.state.value], 1)
            if cur.error_type is not None:
                errors.add_metric([namespace, name, cur.error_type.value], cur.error_count)
        hosts = GaugeMetricFamily(
            "hoststate_hosts", "Hosts per provisioning state.", labels=["state"]
        )
        for state, count in sorted(per_state.items()):
            hosts.add_metric([state], count)
        stuck = GaugeMetricFamily(
            "hoststate_stuck_hosts", "Hosts stuck, per provisioning state.", labels=["state"]
        )
        for state in sorted(per_state):
            stuck.add_metric([state], stuck_per_state.get(state, 0))
        steps = GaugeMetricFamily(
            "hoststate_node_update_steps", "Followed Nodes per update step.", labels=["step"]
        )
        for step, count in sorted(per_step.items()):
            steps.add_metric([step], count)
        return [hosts, entered, stuck, stuck_hosts, errors, steps, step_entered]


class Metrics:
    """Every metric of the controller, in one registry."""

    def __init__(self, registry: CollectorRegistry | None = None, controller: str = "host") -> None:
        self.registry = registry or CollectorRegistry()
        self.controller = controller
        r = self.registry
        self.transitions = Counter(
            "hoststate_transitions", "Provisioning transitions.", ["from", "to"], registry=r
        )
        self.state_seconds = Histogram(
            "hoststate_state_duration_seconds",
            "Time hosts spent in a provisioning state, observed when they leave it.",
            ["state"],
            buckets=STATE_BUCKETS,
            registry=r,
        )
        self.errors = Counter("hoststate_errors", "Errors by type.", ["type"], registry=r)
        self.stuck_total = Counter(
            "hoststate_stuck_detections", "Times a host was found stuck.", ["state"], registry=r
        )
        self.provisioner_requests = Counter(
            "hoststate_provisioner_requests",
            "Provisioner calls by operation and result.",
            ["backend", "operation", "result"],
            registry=r,
        )
        self.provisioner_latency = Histogram(
            "hoststate_provisioner_request_duration_seconds",
            "Latency of provisioner calls.",
            ["backend", "operation"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.status_writes = Counter(
            "hoststate_status_writes",
            "Status writes by resource and outcome (written, conflict, unchanged).",
            ["resource", "outcome"],
            registry=r,
        )
        self.events = Counter(
            "hoststate_events", "Kubernetes Events emitted.", ["type", "reason"], registry=r
        )
        self.step_seconds = Histogram(
            "hoststate_node_update_step_duration_seconds",
            "Time Nodes spent in an update step, observed when they leave it.",
            ["step"],
            buckets=STATE_BUCKETS,
            registry=r,
        )
        self.updates = Counter(
            "hoststate_node_updates",
            "Node updates that ended, by outcome (completed, degraded).",
            ["outcome"],
            registry=r,
        )
        # controller-runtime names, so existing controller dashboards work unchanged
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
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        c = controller
        self._q = (c, c)
        self._depth = self.queue_depth.labels(*self._q)
        self._adds = self.queue_adds.labels(*self._q)
        self._qlat = self.queue_latency.labels(*self._q)
        self._work = self.work_duration.labels(*self._q)
        self._retries = self.queue_retries.labels(*self._q)
        self._rtime = self.reconcile_time.labels(c)

    def child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, memoised: it is called for every transition."""
        key = (id(metric), labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    # -- wiring -------------------------------------------------------------------------

    def watch_books(self, books: Callable[[], Mapping[str, Book]], stuck: StuckPolicy) -> None:
        self.registry.register(BooksCollector(books, stuck))

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

    # -- observations -------------------------------------------------------------------

    def transition(self, record: Transition) -> None:
        if record.chapter == UPDATE_CHAPTER:
            self._update_transition(record)  # update steps are not provisioning states
            return
        if record.error_type is not None:
            self.child(self.errors, record.error_type.value).inc()
        if record.from_state != record.to_state:
            self.child(self.transitions, record.from_state, record.to_state).inc()
            if record.time_in_previous_state is not None:
                seconds = record.time_in_previous_state
                self.child(self.state_seconds, record.from_state).observe(seconds)

    def _update_transition(self, record: Transition) -> None:
        if not record.recorded:
            return
        if record.time_in_previous_state is not None and record.from_state in STEP_NAMES:
            self.child(self.step_seconds, record.from_state).observe(record.time_in_previous_state)
        if record.reason == UPDATE_COMPLETE:
            self.child(self.updates, "completed").inc()
        elif record.reason == UPDATE_DEGRADED:
            self.child(self.updates, "degraded").inc()

    def notice(self, notice: Notice) -> None:
        if notice.reason == STUCK:
            self.child(self.stuck_total, notice.state).inc()

    def reconciled(self, result: str, seconds: float) -> None:
        self.child(self.reconcile_total, self.controller, result).inc()
        if result == "error":
            self.child(self.reconcile_errors, self.controller).inc()
        self._rtime.observe(seconds)
