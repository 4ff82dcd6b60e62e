"""A pool's rollout estimate: the machines left, how many update at once and how long an
update of the pool's machines took; kept as said while the rollout runs within it, a
RolloutLate Event once it runs past its late bound; none without learned updates."""

from __future__ import annotations

import math

import pytest

from state_controller.api.timefmt import parse_rfc3339
from state_controller.api.updates import UpdateStep as S
from state_controller.books.records import Expected, UpdateCursor
from state_controller.durations.keys import ANY, UPDATE, StepKey
from state_controller.durations.learned import Learned
from state_controller.durations.rollout import (
    LATE_Z,
    PerMachine,
    expected_maximum,
    kept,
    on_schedule,
    per_machine,
    rollout_expected,
    wire,
)
from testbed.clocks import T0
from tests.unit.test_pool_reconciler import Pools, cluster  # noqa: F401  (the fixture)

WHOLE = PerMachine(seconds=600.0, spread=120.0, samples=5)
DONE = UpdateCursor(step=S.UPDATED, current="v2", desired="v2")
WAITING = UpdateCursor(step=S.UPDATED, current="v1", desired="v1")


def draining(started: float) -> UpdateCursor:
    return UpdateCursor(step=S.DRAINING, current="v1", desired="v2", started_at=started)


def test_one_machines_update_is_the_sum_of_the_pools_learned_steps() -> None:
    learned = Learned()
    assert per_machine(learned, "worker") is None
    for step, seconds in (("draining", 60.0), ("rebooting", 500.0), ("resuming", 40.0)):
        for _ in range(5):
            learned.learn(StepKey(UPDATE, step, "worker", "any class"), seconds)
    whole = per_machine(learned, "worker")
    assert whole is not None and whole.seconds == 600 and whole.spread == 0 and whole.samples == 5


def test_the_work_left_is_shared_among_the_machines_at_once() -> None:
    own = Expected(UPDATE, "draining", T0, T0 + 60, T0 + 120, T0 + 300, T0 + 400, 5, "pool")
    members = [
        (DONE, None, None),
        (draining(T0), own, None),  # its own estimate: 300 - 100 left
        (draining(T0), None, None),  # none: a whole update less the 100 s it ran
        *[(WAITING, None, None)] * 4,  # not started: a whole update each
    ]
    made = rollout_expected(members, "v2", WHOLE, now=T0 + 100)
    assert made is not None
    assert (made.machines_left, made.at_once) == (6, 2)
    # two slots: 200 s then two whole updates (1400); 500 s then two (1700), the last; the
    # other frees well before it, so nothing is added for the later of two
    assert made.ends_at - T0 == pytest.approx(100 + 1700)
    # the late bound: the work left's spread shared by two slots, and the last machine's
    shared = math.sqrt(100**2 + 120**2 + 4 * 120**2) / 2
    assert made.late_at - made.ends_at == pytest.approx(math.hypot(shared, 120))
    assert rollout_expected(members, "v2", None, now=T0) is None  # nothing learned
    assert rollout_expected([(DONE, None, None)], "v2", WHOLE, now=T0) is None  # nothing left
    wider = rollout_expected(members, "v2", WHOLE, now=T0 + 100, at_once_seen=5)
    assert wider is not None and wider.at_once == 5


def test_a_machine_past_its_whole_update_holds_its_slot_as_long_again() -> None:
    # a reboot lost: no estimate of its step, and it has run 900 s of a 600 s update
    lost = (draining(T0), None, None)
    alone = rollout_expected([lost], "v2", WHOLE, now=T0 + 900)
    assert alone is not None and alone.ends_at - T0 == pytest.approx(900 + 300)
    # the machine behind it waits for that slot, not for one free at once
    behind = rollout_expected([lost, (WAITING, None, None)], "v2", WHOLE, now=T0 + 900)
    assert behind is not None and behind.at_once == 1
    assert behind.ends_at - T0 == pytest.approx(900 + 300 + 600)
    # one on time has what its whole update leaves
    early = rollout_expected([lost], "v2", WHOLE, now=T0 + 450)
    assert early is not None and early.ends_at - T0 == pytest.approx(450 + 150)


def test_what_was_said_is_kept_while_the_rollout_runs_within_it() -> None:
    first = rollout_expected([(WAITING, None, None)] * 4, "v2", WHOLE, now=T0)
    assert first is not None
    said = wire(first)
    assert kept(None, first) == said
    assert (said["firstEndsAt"], said["firstLateAt"]) == (said["endsAt"], said["lateAt"])
    assert on_schedule(said, None, T0)["status"] == "True"  # type: ignore[index]
    nearly = rollout_expected([(WAITING, None, None)] * 4, "v2", WHOLE, now=T0 + 100)
    assert nearly is not None and kept(said, nearly) == said  # within: unchanged
    late = rollout_expected([(WAITING, None, None)] * 4, "v2", WHOLE, now=T0 + 1000)
    assert late is not None
    shown = kept(said, late)
    assert shown is not None and shown["endsAt"] == wire(late)["endsAt"]
    assert shown["firstLateAt"] == said["lateAt"]  # what was first said goes on
    condition = on_schedule(shown, on_schedule(said, None, T0), T0 + 1000)
    assert condition is not None and condition["status"] == "False"
    assert condition["reason"] == "RolloutLate" and "4 machines left" in condition["message"]
    early = rollout_expected([(WAITING, None, None)], "v2", WHOLE, now=T0)
    assert early is not None
    sooner = kept(said, early)
    assert sooner is not None and sooner["endsAt"] == wire(early)["endsAt"]
    assert on_schedule(sooner, None, T0)["status"] == "True"  # type: ignore[index]
    assert on_schedule(None, condition, T0) is None  # no rollout estimate: no condition


