"""A node's updates in the host's book: one history, a chapter per update, restored whole."""

from __future__ import annotations

from itertools import pairwise

from state_controller.api.states import ProvisioningState as P
from state_controller.api.updates import UpdateStep as S
from state_controller.books.book import Book
from state_controller.books.projections import host_status, hoststate_status
from state_controller.books.records import UpdateCursor
from state_controller.books.restore import confirmed_seq, restore
from state_controller.books.stuck import StuckPolicy
from testbed.clocks import T0

POLICY = StuckPolicy()


def provisioned_book() -> Book:
    book = Book("metal/host-0", now=T0)
    for i, state in enumerate((P.REGISTERING, P.INSPECTING, P.PREPARING, P.AVAILABLE)):
        book.move(state, now=T0 + i, reason="r")
    book.move(P.PROVISIONING, now=T0 + 5, reason="ImageRequested")
    book.move(P.PROVISIONED, now=T0 + 9, reason="ProvisioningComplete")
    book.note(now=T0 + 10, node="worker-0")
    return book


def walk(book: Book, steps: list[S], *, start: float, desired: str = "v2") -> float:
    at = start
    for step in steps:
        at += 60
        current = desired if step == S.UPDATED else "v1"
        shown = UpdateCursor(step=step, desired=desired, current=current, source="agent")
        book.update_to(shown, now=at, reason=f"Step{step.name.title()}")
    return at


def test_a_provisioned_hosts_history_runs_on_through_an_update() -> None:
    book = provisioned_book()
    walk(
        book,
        [S.PENDING, S.CORDONING, S.DRAINING, S.APPLYING, S.REBOOTING, S.RESUMING, S.UPDATED],
        start=T0 + 100,
    )
    history = list(book.history)
    assert all(prev.to_state == rec.from_state for prev, rec in pairwise(history))
    update = [(t.from_state, t.to_state) for t in history if t.chapter == "update"]
    assert update[0] == ("provisioned", "update pending")
    assert update[-1] == ("resuming", "provisioned")
    assert [c.name for c in book.chapters][-2:] == ["provisioning", "update"]
    assert book.chapters[-1].outcome == "completed" and book.chapters[-1].transitions == 7
    assert book.update.visited >= {S.DRAINING, S.REBOOTING}
    assert book.update.started_at == T0 + 160


def test_each_update_is_a_chapter_of_its_own() -> None:
    book = provisioned_book()
    end = walk(book, [S.PENDING, S.APPLYING, S.UPDATED], start=T0 + 100)
    walk(book, [S.PENDING, S.DRAINING, S.UPDATED], start=end, desired="v3")
    updates = [c for c in book.chapters if c.name == "update"]
    assert len(updates) == 2 and all(c.outcome == "completed" for c in updates)
    assert book.update.visited == frozenset({S.PENDING, S.DRAINING})


def test_a_repeated_reading_records_nothing() -> None:
    book = provisioned_book()
    walk(book, [S.PENDING, S.DRAINING], start=T0 + 100)
    seq = book.last_seq
    again = UpdateCursor(step=S.DRAINING, desired="v2", current="v1", message="1 pod left")
    book.update_to(again, now=T0 + 500, reason="StepDraining")
    assert book.last_seq == seq
    assert book.update.entered_at == T0 + 220 and book.update.message == "1 pod left"


def test_while_updating_the_host_is_not_ready_and_stuck_is_timed_per_step() -> None:
    book = provisioned_book()
    walk(book, [S.PENDING, S.DRAINING], start=T0 + 100)
    entered = book.update.entered_at
    fresh = hoststate_status(book, POLICY, entered + 60)
    conds = {c["type"]: c for c in fresh["conditions"]}
    assert fresh["phase"] == "Updating"
    assert conds["Ready"]["status"] == "False" and conds["Ready"]["reason"] == "Updating"
    assert conds["UpdateExecuted"]["status"] == "Unknown"
    assert conds["UpdateExecuted"]["reason"] == "Draining"
    assert fresh["update"]["step"] == "draining" and fresh["update"]["desiredConfig"] == "v2"
    late = hoststate_status(book, POLICY, entered + 31 * 60)
    stuck = next(c for c in late["conditions"] if c["type"] == "Stuck")
    assert stuck["status"] == "True" and stuck["reason"] == "StepTimeout"
    assert "in draining since" in stuck["message"] and "30m0s" in stuck["message"]


def test_a_degraded_update_fails_the_host_and_names_the_phase() -> None:
    book = provisioned_book()
    walk(book, [S.PENDING, S.APPLYING], start=T0 + 100)
    failed = UpdateCursor(step=S.DEGRADED, desired="v2", current="v1", message="disk full")
    book.update_to(failed, now=T0 + 400, reason="UpdateDegraded")
    status = hoststate_status(book, POLICY, T0 + 401)
    conds = {c["type"]: c for c in status["conditions"]}
    assert status["phase"] == "Failed"
    assert conds["NodeDegraded"]["status"] == "True"
    assert conds["Degraded"]["reason"] == "UpdateDegraded"
    assert conds["AppliedFilesAndOS"]["reason"] == "Failed"
    assert status["update"]["failedStep"] == "applying update"


def test_restore_gives_back_the_update_and_its_conditions() -> None:
    book = provisioned_book()
    walk(book, [S.PENDING, S.DRAINING, S.REBOOTING], start=T0 + 100)
    now = T0 + 1000
    hs = hoststate_status(book, POLICY, now)
    h = host_status(book, book.last_seq)
    again = restore("metal/host-0", h, hs, now=now + 50, node="worker-0")
    assert hoststate_status(again, POLICY, now) == hs
    assert again.update == book.update
    assert host_status(again, confirmed_seq(hs)) == h


