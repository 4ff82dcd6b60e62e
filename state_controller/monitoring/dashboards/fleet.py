"""Fleet: where every host is, which are stuck or failing, how fast the fleet provisions."""

from __future__ import annotations

from grafana_foundation_sdk.builders import table
from grafana_foundation_sdk.builders.dashboard import Dashboard

from ...api.servicing import SERVICE_ACTIVE
from .panels import IN_NAMESPACE, RATE, graph, label_variable, listing, new_dashboard, number, row

UID = "hoststate-fleet"
QUANTILES = (0.5, 0.9, 0.99)
# Each stuck host with the type of its last error when it has one: the error series (one
# per host in error) turned into a label to copy, or an empty set of labels for a host with
# none (the message is the HostState's: `kubectl get hoststate NAME`).
STUCK_WITH_ERROR = (
    f"hoststate_host_stuck_seconds{{{IN_NAMESPACE}}}"
    " * on (namespace, host) group_left (type) ("
    f"  hoststate_host_consecutive_errors{{{IN_NAMESPACE}}} * 0 + 1"
    f"  or on (namespace, host) hoststate_host_state{{{IN_NAMESPACE}}} * 0 + 1"
    ")"
)
FLEET_WIDE = "Counted for the whole fleet (the counters carry no namespace, to stay small)."
ACTIVE = "|".join(sorted(s.value for s in SERVICE_ACTIVE))


def _counted(title: str, by: dict[str, str], about: str) -> table.Panel:
    """A table of the hosts counted by some of ``hoststate_host_info``'s labels (``by``:
    each label and its column's title)."""
    labels = ", ".join(by)
    return listing(
        title,
        [(f"count by ({labels}) (hoststate_host_info{{{IN_NAMESPACE}}})", "")],
        columns={**by, "Value": "Hosts"},
        unit="short",
        width=8,
        about=about,
    )


