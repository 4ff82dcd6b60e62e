"""Upgrade rollout: each pool's progress, every node's update step, what holds them."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard

from ...observability.collectors import STEP_CODES
from ...observability.pool_collector import POOL_COUNTS
from .panels import IN_NAMESPACE, RATE, graph, label_variable, listing, new_dashboard, row

UID = "hoststate-rollout"
POOL = 'pool=~"$pool"'
NODES = "Counted for every followed Node: these series carry no namespace."
QUANTILES = (0.5, 0.9)


def dashboard() -> Dashboard:
    pool_counts = [(f"{name}{{{POOL}}}", "") for name, _ in POOL_COUNTS.values()]
    pool_columns = {"pool": "Pool"} | {
        f"Value #{ref}": field.removesuffix("Count").replace("Machine", " machines").capitalize()
        for ref, field in zip("ABCDE", POOL_COUNTS, strict=True)
    }
    steps = [
        (
            f"histogram_quantile({q}, sum by (step, le) "
            f"(rate(hoststate_node_update_step_duration_seconds_bucket[{RATE}])))",
            f"{{{{step}}}} p{round(q * 100)}",
        )
        for q in QUANTILES
    ]
    service_steps = [
        (
            f"histogram_quantile({q}, sum by (step, le) "
            f"(rate(hoststate_servicing_step_duration_seconds_bucket[{RATE}])))",
            f"{{{{step}}}} p{round(q * 100)}",
        )
        for q in QUANTILES
    ]
    return (
        new_dashboard(
            UID,
            "hoststate / Upgrade rollout",
            "Each pool's progress, every node's update step, and what holds them.",
            tags=["updates"],
        )
        .with_variable(label_variable("pool", "Pool", "hoststate_nodepool_machines"))
        .with_variable(
            label_variable("namespace", "HostState namespace", "hoststate_node_update_step")
        )
        .with_row(row("Pools"))
        .with_panel(
            graph(
                "Pool progress (nodes at the desired configuration)",
                [
                    (
                        f"sum by (pool) (hoststate_nodepool_updated_machines{{{POOL}}})"
                        f" / sum by (pool) (hoststate_nodepool_machines{{{POOL}}})",
                        "{{pool}}",
                    )
                ],
                unit="percentunit",
            )
        )
        .with_panel(listing("Pools now", pool_counts, columns=pool_columns, unit="short", width=12))
        .with_panel(
            listing(
                "Expected finish (from how long this pool's updates took)",
                [
                    (f"hoststate_nodepool_estimated_end_timestamp_seconds{{{POOL}}} - time()", ""),
                    (f"hoststate_nodepool_estimated_late_timestamp_seconds{{{POOL}}} - time()", ""),
                    (f"hoststate_nodepool_on_schedule{{{POOL}}}", ""),
                ],
                columns={
                    "pool": "Pool",
                    "Value #A": "Ends in",
                    "Value #B": "Late bound in",
                    "Value #C": "On schedule (1)",
                },
                width=12,
                about="The NodePool's status.estimate; 0 on schedule: the rollout now runs "
                "past the late bound it first said (OnSchedule=False).",
            )
        )
        .with_panel(
            listing(
                "Update steps by hardware class (learned median and late bound)",
                [
                    (f'hoststate_learned_duration_median_seconds{{kind="update", {POOL}}}', ""),
                    (f'hoststate_learned_duration_late_seconds{{kind="update", {POOL}}}', ""),
                ],
                columns={
                    "step": "Step",
                    "pool": "Pool",
                    "hardware_class": "Hardware",
                    "Value #A": "Median",
                    "Value #B": "Late bound",
                },
                width=12,
                about='The last 100 durations of each step, per pool and hardware class ("*": '
                "any), as the controller learned them (docs/durations.md).",
            )
        )
        .with_row(row("Nodes"))
        .with_panel(
            graph(
                "Nodes per update step",
                [("sum by (step) (hoststate_node_update_steps) > 0", "{{step}}")],
                about=NODES,
            )
        )
        .with_panel(graph("Step durations (p50, p90)", steps, unit="s", about=NODES))
        .with_panel(
            listing(
                "Current step per node",
                [
                    (f"hoststate_node_update_step{{{IN_NAMESPACE}}}", ""),
                    (
                        "time() - hoststate_node_update_step_entered_timestamp_seconds"
                        f"{{{IN_NAMESPACE}}}",
                        "",
                    ),
                ],
                columns={
                    "node": "Node",
                    "namespace": "Namespace",
                    "hoststate": "HostState",
                    "Value #A": "Step",
                    "Value #B": "In step",
                },
                names={"Step": STEP_CODES},
                width=12,
            )
        )
        .with_panel(
            listing(
                "Stuck drains, reboots and other steps",
                [(f"hoststate_node_update_stuck_seconds{{{IN_NAMESPACE}}}", "")],
                columns={
                    "node": "Node",
                    "namespace": "Namespace",
                    "hoststate": "HostState",
                    "step": "Step",
                    "Value": "Stuck for",
                },
                width=12,
            )
        )
        .with_panel(
            graph(
                "Updates ended per hour, by outcome",
                [
                    (
                        f"sum by (outcome) (rate(hoststate_node_updates_total[{RATE}])) * 3600",
                        "{{outcome}}",
                    )
                ],
                about=NODES,
            )
        )
        .with_row(row("Firmware"))
        .with_panel(
            graph(
                "Firmware rollout (hosts serviced, of those asked)",
                [
                    (
                        f'sum(hoststate_hosts_servicing{{{IN_NAMESPACE}, step="serviced"}})'
                        f" / sum(hoststate_hosts_servicing{{{IN_NAMESPACE}}})",
                        "serviced",
                    )
                ],
                unit="percentunit",
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
        .with_panel(graph("Servicing step durations (p50, p90)", service_steps, unit="s"))
        .with_panel(
            graph(
                "Servicing runs ended per hour, by outcome",
                [
                    (
                        f"sum by (outcome) (rate(hoststate_servicings_total[{RATE}])) * 3600",
                        "{{outcome}}",
                    )
                ],
            )
        )
    )
