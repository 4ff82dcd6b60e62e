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
from state_controller.cluster.interface import EVENTS, HOSTS, HOSTSTATES, SECRETS
from state_controller.observability.events import EventRecorder
from state_controller.observability.metrics import Metrics
from state_controller.observability.reporter import Observability
from state_controller.provisioning.machine import HostMachine
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.host_reconciler import HostReconciler
from state_controller.runtime.informer import Informer
from state_controller.simulation.fleet import host_manifest, secret_manifest
from tests.support.clocks import T0, Clock
from tests.support.metrics import absent, sample

KEY = "ns/host-0000"


class Setup:
    def __init__(self, *, timings: Timings | None = None, stuck: StuckPolicy | None = None) -> None:
        self.clock = Clock()
        self.store = EmbeddedCluster()
        self.hosts = Informer(self.store, HOSTS)
        secrets = Informer(self.store, SECRETS)
        secrets.mutate(self.store.create(SECRETS, secret_manifest("ns", "host-0000-bmc", "a", "p")))
        self.metrics = Metrics()
        self.reconciler = HostReconciler(
            self.store,
            hosts=self.hosts,
            hoststates=Informer(self.store, HOSTSTATES),
            secrets=secrets,
            machine=HostMachine(
                SimulatedProvisioner(timings=timings or Timings(), clock=self.clock)
            ),
            config=ControllerConfig(stuck=stuck or StuckPolicy()),
            reporter=Observability(
                self.metrics, EventRecorder(self.store), NoOpTracer(), clock=self.clock
            ),
            clock=self.clock,
        )

    def create(self, manifest: dict[str, Any]) -> None:
        self.hosts.mutate(self.store.create(HOSTS, manifest))

    def patch(self, body: dict[str, Any]) -> None:
        self.hosts.mutate(self.store.patch(HOSTS, "ns", "host-0000", body))

    def reconcile(self, times: int = 1) -> None:
        for _ in range(times):
            self.reconciler.reconcile(KEY)

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
    s.reconcile(times=3)
    assert [n.type for n in s.notices(INVALID_ANNOTATION)] == ["Warning"]
    [event] = s.events(INVALID_ANNOTATION)
    assert ann.HARDWARE_DETAILS in event["message"] and event["type"] == "Warning"
    assert s.counted("hoststate_events_total", type="Warning", reason=INVALID_ANNOTATION) == 1


def test_a_stuck_host_is_one_journal_entry_and_one_event_per_state() -> None:
    s = Setup(timings=Timings(inspect=3600), stuck=StuckPolicy({S.INSPECTING: 60}))
    s.create(host_manifest("ns", 0))
    s.reconcile()
    assert s.reconciler.books[KEY].cursor.state == S.INSPECTING
    s.clock.advance(30)
    s.reconcile()
    assert s.notices(STUCK) == [] and s.events(STUCK) == []
    s.clock.advance(31)
    s.reconcile(times=3)  # the timer, a resync, a status event: still one
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
    s.reconcile()
    assert s.reconciler.books[KEY].cursor.state == S.PROVISIONED
    s.patch({"metadata": {"annotations": {ann.REBOOT: ""}}})
    s.reconcile(times=3)
    [notice] = s.notices("RebootSkipped")
    assert notice.type == "Normal" and "off" in notice.message
    assert len(s.events("RebootSkipped")) == 1
    stored = s.store.get(HOSTS, "ns", "host-0000")
    assert ann.REBOOT not in (stored["metadata"].get("annotations") or {})


def test_a_restart_reports_nothing_twice() -> None:
    """The journal is not stored: a rebuilt book starts with an empty one."""
    s = Setup()
    s.create(host_manifest("ns", 0))
    s.reconcile()
    events = len(s.store.list(EVENTS)[0])
    s.reconciler.books.clear()
    s.reconciler.deliveries.clear()
    s.reconcile(times=2)
    assert len(s.store.list(EVENTS)[0]) == events
    assert s.reconciler.books[KEY].journal.end == 0


def test_an_update_is_told_when_it_ends_not_at_every_step() -> None:
    s = Setup()
    s.create(host_manifest("ns", 0))
    s.reconcile()
    book = Book("ns/host-0000", now=T0, node_only=True)
    steps = [UpdateStep.PENDING, UpdateStep.DRAINING, UpdateStep.REBOOTING, UpdateStep.UPDATED]
    reasons = ["UpdateStarted", "Draining", "Rebooting", "UpdateComplete"]
    for at, (step, reason) in enumerate(zip(steps, reasons, strict=True)):
        book.transition(update=UpdateCursor(step=step), now=T0 + at, reason=reason, message="m")
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
