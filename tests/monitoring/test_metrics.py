"""/metrics as Prometheus reads it: promtool's linter passes on a live controller's
exposition, error series start at 0, no label is empty, the client-go and process
families are there."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from testbed.prometheus import promtool

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = [
    "hoststate_build_info",
    "hoststate_host_state",
    "hoststate_host_state_entered_timestamp_seconds",
    "rest_client_requests",
    "rest_client_request_duration_seconds",
    "process_cpu_seconds",
    "process_resident_memory_bytes",
    "python_info",
    "controller_runtime_reconcile_errors",
    "hoststate_node_update_stuck_detections",
]


def test_promtool_check_metrics_passes_on_a_live_controller(
    observed: Any,
    prometheus: Path,
) -> None:
    metrics, _ = observed
    exposition = generate_latest(metrics.registry).decode()
    checked = promtool(prometheus, "check", "metrics", stdin=exposition)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.strip() == "" and checked.stderr.strip() == ""


def test_error_series_start_at_zero_and_no_label_is_empty(observed: Any) -> None:
    metrics, _ = observed
    families = {
        f.name: f
        for f in text_string_to_metric_families(generate_latest(metrics.registry).decode())
    }
    missing = [name for name in FAMILIES if name not in families]
    assert missing == []
    value = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in families.values()
        for s in f.samples
    }
    # hosts failed, but no reconcile raised: the series is there, at 0
    assert value[("controller_runtime_reconcile_errors_total", (("controller", "host"),))] == 0
    # an operation that never failed has its failure series, at 0
    inspect_failed = (("backend", "simulated"), ("operation", "inspect"), ("result", "failed"))
    assert value[("hoststate_provisioner_requests_total", inspect_failed)] == 0
    assert value[("hoststate_errors_total", (("type", "inspection error"),))] == 0
    assert value[("hoststate_node_updates_total", (("outcome", "degraded"),))] == 0
    conflicts = (("outcome", "conflict"), ("resource", "nodepools"))
    assert value[("hoststate_status_writes_total", conflicts)] == 0
    outcomes = {
        dict(labels)["outcome"] for (n, labels) in value if n == "hoststate_node_updates_total"
    }
    assert outcomes == {"completed", "degraded"}
    created = [
        v for (name, labels), v in value.items()
        if name == "rest_client_requests_total" and ("method", "POST") in labels
        and ("code", "201") in labels
    ]  # fmt: skip
    assert created and created[0] >= 6  # three Hosts and their Secrets, HostStates, Events
    empty = [(n, labels) for (n, labels) in value if any(v == "" for _, v in labels)]
    assert empty == []


def test_the_catalogue_lists_every_family_a_live_controller_exposes(
    observed: Any,
) -> None:
    metrics, _ = observed
    catalogue = (ROOT / "docs" / "metrics.md").read_text()
    listed = set(re.findall(r"^\| `([a-z_:]+)` \|", catalogue, re.MULTILINE))
    exposed = set()
    for family in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        exposed.add(family.name + ("_total" if family.type == "counter" else ""))
    assert exposed - listed == set(), "run: state-controller gen metrics"
    assert len(listed) >= len(exposed) >= 50
