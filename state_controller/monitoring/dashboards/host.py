"""Host detail: one host's states over time, how long each took, its errors and its node's
update steps; the provisioner's calls beside them."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard

from ...api.states import ProvisioningState
from ...observability.collectors import STATE_CODES, STEP_CODES
from .panels import RATE, graph, label_variable, listing, new_dashboard, number, row, timeline

UID = "hoststate-host"
HOST = 'namespace="$namespace", host="$host"'
# Seconds the host spent in each state within the dashboard's time range, sampled at
# the panel's interval (0 for a state it never was in).
TIME_IN = (
    "(count_over_time((hoststate_host_state{{{host}}} == {code})[$__range:$__interval])"
    " * $__interval_ms / 1000) or vector(0)"
)


def dashboard() -> Dashboard:
    stages = [
        (TIME_IN.format(host=HOST, code=code), state.value)
        for state, code in STATE_CODES.items()
        if state != ProvisioningState.NONE
    ]
    return (
        new_dashboard(UID, "hoststate / Host", "One host: its states, stages, errors and updates.")
        .with_variable(
            label_variable("namespace", "Namespace", "hoststate_host_state", every=False)
        )
        .with_variable(
            label_variable(
                "host", "Host", 'hoststate_host_state{namespace="$namespace"}', every=False
            )
        )
        .with_row(row("Now"))
        .with_panel(number("State", f"hoststate_host_state{{{HOST}}}", names=STATE_CODES))
        .with_panel(
            number(
                "In this state for",
                f"time() - hoststate_host_state_entered_timestamp_seconds{{{HOST}}}",
                unit="s",
            )
        )
        .with_panel(
            number(
                "Consecutive errors",
                f"sum(hoststate_host_consecutive_errors{{{HOST}}}) or vector(0)",
            )
        )
        .with_panel(
            number(
                "Stuck for",
                f"sum(hoststate_host_stuck_seconds{{{HOST}}}) or vector(0)",
                unit="s",
                about="0 while the host is within the time its state allows.",
            )
        )
        .with_panel(
            number(
                "Servicing step stuck for",
                f"sum(hoststate_host_servicing_stuck_seconds{{{HOST}}}) or vector(0)",
                unit="s",
                width=12,
                about="0 while no servicing step has run past its threshold.",
            )
        )
        .with_panel(
            number(
                "Remediation power-cycles",
                f"sum(hoststate_host_remediation_attempts{{{HOST}}}) or vector(0)",
                width=12,
                about="Made for the Node's trouble now (0: its Node is healthy).",
            )
        )
        .with_panel(
            timeline(
                "Provisioning state", [(f"hoststate_host_state{{{HOST}}}", "{{host}}")], STATE_CODES
            )
        )
        .with_panel(
            number(
                "Time per stage (in the time range shown)",
                stages,
                unit="s",
                width=24,
            )
        )
        .with_panel(
            listing(
                "Errors",
                [(f"hoststate_host_consecutive_errors{{{HOST}}}", "")],
                columns={
                    "state": "State",
                    "type": "Error",
                    "Value": "Consecutive errors",
                },
                unit="short",
            )
        )
        .with_panel(
            timeline(
                "Update step of its node",
                [
                    (
                        'hoststate_node_update_step{namespace="$namespace", hoststate="$host"}',
                        "{{node}}",
                    )
                ],
                STEP_CODES,
            )
        )
        .with_row(row("Provisioner (all hosts; one host's calls are in its traces)"))
        .with_panel(
            graph(
                "Provisioner calls per second",
                [
                    (
                        "sum by (operation, result) "
                        f"(rate(hoststate_provisioner_requests_total[{RATE}])) > 0",
                        "{{operation}} {{result}}",
                    )
                ],
            )
        )
        .with_panel(
            graph(
                "Provisioner latency (p99)",
                [
                    (
                        "histogram_quantile(0.99, sum by (operation, le) "
                        f"(rate(hoststate_provisioner_request_duration_seconds_bucket[{RATE}])))",
                        "{{operation}}",
                    )
                ],
                unit="s",
            )
        )
    )
