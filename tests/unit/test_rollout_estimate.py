"""A pool's rollout estimate: the machines left, how many update at once and how long
updates of the pool's machines took, played out from the durations learned (a hold seen
among them comes back as often as it came); kept as said while the rollout runs within
it, a RolloutLate Event once it runs past its late bound; none without learned updates."""

from __future__ import annotations

import random

import pytest

from state_controller.api.timefmt import parse_rfc3339
from state_controller.api.updates import UpdateStep as S
from state_controller.books.records import UpdateCursor
from state_controller.durations.draws import MachineDraws, Ring
from state_controller.durations.keys import ANY, UPDATE, StepKey
from state_controller.durations.learned import Learned
from state_controller.durations.rollout import (
    LEAST_SPREAD,
    PerMachine,
    kept,
    on_schedule,
    per_machine,
    rollout_expected,
    running_of,
    wire,
)
from state_controller.durations.tail import POINTS
from testbed.clocks import T0
from tests.unit.test_pool_reconciler import Pools, cluster  # noqa: F401  (the fixture)

DONE = UpdateCursor(step=S.UPDATED, current="v2", desired="v2")
WAITING = UpdateCursor(step=S.UPDATED, current="v1", desired="v1")


def machine(rebooting: tuple[float, ...] = (500.0,), resuming: float = 100.0) -> PerMachine:
    """A machine whose update is a reboot (of these durations, drawn) and a resume."""
    rings = {"rebooting": Ring.of(rebooting), "resuming": Ring.of((resuming,))}
    mean = sum(rebooting) / len(rebooting) + resuming
    return PerMachine(mean, len(rebooting), MachineDraws(rings))


WHOLE = machine()  # 600 s, every time


def in_step(step: S, entered: float, started: float | None = None) -> UpdateCursor:
    return UpdateCursor(
        step=step, current="v1", desired="v2", entered_at=entered, started_at=started or entered
    )


def learn(learned: Learned, step: str, seconds: float, times: int, pool: str = "worker") -> None:
    for _ in range(times):
        learned.learn(StepKey(UPDATE, step, pool, "any class"), seconds)


def test_one_machines_update_is_the_sum_of_the_pools_learned_steps() -> None:
    learned = Learned()
    assert per_machine(learned, "worker") is None
    for step, seconds in (("draining", 60.0), ("rebooting", 500.0), ("resuming", 40.0)):
        learn(learned, step, seconds, 5)
    whole = per_machine(learned, "worker")
    assert whole is not None and whole.seconds == 600 and whole.samples == 5
    assert whole.draws is not None and sorted(whole.draws.steps) == [
        "draining", "rebooting", "resuming"
    ]  # fmt: skip
    assert whole.draws.whole(random.Random(1)) == 600


def test_a_failed_apply_weighs_as_often_as_updates_degraded() -> None:
    """The time in ``update degraded`` is no step every machine takes: it is added to a
    whole update in the share of whole updates that went through it."""
    learned = Learned()
    learn(learned, "rebooting", 500.0, 10)
    learn(learned, "resuming", 100.0, 10)
    assert (whole := per_machine(learned, "worker")) is not None and whole.seconds == 600
    learn(learned, "update degraded", 1800.0, 2)  # two in ten: fewer than an estimate needs
    whole = per_machine(learned, "worker")
    assert whole is not None and whole.draws is not None
    assert whole.draws.degraded_share == pytest.approx(0.2)
    assert whole.seconds == pytest.approx(600 + 0.2 * 1800)
    rng = random.Random(7)
    draws = [whole.draws.whole(rng) for _ in range(2000)]
    assert set(draws) == {600.0, 2400.0}
    assert draws.count(2400.0) / len(draws) == pytest.approx(0.2, abs=0.03)
    # a machine past its apply is not held by one any more
    rebooting = in_step(S.REBOOTING, T0)
    assert {whole.draws.left(rebooting, T0 + 100, rng) for _ in range(200)} == {500.0}


