"""Everything a host's user is told goes through the book's journal, and leaves once.

A refused annotation, a stuck host and a notice the state machine raises are
each one journal entry and one Event, however often the host is reconciled.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import NoOpTracer

from state_controller.api import annotations as ann
from state_controller.api.states import ProvisioningState as S
from state_controller.api.updates import UpdateStep
from state_controller.books.book import Book
from state_controller.books.journal import INVALID_ANNOTATION, STUCK, Notice
from state_controller.books.records import UpdateCursor
from state_controller.books.stuck import StuckPolicy
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import EVENTS, HOSTS
from state_controller.observability.events import EventRecorder
from state_controller.observability.metrics import Metrics
from state_controller.observability.reporter import Observability
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.clocks import T0, Clock
from testbed.hand_driven import HandDriven
from testbed.metrics import absent, sample

KEY = "ns/host-0000"


class Setup(HandDriven):
    """One host's reconciler with the real reporter (metrics, Events) and a test's clock."""

    def __init__(self, *, timings: Timings | None = None, stuck: StuckPolicy | None = None) -> None:
        self.clock = Clock()
        self.metrics = Metrics()
        store = EmbeddedCluster()
        super().__init__(
            store,
            provisioner=SimulatedProvisioner(timings=timings or Timings(), clock=self.clock),
            config=ControllerConfig(stuck=stuck or StuckPolicy()),
            reporter=Observability(
                self.metrics, EventRecorder(store), NoOpTracer(), clock=self.clock
            ),
            clock=self.clock,
        )
        self.add_secret(secret_manifest("ns", "host-0000-bmc", "a", "p"))

    def notices(self, reason: str) -> list[Notice]:
        entries, missed = self.reconciler.books[KEY].journal.since(0)
        assert missed == 0
        return [e for e in entries if isinstance(e, Notice) and e.reason == reason]

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in self.store.list(EVENTS)[0] if e["reason"] == reason]

    def counted(self, name: str, **labels: str) -> float:
        return sample(self.metrics.registry, name, labels)


def test_a_refused_annotation_is_one_journal_entry_and_one_event() -> None:
    s = Setup()
    manifest = host_manifest("ns", 0)
    manifest["metadata"]["annotations"] = {ann.HARDWARE_DETAILS: "{not json"}
    s.create(manifest)
    s.reconcile(KEY, times=3)
    assert [n.type for n in s.notices(INVALID_ANNOTATION)] == ["Warning"]
    [event] = s.events(INVALID_ANNOTATION)
    assert ann.HARDWARE_DETAILS in event["message"] and event["type"] == "Warning"
    assert s.counted("hoststate_events_total", type="Warning", reason=INVALID_ANNOTATION) == 1


def test_a_stuck_host_is_one_journal_entry_and_one_event_per_state() -> None:
    s = Setup(timings=Timings(inspect=3600), stuck=StuckPolicy({S.INSPECTING: 60}))
    s.create(host_manifest("ns", 0))
    s.reconcile(KEY)
    assert s.reconciler.books[KEY].cursor.state == S.INSPECTING
    s.clock.advance(30)
    s.reconcile(KEY)
    assert s.notices(STUCK) == [] and s.events(STUCK) == []
    s.clock.advance(31)
    s.reconcile(KEY, times=3)  # the timer, a resync, a status event: still one
    [notice] = s.notices(STUCK)
    assert notice.state == "inspecting" and notice.type == "Warning"
    [event] = s.events(STUCK)
    assert "host has been inspecting for 1m1s, longer than the 1m0s allowed" in event["message"]
    assert s.counted("hoststate_stuck_detections_total", state="inspecting") == 1


def test_a_notice_the_machine_raises_is_one_journal_entry_and_one_event() -> None:
    s = Setup()
    manifest = host_manifest("ns", 0)
    manifest["spec"]["online"] = False
    s.create(manifest)
    s.reconcile(KEY)
    assert s.reconciler.books[KEY].cursor.state == S.PROVISIONED
    s.patch(KEY, {"metadata": {"annotations": {ann.REBOOT: ""}}})
    s.reconcile(KEY, times=3)
    [notice] = s.notices("RebootSkipped")
    assert notice.type == "Normal" and "off" in notice.message
    assert len(s.events("RebootSkipped")) == 1
    stored = s.store.get(HOSTS, "ns", "host-0000")
    assert ann.REBOOT not in (stored["metadata"].get("annotations") or {})


def test_a_restart_reports_nothing_twice() -> None:
    """The journal is not stored: a rebuilt book starts with an empty one."""
    s = Setup()
    s.create(host_manifest("ns", 0))
    s.reconcile(KEY)
    events = len(s.store.list(EVENTS)[0])
    s.reconciler.books.clear()
    s.reconciler.deliveries.clear()
    s.reconcile(KEY, times=2)
    assert len(s.store.list(EVENTS)[0]) == events
    assert s.reconciler.books[KEY].journal.end == 0


def test_an_update_is_told_when_it_ends_not_at_every_step() -> None:
    s = Setup()
    s.create(host_manifest("ns", 0))
    s.reconcile(KEY)
    book = Book("ns/host-0000", now=T0, node_only=True)
    steps = [UpdateStep.PENDING, UpdateStep.DRAINING, UpdateStep.REBOOTING, UpdateStep.UPDATED]
    reasons = ["UpdateStarted", "Draining", "Rebooting", "UpdateComplete"]
    for at, (step, reason) in enumerate(zip(steps, reasons, strict=True)):
        book.update_to(UpdateCursor(step=step), now=T0 + at, reason=reason, message="m")
    transitions_before = s.counted(
        "hoststate_transitions_total", **{"from": "none", "to": "registering"}
    )
    host = s.store.get(HOSTS, "ns", "host-0000")
    s.reconciler.reporter.report(host, book.journal.since(0)[0])
    assert [len(s.events(r)) for r in reasons] == [0, 0, 0, 1]
    # update steps are not provisioning transitions: that series never appears
    update = {"from": "updated", "to": "update pending"}
    assert absent(s.metrics.registry, "hoststate_transitions_total", update)
    assert (
        s.counted("hoststate_transitions_total", **{"from": "none", "to": "registering"})
        == transitions_before
    )
