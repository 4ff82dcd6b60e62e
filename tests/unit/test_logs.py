"""Log lines: an outage is three kinds of line (started, a reminder, ended), and a line
carries its host, state and error type as fields, in text or JSON."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import pytest

from state_controller.observability.logs import (
    LEADER_ELECTION_LOGGER,
    JsonFormatter,
    TextFormatter,
    configure,
)
from state_controller.runtime.machinery.outages import Outage
from testbed.clocks import Clock
from tests.conftest import wait_for


def test_an_outage_is_one_line_a_reminder_and_one_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    clock = Clock(start=100.0)
    outage = Outage("kube-apiserver 127.0.0.1:6443", remind_every=30, settle=5, clock=clock)
    outage.recovered()  # up: nothing to say
    for _ in range(200):  # every worker and informer failing, many times a second
        outage.failed(ConnectionRefusedError("[Errno 111] Connection refused"))
        clock.advance(0.2)
    outage.recovered()  # the first answer...
    clock.advance(1)
    outage.failed(ConnectionRefusedError("503: the server is starting"))  # ...and a relapse
    outage.recovered()
    clock.advance(4)
    outage.recovered()  # 4 s of answers: not settled yet
    clock.advance(1)
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
    assert (  # until the answer after the relapse
        lines[2][2] == "kube-apiserver 127.0.0.1:6443 reachable again after 41s (201 failed calls)"
    )


class Timers(Outage):
    """An outage whose timers run when the test says."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.due: list[Callable[[], None]] = []

    def _later(self, delay: float, then: Callable[[], None]) -> None:
        self.due.append(then)


def test_an_outage_with_no_call_after_its_first_answer_is_told_ended_by_a_timer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An idle controller calls nothing after its informers listed again: a timer tells
    the end once the settling time has passed, unless a failure came meanwhile."""
    caplog.set_level(logging.INFO)
    outage = Timers("provisioner ironic")
    outage.failed("no answer")
    outage.recovered()
    outage.failed("no answer")  # a relapse before the timer fires
    outage.due.pop()()
    assert outage.down
    outage.recovered()
    outage.due.pop()()
    assert not outage.down
    assert [getattr(r, "event", "") for r in caplog.records] == ["started", "ended"]
    assert caplog.records[-1].getMessage().endswith("(2 failed calls)")


def test_the_timer_is_a_real_one(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    outage = Outage("provisioner ironic", settle=0.05)
    outage.failed("no answer")
    outage.recovered()
    # down is cleared just before the end is logged: wait for the record itself
    wait_for(
        lambda: [getattr(r, "event", "") for r in caplog.records] == ["started", "ended"],
        timeout=10,
        what="the end told",
    )
    assert not outage.down


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


def test_the_leader_elections_renewals_are_not_logged_at_info() -> None:
    """The kubernetes client logs "has successfully acquired lease" at INFO on every
    renewal, one line per --retry-period for ever; its warnings stay, and debug shows
    everything."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    election = logging.getLogger(LEADER_ELECTION_LOGGER)
    try:
        configure("text", "info")
        assert not election.isEnabledFor(logging.INFO)
        assert election.isEnabledFor(logging.WARNING)
        configure("text", "debug")
        assert election.isEnabledFor(logging.INFO)
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
        election.setLevel(logging.NOTSET)
