"""What the books say at scrape time: per-state counts, one series per host and per
followed Node (the state a value, not a label), the stuck and in-error series while
they last; and the controller's own status. The NodePools' are in :mod:`.pool_collector`.

Nothing here is updated on the hot path: a scrape reads the books' immutable cursors,
so a host that changes state never leaves a stale series behind.
"""

from __future__ import annotations

import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..api.servicing import ServiceStep
from ..api.states import ErrorType, ProvisioningState
from ..api.updates import UpdateStep
from ..books.book import Book
from ..books.stuck import StuckPolicy

# The value of ``hoststate_host_state`` for each provisioning state, and of
# ``hoststate_node_update_step`` for each update step. A per-host series with the
# state as a label would start a new series at every transition (measured: 300
# series in Prometheus for 100 host lifecycles of the demo); a code keeps one series per host
# for its whole life. The numbers are part of the API: never renumber, only add.
# Dashboards map them back to names (value mappings generated from these tables).
STATE_CODES: dict[ProvisioningState, int] = {
    ProvisioningState.NONE: 0,
    ProvisioningState.UNMANAGED: 1,
    ProvisioningState.REGISTERING: 2,
    ProvisioningState.INSPECTING: 3,
    ProvisioningState.PREPARING: 4,
    ProvisioningState.AVAILABLE: 5,
    ProvisioningState.PROVISIONING: 6,
    ProvisioningState.PROVISIONED: 7,
    ProvisioningState.EXTERNALLY_PROVISIONED: 8,
    ProvisioningState.DEPROVISIONING: 9,
    ProvisioningState.POWERING_OFF_BEFORE_DELETE: 10,
    ProvisioningState.DELETING: 11,
}
STEP_CODES: dict[UpdateStep, int] = {
    UpdateStep.UPDATED: 0,
    UpdateStep.PENDING: 1,
    UpdateStep.PREPARING: 2,
    UpdateStep.CORDONING: 3,
    UpdateStep.DRAINING: 4,
    UpdateStep.APPLYING: 5,
    UpdateStep.RELOADING_CRIO: 6,
    UpdateStep.REBOOTING: 7,
    UpdateStep.RESUMING: 8,
    UpdateStep.DEGRADED: 9,
}
NEW_HOST = "none"  # the ``from`` of a host's first transition (a label is never empty)
STATE_NAMES = [s.value or NEW_HOST for s in ProvisioningState]


def state_label(state: str) -> str:
    return state or NEW_HOST