def test_update_steps_do_not_touch_host_status() -> None:
    """Host.status is the machine-facing record: an update is written to HostState only."""
    book = provisioned_book()
    before = host_status(book, book.last_seq)
    confirmed = book.last_seq
    walk(book, [S.PENDING, S.DRAINING, S.UPDATED], start=T0 + 100)
    assert host_status(book, book.last_seq) == before
    assert host_status(book, confirmed) == before  # no update record waits in Host.status


def test_a_node_without_a_host_has_a_book_of_its_own() -> None:
    book = Book("hoststate-system/worker-9", now=T0, node_only=True)
    walk(book, [S.PENDING, S.REBOOTING, S.UPDATED], start=T0)
    history = list(book.history)
    assert history[0].from_state == "updated" and history[-1].to_state == "updated"
    status = hoststate_status(book, POLICY, T0 + 500)
    types = [c["type"] for c in status["conditions"]]
    assert "Registered" not in types and "UpdatePrepared" in types
    assert status["phase"] == "Updated"


def test_stuck_thresholds_are_set_by_name_and_duration() -> None:
    from state_controller.api.states import ProvisioningState
    from state_controller.api.updates import UpdateStep
    from state_controller.books.stuck import parse_duration, stuck_policy

    assert [parse_duration(t) for t in ("45m", "1h30m", "90s", "90", "1.5h")] == [
        2700, 5400, 90, 90, 5400,
    ]  # fmt: skip
    policy = stuck_policy(["draining=45m", "rebooting=none", "provisioning=2h"])
    assert policy.step_thresholds[UpdateStep.DRAINING] == 2700
    assert UpdateStep.REBOOTING not in policy.step_thresholds
    assert policy.thresholds[ProvisioningState.PROVISIONING] == 7200
    assert policy.thresholds[ProvisioningState.INSPECTING] == 30 * 60  # the default kept


def test_a_pool_of_its_own_is_timed_by_its_own_thresholds_whatever_the_flags_order() -> None:
    from state_controller.books.stuck import stuck_policy

    policy = stuck_policy(["slow:rebooting=40m", "draining=45m", "slow:draining=none"])
    book = provisioned_book()
    walk(book, [S.PENDING, S.DRAINING], start=T0 + 100)
    entered = book.update.entered_at

    def stuck_after(minutes: float) -> dict[str, str]:
        """The Stuck condition then; every other count of stuck hosts (the metrics, the
        controller's status, the screens) agrees with it."""
        status = hoststate_status(book, policy, entered + minutes * 60)
        condition = next(c for c in status["conditions"] if c["type"] == "Stuck")
        assert policy.stuck_now(book, entered + minutes * 60) == (condition["status"] == "True")
        return condition

    assert stuck_after(46)["status"] == "True"  # no pool: the fleet's 45m
    assert "longer than the 45m0s allowed;" in stuck_after(46)["message"] + ";"
    book.note(now=entered, node="worker-0", pool="slow")
    assert stuck_after(600)["status"] == "False"  # the pool's draining is never stuck
    assert policy.pools["slow"].step_thresholds[S.REBOOTING] == 40 * 60
    assert policy.step_thresholds[S.REBOOTING] == POLICY.step_thresholds[S.REBOOTING]
    book.note(now=entered, pool="worker")  # a pool without thresholds of its own
    assert stuck_after(46)["status"] == "True"
    scaled = policy.scaled(0.5)
    assert S.DRAINING not in scaled.pools["slow"].step_thresholds
    assert scaled.pools["slow"].step_thresholds[S.REBOOTING] == 20 * 60


def test_a_stuck_pool_says_which_pool_allowed_how_long_and_what_is_usual() -> None:
    from state_controller.books.records import Expected
    from state_controller.books.stuck import stuck_policy

    policy = stuck_policy(["worker:draining=30m"])
    book = provisioned_book()
    book.note(now=T0 + 10, pool="worker")
    walk(book, [S.PENDING, S.DRAINING], start=T0 + 100)
    entered = book.update.entered_at
    usual = Expected("update", "draining", entered, entered + 180, entered + 720,
                     entered + 900, entered + 1800, 240, "pool worker")  # fmt: skip
    book.note_seen(now=entered, expected=usual)
    status = hoststate_status(book, policy, entered + 41 * 60)
    stuck = next(c for c in status["conditions"] if c["type"] == "Stuck")
    assert stuck["status"] == "True"
    assert "longer than the 30m0s allowed in pool worker" in stuck["message"]
    assert "draining takes 3m0s-12m0s" in stuck["message"]
    assert "from 240 past durations" in stuck["message"]
    slow = next(c for c in status["conditions"] if c["type"] == "Slow")
    assert slow["status"] == "True"


def test_a_threshold_for_a_pool_is_refused_with_the_field_and_the_fix() -> None:
    import pytest

    from state_controller.books.stuck import stuck_policy

    with pytest.raises(ValueError, match=r"':draining=30m'.*POOL:NAME=DURATION"):
        stuck_policy([":draining=30m"])
    with pytest.raises(ValueError, match="--stuck-after worker:draining: 'soon' is not"):
        stuck_policy(["worker:draining=soon"])
    with pytest.raises(ValueError, match="no state or step 'drainig'"):
        stuck_policy(["worker:drainig=30m"])
