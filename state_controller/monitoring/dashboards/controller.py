"""Controller health, with controller-runtime's and client-go's names: the dashboards the
Kubernetes community uses for controller-runtime read these series too."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard

from ...runtime.machinery.keys import Kind
from ...runtime.machinery.leader_election import DEFAULT_LEASE
from .panels import IN_NAMESPACE, RATE, graph, label_variable, new_dashboard, number, row

UID = "hoststate-controller"
KINDS = "|".join(Kind)  # each kind of work-queue key is shown as a controller of its own
CONTROLLER = f'controller=~"{KINDS}", {IN_NAMESPACE}'
QUEUE = f'name=~"{KINDS}", {IN_NAMESPACE}'
# process_*, rest_client_* and leader_election_* have the same names in every controller:
# keep the series of the targets that are a hoststate controller.
OURS = " and on (job, instance) hoststate_build_info"


def dashboard() -> Dashboard:
    return (
        new_dashboard(
            UID,
            "hoststate / Controller",
            "The controller's own health: reconciles, work queue, API calls, status writes, "
            "leader, mode (bootstrap or cluster), CPU and memory.",
        )
        .with_variable(
            label_variable(
                "namespace",
                "Controller namespace",
                f'controller_runtime_reconcile_total{{controller=~"{KINDS}"}}',
            )
        )
        .with_row(row("Status (HostStateController)"))
        .with_panel(
            number(
                "Available",
                'max(hoststate_controller_condition{condition="Available"})',
                about="1: every host has a live owner. 0: see the reason (kubectl get "
                "hoststatecontrollers -o wide).",
                width=4,
            )
        )
        .with_panel(
            number(
                "Degraded",
                [
                    (
                        'max by (reason) (hoststate_controller_condition{condition="Degraded"})',
                        "{{reason}}",
                    )
                ],
                about="1: the provisioner does not answer, or a shard stopped renewing its "
                "Lease (the reason says which).",
                width=8,
            )
        )
        .with_panel(
            graph(
                "Hosts per replica (shard)",
                [("max by (member) (hoststate_controller_shard_hosts)", "{{member}}")],
                about="Each replica's share of the hosts, as the controller's status lists "
                "it: shares move when a shard joins or leaves.",
            )
        )
        .with_row(row("Reconciles"))
        .with_panel(
            graph(
                "Reconciles per second, by kind and result",
                [
                    (
                        "sum by (controller, result) "
                        f"(rate(controller_runtime_reconcile_total{{{CONTROLLER}}}[{RATE}]))",
                        "{{controller}} {{result}}",
                    )
                ],
                width=8,
            )
        )
        .with_panel(
            graph(
                "Reconcile errors per second, by kind",
                [
                    (
                        "sum by (controller) "
                        f"(rate(controller_runtime_reconcile_errors_total{{{CONTROLLER}}}[{RATE}]))",
                        "{{controller}}",
                    )
                ],
                width=8,
            )
        )
        .with_panel(
            graph(
                "Reconcile time (p50, p99)",
                [
                    (
                        f"histogram_quantile({q}, sum by (le) "
                        f"(rate(controller_runtime_reconcile_time_seconds_bucket{{{CONTROLLER}}}[{RATE}])))",
                        f"p{round(q * 100)}",
                    )
                    for q in (0.5, 0.99)
                ],
                unit="s",
                width=8,
            )
        )
        .with_row(row("Work queue"))
        .with_panel(
            graph(
                "Depth and busy workers",
                [
                    (f"sum(workqueue_depth{{{QUEUE}}})", "depth"),
                    (f"sum(controller_runtime_active_workers{{{CONTROLLER}}})", "busy workers"),
                    (  # the pool every kind shares: the same under each kind
                        f"max(controller_runtime_max_concurrent_reconciles{{{CONTROLLER}}})",
                        "workers",
                    ),
                ],
                width=8,
            )
        )
        .with_panel(
            graph(
                "Time waiting in the queue and being worked on (p99)",
                [
                    (
                        f"histogram_quantile(0.99, sum by (le) "
                        f"(rate(workqueue_queue_duration_seconds_bucket{{{QUEUE}}}[{RATE}])))",
                        "waiting",
                    ),
                    (
                        f"histogram_quantile(0.99, sum by (le) "
                        f"(rate(workqueue_work_duration_seconds_bucket{{{QUEUE}}}[{RATE}])))",
                        "working",
                    ),
                ],
                unit="s",
                width=8,
            )
        )
        .with_panel(
            graph(
                "Adds and retries per second; work in progress",
                [
                    (f"sum(rate(workqueue_adds_total{{{QUEUE}}}[{RATE}]))", "adds"),
                    (f"sum(rate(workqueue_retries_total{{{QUEUE}}}[{RATE}]))", "retries"),
                    (
                        f"max(workqueue_longest_running_processor_seconds{{{QUEUE}}})",
                        "longest running (s)",
                    ),
                    (f"sum(workqueue_unfinished_work_seconds{{{QUEUE}}})", "unfinished work (s)"),
                ],
                width=8,
            )
        )
        .with_row(row("Writes and API calls"))
        .with_panel(
            graph(
                "Status writes per second, by outcome",
                [
                    (
                        f"sum by (resource, outcome) (rate(hoststate_status_writes_total[{RATE}]))",
                        "{{resource}} {{outcome}}",
                    )
                ],
                width=8,
            )
        )
        .with_panel(
            graph(
                "API requests per second, by method and code",
                [
                    (
                        f"sum by (method, code) (rate(rest_client_requests_total[{RATE}]){OURS})",
                        "{{method}} {{code}}",
                    )
                ],
                width=8,
            )
        )
        .with_panel(
            graph(
                "API request latency (p99), by verb",
                [
                    (
                        "histogram_quantile(0.99, sum by (verb, le) "
                        f"(rate(rest_client_request_duration_seconds_bucket[{RATE}]){OURS}))",
                        "{{verb}}",
                    )
                ],
                unit="s",
                width=8,
            )
        )
        .with_row(row("Process"))
        .with_panel(
            number(
                "Replicas leading",
                f'sum(leader_election_master_status{{name="{DEFAULT_LEASE}"}}{OURS})',
                about="1: one replica holds the lease and reconciles. 0: none does.",
            )
        )
        .with_panel(
            number("Controllers up", "count(hoststate_build_info)", about="Scraped replicas.")
        )
        .with_panel(
            number(
                "Controllers by mode",
                [("sum by (mode) (hoststate_controller_mode)", "{{mode}}")],
                about="Bootstrap: state-controller bootstrap, before the cluster exists; "
                "Cluster: in the cluster.",
            )
        )
        .with_panel(
            number(
                "In its mode for",
                "time() - max(hoststate_controller_mode_since_timestamp_seconds)",
                unit="s",
                about="Since the controller began to run in its mode (a bootstrap: since its "
                "state directory's bootstrap began, across restarts).",
            )
        )
        .with_panel(
            graph(
                "CPU (cores)",
                [(f"rate(process_cpu_seconds_total[{RATE}]){OURS}", "{{instance}}")],
                width=6,
            )
        )
        .with_panel(
            graph(
                "Resident memory",
                [(f"process_resident_memory_bytes{OURS}", "{{instance}}")],
                unit="bytes",
                width=6,
            )
        )
    )