class BookFamilies:
    """The families read from the books, empty: filled at a scrape, described at start."""

    def __init__(self) -> None:
        host = ["namespace", "host"]
        node = ["namespace", "hoststate", "node"]
        self.hosts = GaugeMetricFamily(
            "hoststate_hosts",
            "Hosts per namespace and provisioning state.",
            labels=["namespace", "state"],
        )
        self.state = GaugeMetricFamily(
            "hoststate_host_state",
            "The provisioning state of each host, as a code (docs/metrics.md); "
            "one series per host for its whole life.",
            labels=host,
        )
        self.entered = GaugeMetricFamily(
            "hoststate_host_state_entered_timestamp_seconds",
            "When each host entered its current provisioning state (one series per host).",
            labels=host,
        )
        self.stuck = GaugeMetricFamily(
            "hoststate_stuck_hosts",
            "Hosts stuck, per namespace and provisioning state.",
            labels=["namespace", "state"],
        )
        self.stuck_seconds = GaugeMetricFamily(
            "hoststate_host_stuck_seconds",
            "How long each stuck host has been in its state; only stuck hosts have a series.",
            labels=[*host, "state"],
        )
        self.errors = GaugeMetricFamily(
            "hoststate_host_consecutive_errors",
            "Consecutive errors of each host in error, with the error's type (its message "
            "is the HostState's status.provisioning.errorMessage, unbounded, never a label); "
            "only hosts in error have a series.",
            labels=[*host, "state", "type"],
        )
        self.in_error = GaugeMetricFamily(
            "hoststate_hosts_in_error",
            "Hosts in error, per namespace and error type.",
            labels=["namespace", "type"],
        )
        self.steps = GaugeMetricFamily(
            "hoststate_node_update_steps", "Followed Nodes per update step.", labels=["step"]
        )
        self.step = GaugeMetricFamily(
            "hoststate_node_update_step",
            "The update step of each followed Node, as a code (docs/metrics.md); "
            "one series per node for its whole life.",
            labels=node,
        )
        self.step_entered = GaugeMetricFamily(
            "hoststate_node_update_step_entered_timestamp_seconds",
            "When each followed Node entered its current update step (one series per node).",
            labels=node,
        )
        self.step_stuck_seconds = GaugeMetricFamily(
            "hoststate_node_update_stuck_seconds",
            "How long each stuck Node has been in its update step; only stuck Nodes have a series.",
            labels=[*node, "step"],
        )

        self.pool_stuck = GaugeMetricFamily(
            "hoststate_nodepool_stuck_machines",
            "Nodes of each pool stuck in an update step (past the pool's threshold); one "
            "series per pool its Nodes name, 0 or not.",
            labels=["pool"],
        )
        self.sources_disagree = GaugeMetricFamily(
            "hoststate_node_sources_disagree",
            "1 while a followed Node's two accounts of its update (the Machine Config "
            "Operator's annotations and its MachineConfigNode) disagree, else 0; one series "
            "per node for its whole life (the HostState's SourcesAgree condition says how).",
            labels=node,
        )

        self.drain_blocked = GaugeMetricFamily(
            "hoststate_node_drain_blocked",
            "1 for each followed Node whose drain no PodDisruptionBudget lets go on (a drain "
            "that fails, not one that runs); only such Nodes have a series.",
            labels=[*node, "poddisruptionbudget"],
        )

        self.slow_seconds = GaugeMetricFamily(
            "hoststate_host_slow_seconds",
            "How long each host (or node) has been past the late bound of its step on "
            "machines like it (the HostState's Slow condition says which); only such hosts "
            "have a series.",
            labels=[*host, "kind", "step"],
        )
        self.servicing = GaugeMetricFamily(
            "hoststate_hosts_servicing",
            "Hosts per servicing step, of those servicing was ever asked of (serviced: "
            "what was asked is applied).",
            labels=["namespace", "step"],
        )
        self.servicing_stuck = GaugeMetricFamily(
            "hoststate_host_servicing_stuck_seconds",
            "How long each host stuck in a servicing step has been in it; only such hosts "
            "have a series.",
            labels=[*host, "step"],
        )
        self.remediation = GaugeMetricFamily(
            "hoststate_host_remediation_attempts",
            "Power-cycles made for each host whose Node is unhealthy and remediated, with "
            "why (RebootLost, NotReady) and what remediation does now (Wait, PowerCycle, "
            "Held, Blocked, Exhausted); only such hosts have a series.",
            labels=[*host, "trouble", "action"],
        )

    def all(self) -> list[GaugeMetricFamily]:
        return [
            self.pool_stuck,
            self.slow_seconds,
            self.servicing,
            self.servicing_stuck,
            self.remediation,
            self.drain_blocked,
            self.sources_disagree,
            self.hosts,
            self.state,
            self.entered,
            self.stuck,
            self.stuck_seconds,
            self.errors,
            self.in_error,
            self.steps,
            self.step,
            self.step_entered,
            self.step_stuck_seconds,
        ]


