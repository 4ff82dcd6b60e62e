"""Reports leave the process correctly: /metrics over HTTP, traces, and no secret anywhere."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from opentelemetry.trace import StatusCode
from prometheus_client import generate_latest, start_http_server
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest

from state_controller.cluster.interface import EVENTS, HOSTS, HOSTSTATES, Cluster
from testbed.scenarios import HOST_DATA_MARKS, PASSWORD
from testbed.waiting import wait_for

NS = "fleet"

REQUIRED_FAMILIES = [
    "hoststate_hosts",
    "hoststate_host_state_entered_timestamp_seconds",
    "hoststate_stuck_hosts",
    "hoststate_transitions_total",
    "hoststate_state_duration_seconds_bucket",
    "hoststate_errors_total",
    "hoststate_provisioner_requests_total",
    "hoststate_provisioner_request_duration_seconds_bucket",
    "hoststate_status_writes_total",
    "controller_runtime_reconcile_total",
    "controller_runtime_reconcile_time_seconds_bucket",
    "controller_runtime_max_concurrent_reconciles",
    "controller_runtime_active_workers",
    "workqueue_depth",
    "workqueue_adds_total",
    "workqueue_queue_duration_seconds_bucket",
    "workqueue_work_duration_seconds_bucket",
    "workqueue_retries_total",
    "workqueue_unfinished_work_seconds",
    "workqueue_longest_running_processor_seconds",
]


def test_metrics_are_served_over_http(observed: Any) -> None:
    metrics, _ = observed
    server, thread = start_http_server(0, addr="127.0.0.1", registry=metrics.registry)
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            body = response.read().decode()
    finally:
        server.shutdown()
        thread.join(timeout=5)
    names = {
        line.split("{")[0].split(" ")[0] for line in body.splitlines() if line and line[0] != "#"
    }
    missing = [n for n in REQUIRED_FAMILIES if n not in names]
    assert missing == []
    assert 'hoststate_hosts{namespace="fleet",state="provisioned"} 3.0' in body
    assert 'hoststate_errors_total{type="registration error"} 1.0' in body
    assert 'hoststate_errors_total{type="provisioning error"} 1.0' in body
    # each host's time from its creation to provisioned, once (a rebuilt book adds none)
    count = metrics.registry.get_sample_value("hoststate_time_to_provisioned_seconds_count")
    total = metrics.registry.get_sample_value("hoststate_time_to_provisioned_seconds_sum")
    assert count == 3 and 0 < total < 3 * 60
    per_host = [s for s in body.splitlines() if s.startswith("hoststate_host_state_entered")]
    assert len(per_host) == 3  # one series per host, not per host and state


def test_traces_have_a_span_per_reconcile_with_transitions(observed: Any) -> None:
    _, spans = observed
    finished = spans.get_finished_spans()
    reconciles = [s for s in finished if s.name == "reconcile"]
    assert reconciles and all("hoststate.host" in s.attributes for s in reconciles)
    transitions = [e for s in reconciles for e in s.events if e.name == "transition"]
    assert {e.attributes["to"] for e in transitions} >= {"registering", "provisioned"}
    assert any(s.name == "provisioner.provision" for s in finished)
    # a reconcile says where the host was before and after (its transitions agree), and how
    # it went
    moved = [s for s in reconciles if any(e.name == "transition" for e in s.events)]
    assert moved
    for span in moved:
        steps = [e.attributes for e in span.events if e.name == "transition"]
        assert span.attributes["hoststate.state.before"] == steps[0]["from"]
        assert span.attributes["hoststate.state.after"] == steps[-1]["to"]
        assert span.attributes["hoststate.result"] in ("success", "requeue", "requeue_after")
    assert any(s.attributes["hoststate.state.after"] == "provisioned" for s in moved)


def test_provisioner_calls_and_status_writes_are_children_with_their_errors(observed: Any) -> None:
    _, spans = observed
    finished = spans.get_finished_spans()
    reconciles = {s.context.span_id: s for s in finished if s.name == "reconcile"}
    writes = [s for s in finished if s.name == "status write hoststates"]
    assert writes and all(s.parent is not None and s.parent.span_id in reconciles for s in writes)
    assert all(s.attributes["hoststate.object"].startswith(f"{NS}/host-") for s in writes)
    # host-0000's BMC refused its credentials once: that call's span is an error, with why
    failed = [
        s for s in finished
        if s.name == "provisioner.register" and s.status.status_code == StatusCode.ERROR
    ]  # fmt: skip
    assert failed and all(s.parent is not None and s.parent.span_id in reconciles for s in failed)
    assert all(s.status.description and "failed" in s.status.description for s in failed)
    ok = [s for s in finished if s.name == "provisioner.register" and s not in failed]
    assert ok and all(s.status.status_code != StatusCode.ERROR for s in ok)


def test_reconcile_time_has_trace_exemplars_in_openmetrics(observed: Any) -> None:
    metrics, spans = observed

    def exemplar_traces() -> set[str]:
        text = openmetrics_latest(metrics.registry).decode()
        buckets = [
            line for line in text.splitlines()
            if line.startswith("controller_runtime_reconcile_time_seconds_bucket") and " # " in line
        ]  # fmt: skip
        return {line.split('trace_id="')[1].split('"')[0] for line in buckets}

    def finished_traces() -> set[str]:
        return {format(s.context.trace_id, "032x") for s in spans.get_finished_spans()}

    assert exemplar_traces(), "no exemplar on the reconcile-time histogram"
    # the last reconcile's span ends, and its exemplar is kept, after the queue is idle
    wait_for(
        lambda: exemplar_traces() <= finished_traces(),
        what="every exemplar's trace among the finished spans",
    )


def test_the_bmc_password_appears_nowhere(
    observed: Any, cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    metrics, spans = observed
    places = {
        "hosts": json.dumps(cluster.list(HOSTS)[0]),
        "hoststates": json.dumps(cluster.list(HOSTSTATES)[0]),
        "events": json.dumps(cluster.list(EVENTS)[0]),
        "metrics": generate_latest(metrics.registry).decode(),
        "traces": "".join(s.to_json() for s in spans.get_finished_spans()),
        "logs": "\n".join(r.getMessage() + str(r.__dict__) for r in caplog.get_records("setup")),
    }
    assert len(places["events"]) > 100  # there is something to scan
    leaked = [where for where, text in places.items() if PASSWORD in text]
    assert leaked == []
    for mark in HOST_DATA_MARKS:  # nor what the hosts' user, network and meta data hold
        assert [where for where, text in places.items() if mark in text] == [], mark


def test_each_host_reaching_provisioned_is_an_event_and_each_failure_a_log_line(
    observed: Any, cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    events = cluster.list(EVENTS, NS)[0]
    done = [e for e in events if e["reason"] == "ProvisioningComplete"]
    assert sorted(e["involvedObject"]["name"] for e in done) == [f"host-{i:04d}" for i in range(3)]
    assert all(e["type"] == "Normal" and e["count"] == 1 for e in done)
    logged = caplog.get_records("setup")  # the fixture ran the fleet
    failures = [r for r in logged if getattr(r, "error_type", None)]
    assert {(r.host, r.error_type) for r in failures} == {  # type: ignore[attr-defined]
        (f"{NS}/host-0000", "registration error"),
        (f"{NS}/host-0001", "provisioning error"),
    }
