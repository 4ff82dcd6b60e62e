"""Prometheus metrics: ``hoststate_*`` for hosts, controller-runtime names for machinery.

The names are part of the API: dashboards and alerts use them. Counters and
histograms are updated as the journal is reported; what the books say now (one
series per host) is read at scrape time by the collectors of ``collectors.py``.

One module on purpose: every family the controller registers is declared here, in
one registry, with the journal entries that move each; the catalogue (docs/metrics.md)
is generated from it, so a family is added in one place.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)

from ..api.hoststate import Mode
from ..api.servicing import (
    SERVICE_IN_PROGRESS,
    SERVICING_COMPLETE,
    SERVICING_FAILED,
    SERVICING_WITHDRAWN,
)
from ..api.states import TRANSIENT_STATES, ErrorType, ProvisioningState
from ..api.timefmt import parse_rfc3339
from ..api.updates import IN_PROGRESS, UPDATE_COMPLETE, UPDATE_DEGRADED, UpdateStep
from ..books.book import Book
from ..books.chapters import SERVICING_CHAPTER, UPDATE_CHAPTER
from ..books.journal import STUCK, Notice
from ..books.records import POWER_CYCLED, REMEDIATED, Transition
from ..books.stuck import StuckPolicy
from ..health.share import controller_version
from ..remediation.situation import EXHAUSTED, HELD
from .collectors import BooksCollector, ControllerCollector, PoolsCollector, state_label

STATE_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200)
LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5,
    0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10,
    15, 20, 25, 30, 40, 50, 60,
)  # fmt: skip
QUEUE_BUCKETS = tuple(10.0**e for e in range(-8, 2))
REST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)  # client-go's
STEP_NAMES = frozenset(s.value for s in (*IN_PROGRESS, UpdateStep.DEGRADED))
SERVICE_STEP_NAMES = frozenset(s.value for s in SERVICE_IN_PROGRESS)
# how a servicing run ended, by the record that ends it
SERVICING_OUTCOMES = {
    SERVICING_COMPLETE: "completed",
    SERVICING_FAILED: "failed",
    SERVICING_WITHDRAWN: "withdrawn",
}
RECONCILE_RESULTS = ("success", "error", "requeue", "requeue_after")
WRITTEN_RESOURCES = (
    "hosts",
    "hoststates",
    "nodepools",
    "hoststatecontrollers",
)  # whose status the controller writes
WRITE_OUTCOMES = ("written", "conflict", "unchanged")
PROVISIONING_DONE = (ProvisioningState.PROVISIONING.value, ProvisioningState.PROVISIONED.value)
UPDATE_OUTCOMES = {UPDATE_COMPLETE: "completed", UPDATE_DEGRADED: "degraded"}
# what remediation did, by the journal entry that tells it (records and notices)
REMEDIATION_OUTCOMES = {
    POWER_CYCLED: "power_cycled",
    REMEDIATED: "recovered",
    HELD: "held",
    EXHAUSTED: "exhausted",
}


CONTROLLER = "host"  # the controller label of the controller-runtime families


class Metrics:
    """Every metric of the controller, in one registry."""

    def __init__(
        self, registry: CollectorRegistry | None = None, controller: str = CONTROLLER
    ) -> None:
        # No ``*_created`` series beside every counter and histogram: client-go and
        # controller-runtime expose none, and they would double the series of each.
        disable_created_metrics()  # type: ignore[no-untyped-call]
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
        self.time_to_provisioned = Histogram(
            "hoststate_time_to_provisioned_seconds",
            "From a Host's creation to provisioned, observed whenever provisioning completes.",
            buckets=STATE_BUCKETS,
            registry=r,
        )
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
        self.step_stuck_total = Counter(
            "hoststate_node_update_stuck_detections",
            "Times a Node was found stuck in an update step.",
            ["step"],
            registry=r,
        )
        self.updates = Counter(
            "hoststate_node_updates",
            "Node updates that ended, by outcome (completed, degraded).",
            ["outcome"],
            registry=r,
        )
        self.service_step_seconds = Histogram(
            "hoststate_servicing_step_duration_seconds",
            "Time hosts spent in a servicing step, observed when they leave it.",
            ["step"],
            buckets=STATE_BUCKETS,
            registry=r,
        )
        self.service_stuck_total = Counter(
            "hoststate_servicing_stuck_detections",
            "Times a host was found stuck in a servicing step.",
            ["step"],
            registry=r,
        )
        self.servicings = Counter(
            "hoststate_servicings",
            "Servicing runs that ended, by outcome (completed, failed, withdrawn).",
            ["outcome"],
            registry=r,
        )
        self.remediations = Counter(
            "hoststate_remediations",
            "What remediation did, by outcome: power_cycled (an attempt made), recovered "
            "(the Node back after one), held (the pool too unhealthy), exhausted (every "
            "attempt made).",
            ["outcome"],
            registry=r,
        )
        self.build_info = Gauge(
            "hoststate_build_info",
            "Always 1; the labels say which build of the controller runs.",
            ["version", "python_version"],
            registry=r,
        )
        self.build_info.labels(controller_version(), platform.python_version()).set(1)
        self.mode = Gauge(
            "hoststate_controller_mode",
            "1 for the mode the controller runs in, 0 for the other: Bootstrap (state-controller "
            "bootstrap, before the cluster exists) or Cluster.",
            ["mode"],
            registry=r,
        )
        self.mode_since = Gauge(
            "hoststate_controller_mode_since_timestamp_seconds",
            "When the controller began to run in its mode (for bootstrap: when the state "
            "directory's bootstrap began, across restarts).",
            registry=r,
        )
        ProcessCollector(registry=r)  # process_cpu_seconds_total, process_resident_memory_bytes…
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        # client-go's and controller-runtime's names, so existing dashboards work unchanged
        self.rest_requests = Counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "host", "method"],
            registry=r,
        )
        self.rest_latency = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=REST_BUCKETS,
            registry=r,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ["name"],
            registry=r,
        )
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
        self._zero_error_series()
        c = controller
        self._q = (c, c)
        self._depth = self.queue_depth.labels(*self._q)
        self._adds = self.queue_adds.labels(*self._q)
        self._qlat = self.queue_latency.labels(*self._q)
        self._work = self.work_duration.labels(*self._q)
        self._retries = self.queue_retries.labels(*self._q)
        self._rtime = self.reconcile_time.labels(c)

    def _zero_error_series(self) -> None:
        """Every error and outcome series that can occur starts at 0, so an alert on its
        rate sees 0 (not "no data") before the first failure."""
        for result in RECONCILE_RESULTS:
            self.child(self.reconcile_total, self.controller, result)
        self.child(self.reconcile_errors, self.controller)
        for error in ErrorType:
            self.child(self.errors, error.value)
        for state in TRANSIENT_STATES:
            self.child(self.stuck_total, state.value)
        for step in STEP_NAMES:
            self.child(self.step_stuck_total, step)
        for outcome in UPDATE_OUTCOMES.values():
            self.child(self.updates, outcome)
        for outcome in REMEDIATION_OUTCOMES.values():
            self.child(self.remediations, outcome)
        for outcome in SERVICING_OUTCOMES.values():
            self.child(self.servicings, outcome)
        for service_step in SERVICE_STEP_NAMES:
            self.child(self.service_stuck_total, service_step)
        for resource in WRITTEN_RESOURCES:
            for written in WRITE_OUTCOMES:
                self.child(self.status_writes, resource, written)

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

    def watch_pools(self, pools: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        self.registry.register(PoolsCollector(pools))

    def watch_controller(self, status: Callable[[], Mapping[str, Any]]) -> None:
        self.registry.register(ControllerCollector(status))

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

    def running_in(self, mode: Mode, since: float) -> None:
        """``hoststate_controller_mode``: which mode, and since when."""
        for each in Mode:
            self.mode.labels(each.value).set(1 if each == mode else 0)
        self.mode_since.set(since)

    def leading(self, lease: str, leads: bool) -> None:
        """``leader_election_master_status``. A process that runs without leader election
        reconciles alone, so it reports itself leading: "no replica leads" then still
        means no controller reconciles."""
        self.leader.labels(lease).set(1 if leads else 0)

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

    def transition(self, record: Transition, created: str | None = None) -> None:
        """One journal transition; ``created``: the Host's creationTimestamp, for the time
        from creation to provisioned."""
        remedied = REMEDIATION_OUTCOMES.get(record.reason)
        if remedied is not None and record.recorded and not record.replayed:
            self.child(self.remediations, remedied).inc()
        if record.chapter == UPDATE_CHAPTER:
            self._update_transition(record)  # update steps are not provisioning states
            return
        if record.chapter == SERVICING_CHAPTER:
            self._service_transition(record)
            return
        if record.error_type is not None:
            self.child(self.errors, record.error_type.value).inc()
        if record.from_state != record.to_state:
            before = state_label(record.from_state)
            self.child(self.transitions, before, record.to_state).inc()
            if record.time_in_previous_state is not None:
                self.child(self.state_seconds, before).observe(record.time_in_previous_state)
            if record.recorded and (before, record.to_state) == PROVISIONING_DONE:
                since = parse_rfc3339(created)
                if since is not None and record.at >= since:
                    self.time_to_provisioned.observe(record.at - since)

    def _update_transition(self, record: Transition) -> None:
        if not record.recorded:
            return
        if record.time_in_previous_state is not None and record.from_state in STEP_NAMES:
            self.child(self.step_seconds, record.from_state).observe(record.time_in_previous_state)
        outcome = UPDATE_OUTCOMES.get(record.reason)
        if outcome is not None:
            self.child(self.updates, outcome).inc()

    def _service_transition(self, record: Transition) -> None:
        if not record.recorded:
            return
        spent = record.time_in_previous_state
        if spent is not None and record.from_state in SERVICE_STEP_NAMES:
            self.child(self.service_step_seconds, record.from_state).observe(spent)
        outcome = SERVICING_OUTCOMES.get(record.reason)
        if outcome is not None and not record.replayed:
            self.child(self.servicings, outcome).inc()

    def notice(self, notice: Notice) -> None:
        remedied = REMEDIATION_OUTCOMES.get(notice.reason)
        if remedied is not None:
            self.child(self.remediations, remedied).inc()
        if notice.reason != STUCK:
            return
        if notice.state in SERVICE_STEP_NAMES:
            self.child(self.service_stuck_total, notice.state).inc()
        elif notice.state in STEP_NAMES:
            self.child(self.step_stuck_total, notice.state).inc()
        else:
            self.child(self.stuck_total, notice.state).inc()

    def reconciled(
        self, result: str, seconds: float, exemplar: dict[str, str] | None = None
    ) -> None:
        """One reconcile; ``exemplar``: its trace, shown in the OpenMetrics exposition."""
        self.child(self.reconcile_total, self.controller, result).inc()
        if result == "error":
            self.child(self.reconcile_errors, self.controller).inc()
        self._rtime.observe(seconds, exemplar)