class BooksCollector(Collector):
    """Per-host and per-state gauges, read from the books at scrape time.

    Per-host families have one series per host whatever its state (the state is
    the value, not a label), so a transition never starts a series; the ones
    that name a state (stuck, in error) exist only while the host is so, and
    leave with it.
    """

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
        return BookFamilies().all()

    def collect(self) -> Iterable[Any]:
        now = self.clock()
        f = BookFamilies()
        per_state: Tally[tuple[str, str]] = Tally()
        stuck_per_state: Tally[tuple[str, str]] = Tally()
        per_error: Tally[tuple[str, str]] = Tally()
        namespaces: set[str] = set()
        per_step: Tally[str] = Tally({s.value: 0 for s in UpdateStep})
        per_service: Tally[tuple[str, str]] = Tally()
        stuck_per_pool: Tally[str] = Tally()
        for key, book in list(self.books().items()):
            namespace, _, name = key.partition("/")
            pool = book.facts.pool
            policy = self.stuck.of_pool(pool)
            if pool:
                stuck_per_pool[pool] += 0  # every pool has its series, stuck or not
            update = book.node_update()  # immutable, like the cursor
            if update is not None:
                node = [namespace, name, book.facts.node or name]
                per_step[update.step.value] += 1
                f.step.add_metric(node, STEP_CODES[update.step])
                f.step_entered.add_metric(node, update.entered_at)
                if update.drain_blocked_by:
                    f.drain_blocked.add_metric([*node, update.drain_blocked_by], 1)
                f.sources_disagree.add_metric(node, 1 if book.seen.sources_disagree else 0)
                limit = policy.step_thresholds.get(update.step)
                if limit is not None and now - update.entered_at >= limit:
                    f.step_stuck_seconds.add_metric(
                        [*node, update.step.value], now - update.entered_at
                    )
                    if pool:
                        stuck_per_pool[pool] += 1
            expected = book.seen.expected
            if expected is not None and now >= expected.step_late_at:
                labels = [namespace, name, expected.kind, expected.step]
                f.slow_seconds.add_metric(labels, now - expected.step_late_at)
            if book.node_only:
                continue  # a Node with no Host has no provisioning to report
            service = book.service
            if service.tasks:
                per_service[namespace, service.step.value] += 1
                limit = policy.service_thresholds.get(service.step)
                if limit is not None and now - service.entered_at >= limit:
                    labels = [namespace, name, service.step.value]
                    f.servicing_stuck.add_metric(labels, now - service.entered_at)
            remedy = book.facts.remediation
            if remedy is not None:
                labels = [namespace, name, remedy.trouble, remedy.action]
                f.remediation.add_metric(labels, remedy.attempts)
            cur = book.cursor  # one immutable snapshot: state, entered-at and errors agree
            host = [namespace, name]
            state = state_label(cur.state.value)
            namespaces.add(namespace)
            per_state[namespace, state] += 1
            f.state.add_metric(host, STATE_CODES[cur.state])
            f.entered.add_metric(host, cur.entered_at)
            if policy.is_stuck(cur, now):
                stuck_per_state[namespace, state] += 1
                f.stuck_seconds.add_metric([*host, state], now - cur.entered_at)
            if cur.error_type is not None:
                per_error[namespace, cur.error_type.value] += 1
                f.errors.add_metric([*host, state, cur.error_type.value], cur.error_count)
        serviced = {ns for ns, _ in per_service}  # namespaces with a host ever serviced
        for namespace in sorted(namespaces):  # every state and type of a namespace, 0 or not
            for state in STATE_NAMES:
                f.hosts.add_metric([namespace, state], per_state[namespace, state])
                f.stuck.add_metric([namespace, state], stuck_per_state[namespace, state])
            for error in ErrorType:
                f.in_error.add_metric([namespace, error.value], per_error[namespace, error.value])
            if namespace in serviced:
                for service_step in ServiceStep:
                    count = per_service[namespace, service_step.value]
                    f.servicing.add_metric([namespace, service_step.value], count)
        for step, count in sorted(per_step.items()):
            f.steps.add_metric([step], count)
        for pool, count in sorted(stuck_per_pool.items()):
            f.pool_stuck.add_metric([pool], count)
        return f.all()


class ControllerCollector(Collector):
    """The controller's own status as the replica last wrote or read it (``kubectl get
    hoststatecontrollers``): its conditions and each shard's share. Every replica shows
    the same object, so a query takes ``max`` over the replicas."""

    def __init__(self, status: Callable[[], Mapping[str, Any]]) -> None:
        self.status = status

    def describe(self) -> Iterable[Any]:
        return self._families()

    @staticmethod
    def _families() -> list[GaugeMetricFamily]:
        return [
            GaugeMetricFamily(
                "hoststate_controller_condition",
                "The controller's own conditions (HostStateController): 1 while the "
                "condition is True, else 0, with its reason; one series per condition.",
                labels=["condition", "reason"],
            ),
            GaugeMetricFamily(
                "hoststate_controller_shard_hosts",
                "Hosts each replica keeps a book for (its shard's share, when sharded), as "
                "the controller's status lists them.",
                labels=["member"],
            ),
        ]

    def collect(self) -> Iterable[Any]:
        conditions, shares = families = self._families()
        status = self.status()
        for condition in status.get("conditions") or []:
            labels = [str(condition.get("type")), str(condition.get("reason"))]
            conditions.add_metric(labels, 1 if condition.get("status") == "True" else 0)
        for member in status.get("members") or []:
            shares.add_metric([str(member.get("name"))], float(member.get("hosts") or 0))
        return families
