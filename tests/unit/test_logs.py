"""Log lines: an outage is three kinds of line (started, a reminder, ended), and a line
carries its host, state and error type as fields, in text or JSON."""

from __future__ import annotations

import json
import logging

import pytest

from state_controller.observability.logs import JsonFormatter, TextFormatter
from state_controller.runtime.outages import Outage


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_is_one_line_a_reminder_and_one_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    clock = Clock()
    outage = Outage("kube-apiserver 127.0.0.1:6443", remind_every=30, clock=clock)
    outage.recovered()  # up: nothing to say
    for _ in range(200):  # every worker and informer failing, many times a second
        outage.failed(ConnectionRefusedError("[Errno 111] Connection refused"))
        clock.now += 0.2
    outage.recovered()
    outage.recovered()
    lines = [(r.levelname, getattr(r, "event", ""), r.getMessage()) for r in caplog.records]
    assert [event for _, event, _ in lines] == ["started", "continues", "ended"]
    assert lines[0] == (
        "ERROR",
        "started",
        "kube-apiserver 127.0.0.1:6443 unreachable: "
        "ConnectionRefusedError: [Errno 111] Connection refused",
    )
    assert lines[1][2].startswith("kube-apiserver 127.0.0.1:6443 still unreachable after 30s")
    assert (
        lines[2][2] == "kube-apiserver 127.0.0.1:6443 reachable again after 40s (200 failed calls)"
    )


def _record(**fields: str) -> logging.LogRecord:
    record = logging.LogRecord(
        "state_controller.hosts", logging.WARNING, "x", 1, "%s", ("m",), None
    )
    record.created, record.msecs = 1_800_000_000.25, 250
    for name, value in fields.items():
        setattr(record, name, value)
    return record


def test_fields_in_json_and_text() -> None:
    fields = {"host": "metal/host-1", "state": "inspecting", "error_type": "inspection error"}
    line = json.loads(JsonFormatter().format(_record(**fields)))
    assert line == {
        "ts": "2027-01-15T08:00:00.250Z",
        "level": "warning",
        "logger": "state_controller.hosts",
        "msg": "m",
        **fields,
    }
    text = TextFormatter().format(_record(**fields))
    assert text == (
        "2027-01-15T08:00:00.250Z WARNING state_controller.hosts: m  host=metal/host-1 "
        'state=inspecting error_type="inspection error"'
    )
