"""The controller's own families, ``hoststate_*``: what the books' journals tell (transitions,
time in a state, stuck hosts, errors, updates, servicing, remediation), the provisioner's
calls, status writes, Events, the build and the mode."""

from __future__ import annotations

import platform

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from ...api.hoststate import Mode
from ...api.servicing import (
    SERVICE_IN_PROGRESS,
    SERVICING_COMPLETE,
    SERVICING_FAILED,
    SERVICING_WITHDRAWN,
)
from ...api.states import TRANSIENT_STATES, ErrorType, ProvisioningState
from ...api.timefmt import parse_rfc3339
from ...api.updates import IN_PROGRESS, UPDATE_COMPLETE, UPDATE_DEGRADED, UpdateStep
from ...books.chapters import SERVICING_CHAPTER, UPDATE_CHAPTER
from ...books.journal import STUCK, Notice
from ...books.records import POWER_CYCLED, REMEDIATED, Transition
from ...health.share import controller_version
from ...remediation.situation import EXHAUSTED, HELD
from ..collectors import state_label
from .children import Children

STATE_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200)
LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
STEP_NAMES = frozenset(s.value for s in (*IN_PROGRESS, UpdateStep.DEGRADED))
SERVICE_STEP_NAMES = frozenset(s.value for s in SERVICE_IN_PROGRESS)
# how a servicing run ended, by the record that ends it
SERVICING_OUTCOMES = {
    SERVICING_COMPLETE: "completed",
    SERVICING_FAILED: "failed",
    SERVICING_WITHDRAWN: "withdrawn",
}
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


class HostMetrics:
    """The ``hoststate_*`` families, moved by the journal entries told to
    :meth:`transition` and :meth:`notice`."""

    def __init__(self, registry: CollectorRegistry, child: Children) -> None:
        r = registry
        self._child = child
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
            "Status decisions by resource, each counted once: written (at the first try), "
            "conflict (the object changed since it was read), unchanged (nothing sent).",
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

    def zero_error_series(self) -> None:
        """Every error and outcome series starts at 0 (see :meth:`.Metrics.zero_error_series`)."""
        for error in ErrorType:
            self._child(self.errors, error.value)
        for state in TRANSIENT_STATES:
            self._child(self.stuck_total, state.value)
        for step in STEP_NAMES:
            self._child(self.step_stuck_total, step)
        for outcome in UPDATE_OUTCOMES.values():
            self._child(self.updates, outcome)
        for outcome in REMEDIATION_OUTCOMES.values():
            self._child(self.remediations, outcome)
        for outcome in SERVICING_OUTCOMES.values():
            self._child(self.servicings, outcome)
        for service_step in SERVICE_STEP_NAMES:
            self._child(self.service_stuck_total, service_step)
        for resource in WRITTEN_RESOURCES:
            for written in WRITE_OUTCOMES:
                self._child(self.status_writes, resource, written)

    def running_in(self, mode: Mode, since: float) -> None:
        """``hoststate_controller_mode``: which mode, and since when."""
        for each in Mode:
            self.mode.labels(each.value).set(1 if each == mode else 0)
        self.mode_since.set(since)

    def transition(self, record: Transition, created: str | None = None) -> None:
        """One journal transition; ``created``: the Host's creationTimestamp, for the time
        from creation to provisioned."""
        remedied = REMEDIATION_OUTCOMES.get(record.reason)
        if remedied is not None and record.recorded and not record.replayed:
            self._child(self.remediations, remedied).inc()
        if record.chapter == UPDATE_CHAPTER:
            self._update_transition(record)  # update steps are not provisioning states
            return
        if record.chapter == SERVICING_CHAPTER:
            self._service_transition(record)
            return
        if record.error_type is not None:
            self._child(self.errors, record.error_type.value).inc()
        if record.from_state != record.to_state:
            before = state_label(record.from_state)
            self._child(self.transitions, before, record.to_state).inc()
            if record.time_in_previous_state is not None:
                self._child(self.state_seconds, before).observe(record.time_in_previous_state)
            if record.recorded and (before, record.to_state) == PROVISIONING_DONE:
                since = parse_rfc3339(created)
                if since is not None and record.at >= since:
                    self.time_to_provisioned.observe(record.at - since)

    def _update_transition(self, record: Transition) -> None:
        if not record.recorded:
            return
        if record.time_in_previous_state is not None and record.from_state in STEP_NAMES:
            self._child(self.step_seconds, record.from_state).observe(record.time_in_previous_state)
        outcome = UPDATE_OUTCOMES.get(record.reason)
        if outcome is not None:
            self._child(self.updates, outcome).inc()

    def _service_transition(self, record: Transition) -> None:
        if not record.recorded:
            return
        spent = record.time_in_previous_state
        if spent is not None and record.from_state in SERVICE_STEP_NAMES:
            self._child(self.service_step_seconds, record.from_state).observe(spent)
        outcome = SERVICING_OUTCOMES.get(record.reason)
        if outcome is not None and not record.replayed:
            self._child(self.servicings, outcome).inc()

    def notice(self, notice: Notice) -> None:
        remedied = REMEDIATION_OUTCOMES.get(notice.reason)
        if remedied is not None:
            self._child(self.remediations, remedied).inc()
        if notice.reason != STUCK:
            return
        if notice.state in SERVICE_STEP_NAMES:
            self._child(self.service_stuck_total, notice.state).inc()
        elif notice.state in STEP_NAMES:
            self._child(self.step_stuck_total, notice.state).inc()
        else:
            self._child(self.stuck_total, notice.state).inc()
