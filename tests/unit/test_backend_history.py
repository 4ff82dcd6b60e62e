"""The backend's own history of a driven machine (Ironic's node history) in the host's
history: each entry once, across a restart of the controller too, at the backend's pace,
a bounded number a read. The real Ironic's side is in tests/ironic/test_redfish.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from state_controller.api.states import ProvisioningState as S
from state_controller.books.book import Book
from state_controller.books.projections import host_status, hoststate_status
from state_controller.books.restore import restore
from state_controller.books.stuck import StuckPolicy
from state_controller.observability.events import event_for
from state_controller.provisioning.ironic.history import event_of
from state_controller.provisioning.machine import HostMachine
from state_controller.provisioning.provisioner import HistoryKept, HostView
from state_controller.provisioning.results import BackendEvent, HistoryRead
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from testbed.clocks import Clock
from tests.unit.test_state_machine import Stepped, host_input, with_image

KEY = "ns/h"
EVERY = 60.0


@dataclass
class Entry:
    uuid: str
    created_at: str
    severity: str
    event_type: str
    event: str


@dataclass
class KeptHistory(SimulatedProvisioner):
    """The simulated backend with a node history answered as the Ironic provisioner reads
    it: with no mark, nothing and the mark of what there is ("0": nothing); else the
    entries after the marker, oldest first, two at most a read."""

    entries: list[Entry] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    history_every: float = EVERY
    per_read: int = 2

    def __post_init__(self) -> None:
        super().__init__(timings=Timings(), clock=self.clock_)

    clock_: Clock = field(default_factory=lambda: Clock(1000.0))

    def history(self, host: HostView, mark: str) -> HistoryRead | None:
        self.asked.append(mark)
        if not mark:
            newest = self.entries[-1] if self.entries else None
            return HistoryRead((), f"{newest.created_at} {newest.uuid}" if newest else "0")
        uuids = [e.uuid for e in self.entries]
        last = mark.partition(" ")[2]
        after = self.entries[uuids.index(last) + 1 :] if last in uuids else self.entries
        taken = after[: self.per_read]
        if not taken:
            return HistoryRead((), mark)
        events = tuple(BackendEvent(e.created_at, e.severity, e.event_type, e.event) for e in taken)
        return HistoryRead(events, f"{taken[-1].created_at} {taken[-1].uuid}")


def recorded(book: Book) -> list[str]:
    return [r.message for r in book.history if r.reason.startswith("Backend")]


def entry(n: int, severity: str = "INFO") -> Entry:
    return Entry(f"e{n}", f"2026-11-29T04:0{n}:00+00:00", severity, "cleaning", f"event {n}")


def test_each_entry_joins_once_across_a_restart_at_the_backends_pace() -> None:
    backend = KeptHistory(entries=[entry(0)])  # the node's past, before this book
    assert isinstance(backend, HistoryKept)
    clock = backend.clock_
    book = Book(KEY, now=clock())
    host = Stepped(HostMachine(backend), book)
    host.step(host_input(with_image()), clock())
    assert book.cursor.state == S.PROVISIONED
    # read once for the whole step (not at every state's registration): from here on
    assert backend.asked == [""]
    assert recorded(book) == []
    assert book.facts.backend_history == "2026-11-29T04:00:00+00:00 e0"

    # what the backend recorded since, two at most a read
    backend.entries += [entry(1, "ERROR"), entry(2), entry(3)]
    clock.advance(EVERY)
    host.step(host_input(with_image()), clock())
    assert recorded(book) == [
        "simulated (cleaning, ERROR, 2026-11-29T04:01:00+00:00): event 1",
        "simulated (cleaning, INFO, 2026-11-29T04:02:00+00:00): event 2",
    ]
    reasons = [r.reason for r in book.history if r.reason.startswith("Backend")]
    assert reasons == ["BackendError", "BackendEvent"]
    assert all(r.from_state == r.to_state for r in book.history if r.reason in reasons)
    assert book.facts.backend_history == "2026-11-29T04:02:00+00:00 e2"
    told = [event_for(r) for r in book.history if r.reason in reasons]
    assert [t[0] for t in told if t is not None] == ["Warning", "Normal"]  # an error: Warning

    # woken before the pace: not read again
    clock.advance(EVERY / 2)
    host.step(host_input(with_image()), clock())
    assert len(backend.asked) == 2

    # the controller restarts: the book comes back from the statuses, mark included
    h_status = host_status(book, book.last_seq)
    assert h_status["provisioning"]["backendHistoryMark"] == "2026-11-29T04:02:00+00:00 e2"
    hs_status = hoststate_status(book, StuckPolicy(), clock())
    again = restore(KEY, h_status, hs_status, now=clock())
    assert again.facts.backend_history == book.facts.backend_history
    backend.entries.append(entry(4))
    Stepped(HostMachine(backend), again).step(host_input(with_image()), clock())
    assert backend.asked[-1] == "2026-11-29T04:02:00+00:00 e2"
    assert recorded(again) == [*recorded(book), *(
        f"simulated (cleaning, INFO, {e.created_at}): {e.event}"
        for e in (entry(3), entry(4))
    )]  # fmt: skip

    # nothing new: nothing recorded, the mark kept
    clock.advance(EVERY)
    Stepped(HostMachine(backend), again).step(host_input(with_image()), clock())
    assert len(recorded(again)) == 4
    assert again.facts.backend_history == "2026-11-29T04:04:00+00:00 e4"


def test_ironics_entries_are_told_in_its_own_sentences_or_not_quoted() -> None:
    """Ironic 39.0.0's words for a step flow, a health change and a failure; the 1.115
    fields say the node's state then."""
    flow = {"severity": "INFO", "event_type": "deployment_start", "state": "deploying"}
    started = event_of(
        {
            **flow,
            "target_provision_state": "active",
            "duration_seconds": 3,
            "created_at": "2026-11-29T04:21:24.571425+00:00",
        },
        'Starting deployment with steps=[{"step": "deploy"}]',
    )
    assert started.words == "deployment started; node deploying → active, 3 s in its previous state"
    assert event_of({}, "Deployment completed successfully with steps=[]").words == (
        "deployment completed"
    )
    aborted = event_of(
        {"severity": "ERROR"}, "Cleaning aborted at step 'erase_devices' with steps=[]"
    )
    assert (aborted.severity, aborted.words) == ("ERROR", "cleaning aborted at step erase_devices")
    health = event_of(
        {"event_type": "monitoring"},
        "Node health status changed: health='Critical' (previously 'OK')",
    )
    assert (health.kind, health.words) == (
        "monitoring",
        "the BMC's health rollup went from OK to Critical",
    )
    first = event_of({}, "Node health status changed: health='OK' (previously 'None')")
    assert first.words == "the BMC's health rollup is OK, read for the first time"
    # an error quoting what a server answered: named where known, else not quoted
    quoted = event_of({"severity": "ERROR"}, "Failed: server at 10.0.0.9 said <html>secret banner")
    assert "banner" not in quoted.words and "hoststate's log" in quoted.words