def test_the_work_left_is_shared_among_the_machines_at_once() -> None:
    members = [
        (DONE, None),
        (in_step(S.REBOOTING, T0), None),  # 100 s into its 500 s reboot: 400 s, then 100
        *[(WAITING, None)] * 4,  # not started: a whole update each
    ]
    made = rollout_expected(members, "v2", WHOLE, now=T0 + 100, at_once_seen=2)
    assert made is not None
    assert (made.machines_left, made.at_once) == (5, 2)
    # two slots: 500 s then 1100, 1700; 0 then 600, 1200: the first is the last to free
    assert made.ends_at - T0 == pytest.approx(100 + 1700)
    # every duration the same: the late bound is the least spread allowed
    assert made.late_at - made.ends_at == pytest.approx(LEAST_SPREAD * 1700)
    assert rollout_expected(members, "v2", None, now=T0) is None  # nothing learned
    assert rollout_expected([(DONE, None)], "v2", WHOLE, now=T0) is None  # nothing left
    alone = rollout_expected(members, "v2", WHOLE, now=T0 + 100)
    assert alone is not None and alone.at_once == 1  # only one seen under way
    assert alone.ends_at - T0 == pytest.approx(100 + 500 + 4 * 600)


def test_a_hold_seen_among_the_machines_is_in_the_late_bound() -> None:
    """One reboot in ten was lost for half an hour: a rollout of ten machines after it
    allows for it in its late bound (where normal spreads around the mean would not), and
    the same rollout gives the same estimate."""
    typical = machine((500.0,) * 9 + (2300.0,))
    plain = machine((500.0,) * 10)
    members = [(WAITING, None)] * 10
    held = rollout_expected(members, "v2", typical, now=T0, at_once_seen=5)
    calm = rollout_expected(members, "v2", plain, now=T0, at_once_seen=5)
    assert held is not None and calm is not None
    assert calm.ends_at - T0 == pytest.approx(1200)  # two rounds of 600 s
    # two in three rollouts of ten see a lost reboot, and the median allows for one: its
    # slot frees at 2400 s, while the other four take the other nine machines by 1800 s
    assert held.ends_at - T0 == pytest.approx(2400)
    assert held.late_at >= held.ends_at
    again = rollout_expected(members, "v2", typical, now=T0, at_once_seen=5)
    assert again == held
    # a rollout of one machine seldom meets it: its median does not, its late bound may
    one = rollout_expected([(WAITING, None)], "v2", typical, now=T0)
    assert one is not None and one.ends_at - T0 == pytest.approx(600)


def test_a_machine_under_way_is_drawn_among_the_durations_longer_than_it_has_run() -> None:
    varied = machine((300.0, 400.0, 500.0, 600.0, 2000.0))
    rng = random.Random(3)
    rebooting = in_step(S.REBOOTING, T0)
    # 450 s in: 500, 600 or 2000 s in all, less the 450, then 100 s resuming
    lefts = {varied.draws.left(rebooting, T0 + 450, rng) for _ in range(300)}
    assert lefts == {150.0, 250.0, 1650.0}


def test_machines_still_in_a_step_are_durations_known_only_to_be_longer() -> None:
    """Early in a rollout the durations learned are the quick machines' (the first to
    finish): a machine still in the step hands its share to the longer durations, and the
    share of one past them all goes to the tail fitted beyond it (durations.tail)."""
    ring = Ring.of((100.0, 200.0, 300.0, 400.0, 500.0), running=(350.0,))
    assert ring.values == (100.0, 200.0, 300.0, 400.0, 500.0)
    shares = [b - a for a, b in zip((0.0, *ring.cumulative), ring.cumulative, strict=False)]
    assert shares == pytest.approx([1, 1, 1, 1.5, 1.5])  # the sixth share, split in two
    rng = random.Random(5)
    draws = [ring.draw(rng) for _ in range(6000)]
    assert draws.count(500.0) / len(draws) == pytest.approx(0.25, abs=0.02)
    assert draws.count(100.0) / len(draws) == pytest.approx(1 / 6, abs=0.02)
    beyond = Ring.of((100.0, 200.0), running=(50.0, 900.0))
    assert beyond.values[:2] == (100.0, 200.0)  # 50: handed on to 100, 200 and 900
    assert len(beyond.values) == 2 + POINTS and min(beyond.values[2:]) > 900.0
    assert beyond.cumulative[1:] == pytest.approx([8 / 3 + j / 3 for j in range(POINTS + 1)])
    # five reboots learned in pool worker, the quick ones; five machines of the same class
    # still rebooting there, 450 s in, and three of another class for hours
    quick = (300.0, 350.0, 400.0, 450.0, 500.0)
    learned = Learned()
    for seconds in quick:
        learned.learn(StepKey(UPDATE, "rebooting", "worker", "Fast"), seconds)
        learned.learn(StepKey(UPDATE, "resuming", "worker", "Fast"), 0.0)
    running = running_of(
        [("worker", "Fast", in_step(S.REBOOTING, T0))] * 5
        + [("worker", "Slow", in_step(S.REBOOTING, T0 - 10_000))] * 3,
        now=T0 + 450,
    )
    # a new pool of the class: its estimate rests on the class in any pool, which spans
    # the five still rebooting, not the other class's three
    told = per_machine(learned, "infra", "Fast")
    still = per_machine(learned, "infra", "Fast", running)
    assert told is not None and still is not None and still.draws is not None
    assert still.draws.steps["rebooting"].values == quick
    assert still.draws.steps["rebooting"].cumulative == pytest.approx((1, 2, 3, 4, 10))
    members = [(in_step(S.REBOOTING, T0), None)] * 5 + [(WAITING, None)]
    alone = rollout_expected(members, "v2", told, now=T0 + 450)
    with_them = rollout_expected(members, "v2", still, now=T0 + 450)
    assert alone is not None and with_them is not None
    # the five end at 500 s, then the sixth: a reboot of 400 s by the quick ones' median;
    # with the five still rebooting, six in ten reboots take 500 s at least
    assert alone.ends_at - T0 == pytest.approx(500 + 400)
    assert with_them.ends_at - T0 == pytest.approx(500 + 500)


