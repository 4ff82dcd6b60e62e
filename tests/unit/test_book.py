"""The book: one transition() records once; restore gives back the same book."""

from __future__ import annotations

import dataclasses

import pytest

from state_controller.api.states import ErrorType, OperationalStatus
from state_controller.api.states import ProvisioningState as S
from state_controller.books.book import Book, Limits
from state_controller.books.bounded import Bounded
from state_controller.books.chapters import BOOTSTRAP_CHAPTER
from state_controller.books.projections import host_status, hoststate_status
from state_controller.books.records import (
    FactChanges,
    Facts,
    Observations,
    SeenChanges,
    Transition,
)
from state_controller.books.restore import confirmed_seq, restore
from state_controller.books.stuck import StuckPolicy
from testbed.clocks import T0


def test_transition_moves_state_and_records_once() -> None:
    book = Book("ns/h", now=T0)
    book.move(S.REGISTERING, now=T0 + 1, reason="Registering")
    book.move(S.INSPECTING, now=T0 + 3, reason="Registered")
    assert book.cursor.state == S.INSPECTING
    assert book.cursor.entered_at == T0 + 3
    assert [(t.from_state, t.to_state, t.seq) for t in book.history] == [
        ("", "registering", 1),
        ("registering", "inspecting", 2),
    ]
    journal, missed = book.journal.since(0)
    transitions = [t for t in journal if isinstance(t, Transition)]
    assert transitions == journal and missed == 0  # nothing but the two moves
    assert [t.seq for t in transitions] == [1, 2]
    assert transitions[1].time_in_previous_state == 2
    assert book.journal.since(book.journal.end) == ([], 0)


def test_repeated_error_counts_without_new_history() -> None:
    book = Book("ns/h", now=T0)
    book.move(S.REGISTERING, now=T0, reason="Registering")
    for i in range(3):
        book.fail(ErrorType.REGISTRATION, "BMC said no", now=T0 + i, reason="RegistrationFailed")
    assert book.cursor.error_count == 3
    assert book.cursor.operational_status == OperationalStatus.ERROR
    assert len(book.history) == 2  # the move and the first error, not the repeats
    journal = book.journal.since(0)[0]
    errors = [t for t in journal if isinstance(t, Transition) and t.error_type is not None]
    assert len(errors) == 3  # every attempt reaches the error metric
    book.move(S.INSPECTING, now=T0 + 10, reason="Registered")
    assert book.cursor.error_count == 0 and book.cursor.error_type is None


def test_history_is_bounded_and_counts_what_fell_off() -> None:
    book = Book("ns/h", now=T0, limits=Limits(history=5))
    for i in range(12):
        book.transition(now=T0 + i, reason="PoweredOn", always_record=True)
    assert len(book.history) == 5
    assert book.history_dropped == 7
    assert [t.seq for t in book.history] == [8, 9, 10, 11, 12]


def test_chapters_open_and_close_with_outcomes() -> None:
    book = Book("ns/h", now=T0)
    for i, state in enumerate(
        [S.REGISTERING, S.INSPECTING, S.PREPARING, S.AVAILABLE, S.PROVISIONING, S.DEPROVISIONING]
    ):
        book.move(state, now=T0 + i, reason="r")
    names = [(c.name, c.outcome) for c in book.chapters]
    assert names == [
        ("registration", "completed"),
        ("inspection", "completed"),
        ("preparation", "completed"),
        ("provisioning", "interrupted"),
        ("deprovisioning", ""),
    ]


def test_restore_gives_back_the_same_projections() -> None:
    policy = StuckPolicy()
    book = Book("ns/h", now=T0)
    book.move(S.REGISTERING, now=T0 + 1, reason="Registering")
    book.note(now=T0 + 1, provider_id="node-1", powered_on=True, credentials=("c", "7"))
    book.move(S.INSPECTING, now=T0 + 2, reason="Registered")
    book.fail(ErrorType.INSPECTION, "ramdisk lost", now=T0 + 3, reason="InspectionFailed")
    now = T0 + 4
    hs_status = hoststate_status(book, policy, now)
    h_status = host_status(book, book.last_seq)

    again = restore("ns/h", h_status, hs_status, now=T0 + 100)
    assert host_status(again, confirmed_seq(hs_status)) == h_status
    assert hoststate_status(again, policy, now) == hs_status
    assert again.journal.end == 0  # nothing restored is reported again


def test_restore_fills_the_gap_when_hoststate_was_not_written() -> None:
    """Host.status was written, the controller died before HostState: nothing is lost."""
    policy = StuckPolicy()
    book = Book("ns/h", now=T0)
    book.move(S.REGISTERING, now=T0 + 1, reason="Registering")
    old_hs = hoststate_status(book, policy, T0 + 1)
    book.move(S.INSPECTING, now=T0 + 2, reason="Registered")
    book.move(S.PREPARING, now=T0 + 3, reason="InspectionComplete")
    h_status = host_status(book, confirmed_seq(old_hs))  # written; HostState write never happened
    assert [t["seq"] for t in h_status["recentTransitions"]] == [2, 3]

    again = restore("ns/h", h_status, old_hs, now=T0 + 5)
    assert [t.seq for t in again.history] == [1, 2, 3]
    assert [t.to_state for t in again.history] == ["registering", "inspecting", "preparing"]
    assert again.history_dropped == 0
    assert again.cursor.state == S.PREPARING