def test_the_nodepool_shows_the_estimate_and_turns_late_past_what_it_said(
    cluster,  # noqa: F811
) -> None:
    learned = Learned()
    for _ in range(5):
        learned.learn(StepKey(UPDATE, "rebooting", "worker", ANY), 600)
    pools = Pools(cluster, learned=learned)
    pools.clock.now = T0
    pools.join("n1", draining(T0))
    pools.reconciler.reconcile("worker")
    assert "estimate" not in pools.status()  # no whole update learned yet: none said
    for _ in range(5):
        learned.learn(StepKey(UPDATE, "resuming", "worker", ANY), 0)
    pools.clock.now = T0
    pools.join("n1", draining(T0))
    for name in ("n2", "n3"):
        pools.join(name, WAITING)
    pools.reconciler.reconcile("worker")
    status = pools.status()
    estimate = status["estimate"]
    assert isinstance(estimate, dict)
    assert (estimate["machinesLeft"], estimate["atOnce"]) == (3, 1)
    assert parse_rfc3339(estimate["endsAt"]) == pytest.approx(T0 + 1800, abs=0.01)
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [("OnSchedule", "True")]  # type: ignore[attr-defined]
    pools.clock.now = T0 + 60  # on time: the same estimate, nothing written
    writes = len(pools.writes.writes)
    pools.reconciler.reconcile("worker")
    assert pools.status()["estimate"] == estimate
    assert pools.writes.writes[writes:] == [("nodepools", "unchanged")]
    pools.clock.now = T0 + 3000  # n1 still draining, 50 minutes in: past the late bound
    pools.reconciler.reconcile("worker")
    status = pools.status()
    assert status["estimate"] != estimate
    condition = status["conditions"][0]  # type: ignore[index]
    assert (condition["status"], condition["reason"]) == ("False", "RolloutLate")
    pools.join("n1", DONE)
    for name in ("n2", "n3"):
        pools.join(name, DONE)
    pools.reconciler.reconcile("worker")
    assert "estimate" not in pools.status() and not pools.status().get("conditions")


def test_a_held_machine_keeps_its_slot_for_as_long_again_as_it_has_been_held() -> None:
    own = Expected(UPDATE, "draining", T0, T0 + 60, T0 + 90, T0 + 300, T0 + 400, 5, "pool")
    held = UpdateCursor(step=S.DRAINING, current="v1", desired="v2", entered_at=T0)
    degraded = UpdateCursor(step=S.DEGRADED, current="v1", desired="v2", entered_at=T0 + 200)
    made = rollout_expected([(held, own, None), (degraded, None, None)], "v2", WHOLE, now=T0 + 500)
    assert made is not None and made.at_once == 2 and made.machines_left == 2
    # 410 s past its draining's late bound: 410 s more, then the 240 s left after it;
    # degraded for 300 s: 300 s more; the first slot frees last, the other within reach
    spread = 410 + (400 - 300)
    assert made.ends_at - T0 == pytest.approx(
        500 + 410 + 240 + spread / LATE_Z * expected_maximum(2)
    )
    # the next machine waits for the first slot free: the degraded one's, 300 s from now
    members = [(held, own, None), (degraded, None, None), (WAITING, None, None)]
    more = rollout_expected(members, "v2", WHOLE, now=T0 + 500)
    assert more is not None  # and ends a whole update later, after the first slot frees
    assert more.ends_at - T0 == pytest.approx(500 + 300 + 600)


def test_the_last_of_several_slots_is_later_than_a_typical_one() -> None:
    assert expected_maximum(1) == 0.0
    assert 0.55 < expected_maximum(2) < 0.6  # E[max of 2 normals] = 0.564
    assert 1.1 < expected_maximum(5) < 1.2  # 1.163
    assert expected_maximum(50) > expected_maximum(5)


def test_a_machine_not_started_takes_its_own_classes_update() -> None:
    slow = PerMachine(seconds=1500.0, spread=120.0, samples=5)
    members = [(WAITING, None, slow), (WAITING, None, None), (WAITING, None, slow)]
    made = rollout_expected(members, "v2", WHOLE, now=T0, at_once_seen=2)
    # a slow one in one slot (1500); the pool's 600 in the other, then the second slow one
    assert made is not None and made.ends_at - T0 == pytest.approx(600 + 1500)
    learned = Learned()
    for _ in range(5):
        learned.learn(StepKey(UPDATE, "rebooting", "infra", "Vendor Slow"), 1800)
        learned.learn(StepKey(UPDATE, "rebooting", "worker", "Vendor Fast"), 600)
        learned.learn(StepKey(UPDATE, "resuming", "worker", "Vendor Fast"), 0)
        learned.learn(StepKey(UPDATE, "resuming", "infra", "Vendor Slow"), 0)
    # a small pool of slow machines, before five of them were learned: its class elsewhere
    own = per_machine(learned, "infra-new", "Vendor Slow")
    assert own is not None and own.seconds == 1800