def test_a_machine_past_its_whole_update_holds_its_slot_as_long_again() -> None:
    # a reboot lost: 900 s into a reboot that always took 500 s, 400 s past it: 400 s more
    lost = (in_step(S.REBOOTING, T0), None)
    alone = rollout_expected([lost], "v2", WHOLE, now=T0 + 900)
    assert alone is not None and alone.ends_at - T0 == pytest.approx(900 + 400 + 100)
    # the machine behind it waits for that slot, not for one free at once
    behind = rollout_expected([lost, (WAITING, None)], "v2", WHOLE, now=T0 + 900)
    assert behind is not None and behind.at_once == 1
    assert behind.ends_at - T0 == pytest.approx(900 + 500 + 600)
    # a step with nothing learned of it: the whole update less what it ran, or as long
    # again as it is past it
    draining = (in_step(S.DRAINING, T0), None)
    early = rollout_expected([draining], "v2", WHOLE, now=T0 + 450)
    assert early is not None and early.ends_at - T0 == pytest.approx(450 + 150)
    late = rollout_expected([draining], "v2", WHOLE, now=T0 + 900)
    assert late is not None and late.ends_at - T0 == pytest.approx(900 + 300)


def test_a_degraded_machine_keeps_its_slot_for_as_long_again_as_it_has_been_degraded() -> None:
    degraded = in_step(S.DEGRADED, T0 + 200)
    made = rollout_expected([(degraded, None), (WAITING, None)], "v2", WHOLE, now=T0 + 500)
    # degraded for 300 s: 300 s more, then its reboot and resume, then the next machine
    assert made is not None and made.at_once == 1 and made.machines_left == 2
    assert made.ends_at - T0 == pytest.approx(500 + 300 + 600 + 600)
    # with failed applies learned, the time left is drawn among the longer of them
    learned_degraded = MachineDraws(WHOLE.draws.steps, Ring.of((200.0, 1800.0)), 0.1)
    fixed = PerMachine(600.0, 5, learned_degraded)
    drawn = rollout_expected([(degraded, fixed)], "v2", WHOLE, now=T0 + 500)
    assert drawn is not None and drawn.ends_at - T0 == pytest.approx(500 + 1500 + 600)


