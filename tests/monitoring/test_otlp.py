"""Traces leave the process over OTLP/HTTP, configured only by the standard OTEL_* variables:
``state-controller demo`` sends its spans to a collector endpoint served on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

ROOT = Path(__file__).resolve().parents[2]


class Collector(ThreadingHTTPServer):
    """The OTLP/HTTP trace endpoint (``POST /v1/traces``, protobuf), keeping what it got."""

    daemon_threads = True

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.paths: list[str] = []
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.paths.append(self.path)
        self.server.bodies.append(body)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_demo_exports_spans_over_otlp_with_the_standard_variables(collector: Collector) -> None:
    env = {
        **os.environ,
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.server_port}",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test",
        "OTEL_BSP_SCHEDULE_DELAY": "200",
    }
    done = subprocess.run(
        [
            sys.executable, "-m", "state_controller.cli", "demo", "--hosts", "3",
            "--no-update", "--exit-when-settled", "--no-table", "--timeout", "90",
        ],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=150,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert collector.paths and set(collector.paths) == {"/v1/traces"}
    spans, resources = [], []
    for body in collector.bodies:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            resources.append(
                {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            )
            for scope in resource_spans.scope_spans:
                spans.extend(scope.spans)
    assert all(r["service.name"] == "hoststate-controller" for r in resources)
    assert all(r["deployment.environment"] == "test" for r in resources)
    reconciles = [s for s in spans if s.name == "reconcile"]
    hosts = {
        a.value.string_value for s in reconciles for a in s.attributes if a.key == "hoststate.host"
    }
    assert hosts == {f"demo/host-{i:04d}" for i in range(3)}
    by_id = {s.span_id: s for s in reconciles}
    children = [s for s in spans if s.name.startswith(("provisioner.", "status write"))]
    # the controller's own status is written by no reconcile: its writes are root spans
    own = [s for s in children if s.name == "status write hoststatecontrollers"]
    assert own and not any(s.parent_span_id for s in own)
    children = [s for s in children if s not in own]
    assert children and all(s.parent_span_id in by_id for s in children)
    # the demo's BMC passwords (pw-0, pw-1, pw-2) are in no span
    assert not [b for b in collector.bodies if b"pw-0" in b or b"pw-1" in b or b"pw-2" in b]


def test_an_unknown_exporter_is_one_line() -> None:
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "zipkin"}
    done = subprocess.run(
        [sys.executable, "-m", "state_controller.cli", "demo", "--hosts", "1", "--timeout", "5"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        "OTEL_TRACES_EXPORTER='zipkin': this controller exports traces with otlp, console or none"
    )