def test_stuck_is_derived_from_time_with_stable_timestamps() -> None:
    policy = StuckPolicy({S.INSPECTING: 60})
    book = Book("ns/h", now=T0)
    book.move(S.INSPECTING, now=T0, reason="Registered")
    fresh = hoststate_status(book, policy, T0 + 30)
    stuck = hoststate_status(book, policy, T0 + 61)
    later = hoststate_status(book, policy, T0 + 500)
    assert fresh["stuck"] is False and stuck["stuck"] is True
    assert stuck == later  # no churn while stuck: nothing to write
    cond = next(c for c in stuck["conditions"] if c["type"] == "Stuck")
    assert cond["reason"] == "StateTimeout" and "1m0s" in cond["message"]


def test_condition_timestamps_change_only_when_status_changes() -> None:
    policy = StuckPolicy()
    book = Book("ns/h", now=T0)
    book.move(S.REGISTERING, now=T0 + 10, reason="Registering")
    first = {c["type"]: c for c in hoststate_status(book, policy, T0 + 10)["conditions"]}
    book.fail(ErrorType.REGISTRATION, "no", now=T0 + 20, reason="RegistrationFailed")
    book.fail(ErrorType.REGISTRATION, "no", now=T0 + 40, reason="RegistrationFailed")
    second = {c["type"]: c for c in hoststate_status(book, policy, T0 + 40)["conditions"]}
    assert second["Degraded"]["status"] == "True"
    assert second["Degraded"]["lastTransitionTime"] != first["Degraded"]["lastTransitionTime"]
    assert second["Inspected"]["lastTransitionTime"] == first["Inspected"]["lastTransitionTime"]


def test_bootstrap_chapter_opens_the_story_and_a_move_replays_it_for_new_counters() -> None:
    book = Book("ns/h", now=T0)
    book.transition(
        now=T0, reason="Bootstrap", message="before the cluster", always_record=True,
        chapter=BOOTSTRAP_CHAPTER,
    )  # fmt: skip
    book.move(S.REGISTERING, now=T0 + 1, reason="Registering")
    book.move(S.INSPECTING, now=T0 + 4, reason="Registered")
    book.move(S.PREPARING, now=T0 + 10, reason="InspectionComplete")
    assert [c.name for c in book.chapters] == [
        BOOTSTRAP_CHAPTER, "registration", "inspection", "preparation",
    ]  # fmt: skip
    assert book.chapters[0].ended_at == T0 + 1 and book.chapters[0].outcome == "completed"

    status = hoststate_status(book, StuckPolicy(), T0 + 10)
    moved = restore("ns/h", host_status(book, book.last_seq), status, now=T0 + 20)
    seen = moved.journal.end
    arrival = moved.moved_in(now=T0 + 20, reason="Pivoted", message="moved")
    entries, _ = moved.journal.since(seen)
    replayed = [e for e in entries if isinstance(e, Transition) and e.replayed]
    # the past, once, each with the time spent in the state it left
    assert [(r.from_state, r.to_state, r.time_in_previous_state) for r in replayed] == [
        ("", "", None), ("", "registering", None), ("registering", "inspecting", 3.0),
        ("inspecting", "preparing", 6.0),
    ]  # fmt: skip
    assert entries[-1] is arrival and not arrival.replayed
    assert [(t.seq, t.reason) for t in moved.history][-2:] == [
        (4, "InspectionComplete"),
        (5, "Pivoted"),
    ]
    assert (arrival.from_state, arrival.to_state) == ("preparing", "preparing")  # continuous
    assert moved.chapters[0].name == BOOTSTRAP_CHAPTER


def test_a_books_history_keeps_its_last_items_only() -> None:
    kept: Bounded[int] = Bounded(3, range(5))
    assert kept == [2, 3, 4]
    kept.append(5)
    kept.extend([6])
    assert kept == [4, 5, 6] and kept.maxlen == 3
    nothing: Bounded[int] = Bounded(0, [1])
    assert nothing == []
    with pytest.raises(TypeError):
        kept.insert(0, 1)


def test_what_a_book_may_note_is_every_fact_and_observation_by_its_own_name_and_no_other() -> None:
    facts = {f.name for f in dataclasses.fields(Facts)} - {"hardware_json"} | {"hardware"}
    assert set(FactChanges.__annotations__) == facts
    assert set(SeenChanges.__annotations__) == {f.name for f in dataclasses.fields(Observations)}
    book = Book("ns/h", now=T0)
    assert book.note(now=T0 + 1, provider_id="node-1", hardware={"cpus": 8})
    assert not book.note(now=T0 + 2, provider_id="node-1")  # nothing changed
    assert book.note_seen(now=T0 + 3, transient="Ironic is not answering")
    assert (book.facts.provider_id, book.facts.hardware) == ("node-1", {"cpus": 8})
    assert book.seen.transient == "Ironic is not answering"
    with pytest.raises(AttributeError):
        book.note(now=T0 + 4, transient="a fact it is not")  # type: ignore[call-arg]