def test_what_was_said_is_kept_while_the_rollout_runs_within_it() -> None:
    first = rollout_expected([(WAITING, None)] * 4, "v2", WHOLE, now=T0)
    assert first is not None
    said = wire(first)
    assert kept(None, first) == said
    assert (said["firstEndsAt"], said["firstLateAt"]) == (said["endsAt"], said["lateAt"])
    assert on_schedule(said, None, T0)["status"] == "True"  # type: ignore[index]
    nearly = rollout_expected([(WAITING, None)] * 4, "v2", WHOLE, now=T0 + 100)
    assert nearly is not None and kept(said, nearly) == said  # within: unchanged
    # 200 s later of 2400 left: within the late bound still, but not what was said
    moved = rollout_expected([(WAITING, None)] * 4, "v2", WHOLE, now=T0 + 200)
    assert moved is not None and moved.ends_at < parse_rfc3339(said["lateAt"])  # type: ignore[operator]
    assert kept(said, moved) == wire(moved, said)
    # the same end, but a hold since seen in one reboot of five: the late bound it allows
    # for is not the one said
    one = rollout_expected([(WAITING, None)], "v2", WHOLE, now=T0)
    held = machine((500.0,) * 8 + (2300.0,) * 2)
    wider = rollout_expected([(WAITING, None)], "v2", held, now=T0)
    assert one is not None and wider is not None and wider.ends_at == one.ends_at
    assert wider.late_at - T0 == pytest.approx(2400)
    assert kept(wire(one), wider) == wire(wider, wire(one))
    late = rollout_expected([(WAITING, None)] * 4, "v2", WHOLE, now=T0 + 1000)
    assert late is not None
    shown = kept(said, late)
    assert shown is not None and shown["endsAt"] == wire(late)["endsAt"]
    assert shown["firstLateAt"] == said["lateAt"]  # what was first said goes on
    condition = on_schedule(shown, on_schedule(said, None, T0), T0 + 1000)
    assert condition is not None and condition["status"] == "False"
    assert condition["reason"] == "RolloutLate" and "4 machines left" in condition["message"]
    last = on_schedule({**shown, "machinesLeft": 1}, None, T0 + 1000)
    assert last is not None and "(1 machine left, " in last["message"]
    early = rollout_expected([(WAITING, None)], "v2", WHOLE, now=T0)
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
    pools.join("n1", in_step(S.DRAINING, T0))
    pools.reconciler.reconcile("worker")
    assert "estimate" not in pools.status()  # no whole update learned yet: none said
    for _ in range(5):
        learned.learn(StepKey(UPDATE, "resuming", "worker", ANY), 0)
    pools.clock.now = T0
    pools.join("n1", in_step(S.DRAINING, T0))
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


def test_a_machine_not_started_takes_its_own_classes_update() -> None:
    slow = machine((1400.0,))
    members = [(WAITING, slow), (WAITING, None), (WAITING, slow)]
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


def test_a_small_pool_of_slow_machines_rests_on_its_own_class_counting_those_under_way() -> None:
    """Early in a rollout a pool of slow machines has ended three reboots of its own, the
    fleet hundreds of quick ones: with its two machines still rebooting counted, its own
    key is enough, and the fleet's quick reboots do not make its update look short."""
    learned = Learned()
    for _ in range(50):
        learned.learn(StepKey(UPDATE, "rebooting", "worker", "Fast"), 700.0)
        learned.learn(StepKey(UPDATE, "resuming", "worker", "Fast"), 100.0)
    for seconds in (1700.0, 1800.0, 1900.0):
        learned.learn(StepKey(UPDATE, "rebooting", "infra", "Slow"), seconds)
        learned.learn(StepKey(UPDATE, "resuming", "infra", "Slow"), 100.0)
    alone = per_machine(learned, "infra", "Slow")
    assert alone is not None  # the fleet's keys stand in: 3 of the class are too few
    assert alone.draws.steps["rebooting"].mean() == pytest.approx((50 * 700 + 5400) / 53)
    rebooting = [("infra", "Slow", in_step(S.REBOOTING, T0))] * 2
    resuming = [("infra", "Slow", in_step(S.RESUMING, T0 + 950))] * 2  # 50 s in
    own = per_machine(learned, "infra", "Slow", running_of(rebooting + resuming, T0 + 1000))
    assert own is not None
    ring = own.draws.steps["rebooting"]
    assert ring.values == (1700.0, 1800.0, 1900.0)
    assert ring.cumulative == pytest.approx((5 / 3, 10 / 3, 5))  # the two share among all
    assert own.seconds == pytest.approx(1800 + 100)
    assert own.samples == 3
    # two machines under way are not evidence alone: fewer than three durations ended
    learned = Learned()
    for seconds in (1700.0, 1800.0):
        learned.learn(StepKey(UPDATE, "resuming", "infra", "Slow"), seconds)
    three = running_of([("infra", "Slow", in_step(S.RESUMING, T0))] * 3, T0 + 1000)
    assert per_machine(learned, "infra", "Slow", three) is None