def dashboard() -> Dashboard:
    quantiles = [
        (
            f"histogram_quantile({q}, sum by (state, le) "
            f"(rate(hoststate_state_duration_seconds_bucket[{RATE}])))",
            f"{{{{state}}}} p{round(q * 100)}",
        )
        for q in QUANTILES
    ]
    to_provisioned = [
        (
            f"histogram_quantile({q}, sum by (le) "
            f"(rate(hoststate_time_to_provisioned_seconds_bucket[{RATE}])))",
            f"p{round(q * 100)}",
        )
        for q in QUANTILES
    ]
    return (
        new_dashboard(
            UID,
            "hoststate / Fleet",
            "Where every host is, which are stuck or failing, and how fast the fleet provisions.",
        )
        .with_variable(label_variable("namespace", "Namespace", "hoststate_host_state"))
        .with_row(row("Now"))
        .with_panel(number("Hosts", f"sum(hoststate_hosts{{{IN_NAMESPACE}}})"))
        .with_panel(
            number("Provisioned", f'sum(hoststate_hosts{{{IN_NAMESPACE}, state="provisioned"}})')
        )
        .with_panel(
            number(
                "Stuck now",
                f"sum(hoststate_stuck_hosts{{{IN_NAMESPACE}}})",
                about="Hosts in a state longer than the controller allows for it.",
            )
        )
        .with_panel(number("In error", f"sum(hoststate_hosts_in_error{{{IN_NAMESPACE}}})"))
        .with_panel(
            listing(
                "Hosts stuck now",
                [(STUCK_WITH_ERROR, "")],
                columns={
                    "namespace": "Namespace",
                    "host": "Host",
                    "state": "State",
                    "Value": "Time in state",
                    "type": "Last error",
                },
                about="Each host stuck in its state, for how long, and the type of its last "
                "error (its message: kubectl get hoststate NAME).",
            )
        )
        .with_row(row("Inventory"))
        .with_panel(
            _counted(
                "Hosts by vendor and model",
                {"vendor": "Vendor", "model": "Model"},
                "As inspection reported them (unknown: not inspected, or a lone Node).",
            )
        )
        .with_panel(
            _counted(
                "Hosts by BIOS version",
                {"model": "Model", "bios_version": "BIOS"},
                "A model on two BIOS versions is a firmware rollout under way, or one that "
                "missed some machines.",
            )
        )
        .with_panel(
            _counted(
                "Hosts by pool and source",
                {"pool": "Pool", "source": "Follows"},
                "Source: Host (driven), BareMetalHost (observed) or Node (no machine known); "
                "pool unlabeled: no Node yet.",
            )
        )
        .with_row(row("Servicing and remediation"))
        .with_panel(
            number(
                "Being serviced",
                f'sum(hoststate_hosts_servicing{{{IN_NAMESPACE}, step=~"{ACTIVE}"}}) or vector(0)',
                about="Hosts whose firmware settings, firmware or RAID are being changed.",
            )
        )
        .with_panel(
            number(
                "Servicing failed",
                f'sum(hoststate_hosts_servicing{{{IN_NAMESPACE}, step="service failed"}})'
                " or vector(0)",
                about="Failed runs wait for their servicing fields to change.",
            )
        )
        .with_panel(
            number(
                "Being remediated",
                f"count(hoststate_host_remediation_attempts{{{IN_NAMESPACE}}}) or vector(0)",
                about="Hosts whose Node is unhealthy, in a remediated pool.",
            )
        )
        .with_panel(
            number(
                "Remediation exhausted",
                f'count(hoststate_host_remediation_attempts{{{IN_NAMESPACE}, action="Exhausted"}})'
                " or vector(0)",
                about="Power-cycled every time allowed and still unhealthy: a person must look.",
            )
        )
        .with_panel(
            listing(
                "Hosts being remediated",
                [(f"hoststate_host_remediation_attempts{{{IN_NAMESPACE}}}", "")],
                columns={
                    "namespace": "Namespace",
                    "host": "Host",
                    "trouble": "Trouble",
                    "action": "Now",
                    "Value": "Power-cycles",
                },
                unit="short",
                width=12,
            )
        )
        .with_panel(
            listing(
                "Servicing steps stuck",
                [(f"hoststate_host_servicing_stuck_seconds{{{IN_NAMESPACE}}}", "")],
                columns={
                    "namespace": "Namespace",
                    "host": "Host",
                    "step": "Step",
                    "Value": "Stuck for",
                },
                width=12,
            )
        )
        .with_row(row("Over time"))
        .with_panel(
            graph(
                "Hosts per state",
                [(f"sum by (state) (hoststate_hosts{{{IN_NAMESPACE}}}) > 0", "{{state}}")],
            )
        )
        .with_panel(
            graph(
                "Transitions per minute",
                [(f"sum by (to) (rate(hoststate_transitions_total[{RATE}])) * 60", "to {{to}}")],
                about=FLEET_WIDE,
            )
        )
        .with_panel(
            graph(
                "Errors per minute, by type",
                [(f"sum by (type) (rate(hoststate_errors_total[{RATE}])) * 60", "{{type}}")],
                about="Every failed attempt. " + FLEET_WIDE,
            )
        )
        .with_panel(
            graph(
                "Time in state (p50, p90, p99)",
                quantiles,
                unit="s",
                about="Observed when a host leaves a state. " + FLEET_WIDE,
            )
        )
        .with_panel(
            graph(
                "Provisioning throughput",
                [
                    (
                        "sum(rate(hoststate_transitions_total"
                        f'{{to="provisioned"}}[{RATE}])) * 3600',
                        "hosts provisioned per hour",
                    )
                ],
                about=FLEET_WIDE,
            )
        )
        .with_panel(
            graph(
                "Hosts per servicing step",
                [
                    (
                        f"sum by (step) (hoststate_hosts_servicing{{{IN_NAMESPACE}}}) > 0",
                        "{{step}}",
                    )
                ],
            )
        )
        .with_panel(
            graph(
                "Remediation per hour, by outcome",
                [
                    (
                        f"sum by (outcome) (rate(hoststate_remediations_total[{RATE}])) * 3600",
                        "{{outcome}}",
                    )
                ],
                about="power_cycled: attempts; recovered: Nodes back after one; held: the "
                "pool too unhealthy; exhausted: every attempt made. " + FLEET_WIDE,
            )
        )
        .with_panel(
            graph(
                "Time to provisioned (from the Host's creation)",
                to_provisioned,
                unit="s",
                about="End to end: from the Host's creation to provisioned. " + FLEET_WIDE,
            )
        )
    )