def test_a_moments_overlap_as_one_machine_ends_and_the_next_begins_does_not_widen_the_rollout(
    cluster,  # noqa: F811
) -> None:
    """Two machines at a time: at one look the controller has read n3's start before n1's
    end, three under way. The rollout is not taken as three wide: the next look sees two,
    and only a count seen at two looks in a row is. When three do run, two looks say so."""
    learned = Learned()
    for _ in range(5):
        learned.learn(StepKey(UPDATE, "rebooting", "worker", ANY), 600)
        learned.learn(StepKey(UPDATE, "resuming", "worker", ANY), 0)
    pools = Pools(cluster, learned=learned)

    def look(at: float, steps: dict[str, UpdateCursor]) -> tuple[int, float]:
        """The slots and the time left the NodePool shows after a look at ``at``."""
        pools.clock.now = at
        for name, update in steps.items():
            pools.join(name, update)
        pools.reconciler.reconcile("worker")
        estimate = pools.status()["estimate"]
        assert isinstance(estimate, dict)
        return int(estimate["atOnce"]), parse_rfc3339(estimate["endsAt"]) - at  # type: ignore[operator]

    names = [f"n{i}" for i in range(1, 9)]
    two = {"n1": in_step(S.REBOOTING, T0), "n2": in_step(S.REBOOTING, T0)}
    assert look(T0, {n: WAITING for n in names} | two)[0] == 2  # the first look: as many as run
    assert look(T0 + 10, {})[0] == 2  # two looks saw two
    look(T0 + 600, {"n3": in_step(S.PENDING, T0 + 600)})  # n1 ended, its end not read yet
    # n1's end read: n2 and n3 under way, five waiting; two slots: 1 s and 599 s left,
    # then 600 s each: the last ends 1801 s from now (three slots would say 1201)
    slots, left = look(T0 + 601, {"n1": DONE})
    assert (slots, left) == (2, pytest.approx(1801))
    look(T0 + 700, {"n4": in_step(S.PENDING, T0 + 700)})  # the rollout widened to three
    look(T0 + 701, {})
    slots, _ = look(T0 + 702, {"n2": DONE})  # three held across two looks: so many slots
    assert slots == 3


def test_a_pool_done_a_moment_after_its_last_play_shows_no_estimate_and_a_reused_play_is_redone(
    cluster,  # noqa: F811
) -> None:
    """The rollout is played at most once an interval, and a look whose status did not
    change writes nothing (the last write's time stays): so the end of its last machine,
    read a moment after a play, is written at once. What was played before that end is not
    (a finished pool would show when it will finish until some other event came); and a
    play reused while machines moved is played again when it goes stale."""
    learned = Learned()
    for _ in range(5):
        learned.learn(StepKey(UPDATE, "rebooting", "worker", ANY), 600)
        learned.learn(StepKey(UPDATE, "resuming", "worker", ANY), 0)
    pools = Pools(cluster, interval=10, learned=learned)

    def look(at: float, steps: dict[str, UpdateCursor]) -> float | None:
        """The pool reconciled at ``at``; when it asks to be looked at again."""
        pools.clock.now = at
        for name, update in steps.items():
            pools.join(name, update)
        return pools.reconciler.reconcile("worker").requeue_after

    assert look(T0, {"n1": in_step(S.DRAINING, T0)}) is None
    assert pools.status()["estimate"]["machinesLeft"] == 1  # type: ignore[index]
    writes = len(pools.writes.writes)
    assert look(T0 + 20, {}) is None  # played again, the estimate kept as said
    assert pools.writes.writes[writes:] == [("nodepools", "unchanged")]
    assert look(T0 + 21, {"n1": DONE}) is None  # a second after that play: written at once
    status = pools.status()
    assert status["updatedMachineCount"] == 1
    assert "estimate" not in status and not status.get("conditions")

    two = {n: in_step(S.DRAINING, T0 + 100) for n in ("n2", "n3")}  # two more join
    assert look(T0 + 100, two) is None
    assert look(T0 + 120, {}) is None  # played, unchanged
    assert look(T0 + 121, {"n2": DONE}) == pytest.approx(9)  # the play of T0+120 reused
    assert pools.status()["updatedMachineCount"] == 2
    assert look(T0 + 130, {}) is None  # played anew: nothing more to look for


def test_a_step_just_ended_and_not_yet_learned_is_not_left_out_of_the_update() -> None:
    """The fifth machine has left its reboot for resuming, but the reboot's record (and so
    its duration) is not written yet: for that moment the reboot has four durations, one
    short of the minimum, and no machine in it. The update is drawn with the four, not
    without a reboot (which put the pool's estimate a whole reboot early, then late)."""
    learned = Learned()
    learn(learned, "preparing update", 60, 5)
    learn(learned, "rebooting", 600, 4)
    learn(learned, "resuming", 30, 4)
    running = running_of([("worker", "any class", in_step(S.RESUMING, T0))], now=T0 + 10)
    made = per_machine(learned, "worker", "any class", running)
    assert made is not None
    assert made.seconds == pytest.approx(60 + 600 + 30)
    assert made.samples == 4 and "rebooting" in made.draws.steps
