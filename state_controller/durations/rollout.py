"""When a pool's rollout is expected to finish, from the machines left, how many update
at once and how long updates of the pool's machines took.

The rollout is played out many times (:data:`RUNS`), each machine's update drawn from the
durations learned for its hardware class in this pool (or wider, as an estimate falls
back: the class in any pool first, since a small pool of slow machines learns late), as
:mod:`.draws` says: a hold seen among those machines comes back in the draws as often as
it came, so the rollout's end allows for the holds still to come, which decide the last
machine's end far more than a typical update does.

- A machine under way (from ``update pending``, its turn given, to ``resuming``, or
  degraded) keeps its slot for what is left of its update, drawn from the durations longer
  than its step has run (a held step, or a degraded one, as long again as it has been
  held); the slot it holds is not free for the next machine.
- A machine not started yet takes a whole update, in the first slot free: there are ``at
  once`` slots, the most machines seen updating together at two looks in a row in this
  rollout (:func:`at_once_held`; a MachineConfigPool's ``maxUnavailable`` shows in it), at
  least one. The slot that frees last is the rollout's end.

The estimate is the median of the ends played, its late bound their 90th percentile (never
nearer than a tenth of the time left: a rollout told late for a second's jitter would be
told late all the time). The draws are seeded by the rollout and the machines left, so the
same rollout gives the same estimate. No learned update of the pool's machines, no
estimate: nothing is made up.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..api.timefmt import parse_rfc3339, rfc3339, rfc3339_ms
from ..api.updates import ORDER, UpdateStep, in_progress
from ..books.estimates import clock_time
from ..books.records import UpdateCursor
from .draws import MachineDraws, Ring
from .expected import UPDATE_ORDER
from .keys import ANY, UPDATE, StepKey
from .learned import LATE_QUANTILE, Learned
from .window import quantile

LEAST_SPREAD = 0.1  # the late bound is never nearer than this share of the time left
DEGRADED = UpdateStep.DEGRADED.value
LAST_STEP = UpdateStep.RESUMING  # every update ends in it, after a reboot or a reload
RUNS = 200  # rollouts played for an estimate: its median moves by under 1 % from one to the next
LEAST_RUNS = 40  # a big pool's: its end varies less, as many machines' durations average out
DRAWS = 100_000  # machines drawn for one estimate at most: a big pool is played fewer times
KEEP_WITHIN = 0.05  # of the time left: an estimate said stands while a new one is this near
LEAST_ENDED = 3  # durations a step's ring rests on at least: machines still in it only weigh them
TABLE = 256  # whole updates drawn once per kind of machine, taken in turn by the runs
ON_SCHEDULE = "OnSchedule"  # the NodePool's condition: the rollout keeps to its first estimate
ROLLOUT_LATE, WITHIN_ESTIMATE = "RolloutLate", "WithinEstimate"


@dataclass(frozen=True, slots=True)
class PerMachine:
    seconds: float  # the sum of its steps' means (and the degraded share's): on average
    samples: int  # the fewest durations any of its steps rests on
    draws: MachineDraws  # the durations a rollout is played with


@dataclass(frozen=True, slots=True)
class RolloutExpected:
    ends_at: float
    late_at: float
    machines_left: int
    at_once: int
    per_machine: PerMachine
    made_at: float


# by (pool, class), either of them ANY for every one: by step, how long each machine
# still in it has been there
Running = Mapping[tuple[str, str], Mapping[str, Sequence[float]]]


def running_of(machines: Iterable[tuple[str, str, UpdateCursor]], now: float) -> Running:
    """How long each machine under way (its pool, its class, its update) has been in its
    step, under the four keys a learned duration of it would be kept under: the durations
    a step's estimate rests on were taken while these machines were still in it, from
    whichever pools and classes the key spans."""
    out: dict[tuple[str, str], dict[str, list[float]]] = {}
    for pool, hardware, update in machines:
        if not update.entered_at or not in_progress(update.step):
            continue
        ran = max(now - update.entered_at, 0.0)
        for each in dict.fromkeys(((pool, hardware), (ANY, hardware), (pool, ANY), (ANY, ANY))):
            out.setdefault(each, {}).setdefault(update.step.value, []).append(ran)
    return out


def per_machine(
    learned: Learned,
    pool: str,
    hardware: str = ANY,
    running: Running | None = None,
) -> PerMachine | None:
    """One machine's whole update in ``pool`` on ``hardware``, each step from the narrowest
    key with enough durations (:func:`_ring`: this class in this pool, in any pool, then
    the pool's, the fleet's), or those it has (:func:`_few`); None until enough machines
    went through a whole update (its last step, ``resuming``, learned): the first steps
    alone would make a rollout look short. ``running``: the machines still in a step
    (:func:`running_of`), drawn beside the durations of the key their pool and class fall
    under, as durations known only to be longer (:meth:`.draws.Ring.of`)."""
    running = running or {}
    last = _ring(learned, StepKey(UPDATE, LAST_STEP.value, pool, hardware), running)
    if last is None:
        return None  # too few whole updates yet: the steps learned would be a part of one
    seconds = 0.0
    samples: list[int] = []
    rings: dict[str, Ring] = {}
    for step in UPDATE_ORDER:
        key = StepKey(UPDATE, step.value, pool, hardware)
        found = _ring(learned, key, running) or _few(learned, key, running)
        if found is not None:
            _, ring, ended = found
            seconds += ring.mean()
            samples.append(ended)
            rings[step.value] = ring
    # a failed apply's time, in the share of the whole updates of the same machines
    whole_key = last[0]
    degraded_key = StepKey(UPDATE, DEGRADED, whole_key.pool, whole_key.hardware)
    share = min(learned.seen(degraded_key) / max(learned.seen(whole_key), 1), 1.0)
    degraded = learned.ring(degraded_key, least=1)[1] if share else ()
    if degraded:
        seconds += share * sum(degraded) / len(degraded)
    held = running.get((whole_key.pool, whole_key.hardware), {}).get(DEGRADED, ())
    draws = MachineDraws(rings, Ring.of(degraded, held) if degraded else None, share)
    return PerMachine(seconds, min(samples), draws)


def _ring(learned: Learned, key: StepKey, running: Running) -> tuple[StepKey, Ring, int] | None:
    """The ring of the narrowest of ``key``'s wider keys with at least the learned minimum
    of durations and machines still in the step together, :data:`LEAST_ENDED` of them
    durations; the key, its ring and the durations it rests on. The machines still in a
    step count: early in a rollout a small pool of slow machines has too few steps ended
    of its own, and the wider key that has enough is the fleet's, whose quick machines
    would make it look short; its machines under way are evidence of its own."""
    ended = min(LEAST_ENDED, learned.min_samples)
    for each in key.wider():
        values = learned.values(each)
        still = _still(running, each)
        if len(values) >= ended and len(values) + len(still) >= learned.min_samples:
            return each, Ring.of(values, still), len(values)
    return None


def _few(learned: Learned, key: StepKey, running: Running) -> tuple[StepKey, Ring, int] | None:
    """The ring of the narrowest key with any duration of the step, for a step with too
    few for :func:`_ring`: left out, a whole step would be missing from every machine's
    update. It happens between a machine's leaving a step and that step's duration being
    learned (from its record, once written): for that moment the step has one duration
    fewer, and the machine is no longer in it. None: no machine was seen to take it."""
    found, values = learned.ring(key, least=1)
    if not values:
        return None
    return found, Ring.of(values, _still(running, found)), len(values)


def _still(running: Running, key: StepKey) -> Sequence[float]:
    """How long each machine still in ``key``'s step, under ``key``'s pool and class, has
    been in it."""
    return running.get((key.pool, key.hardware), {}).get(key.step, ())


def rollout_expected(
    members: Iterable[tuple[UpdateCursor, PerMachine | None]],
    target: str,
    whole: PerMachine | None,
    *,
    now: float,
    at_once_seen: int = 0,
) -> RolloutExpected | None:
    """When the rollout to ``target`` of these members ends (None: nothing left, or no
    learned update to say it from). Each member comes with its own machine's whole update
    (its hardware class's), ``whole`` is the pool's, for those without and shown beside
    the estimate. ``at_once_seen``: the slots (:func:`at_once_held`); 0: as many as are
    under way now."""
    if whole is None or not target:
        return None
    under_way: list[tuple[UpdateCursor, MachineDraws]] = []
    waiting: list[MachineDraws] = []  # the machines not started, in the order they go
    for update, own in members:
        machine = (own or whole).draws
        if update.step == UpdateStep.UPDATED and update.current == target:
            continue
        if update.step in ORDER or update.step == UpdateStep.DEGRADED:
            under_way.append((update, machine))
        else:  # at rest on the old config: not started
            waiting.append(machine)
    if not under_way and not waiting:
        return None
    at_once = at_once_seen or max(len(under_way), 1)
    rng = random.Random(f"{target}/{len(under_way)}/{len(waiting)}")
    tables = {id(m): [m.whole(rng) for _ in range(TABLE)] for m in waiting}
    runs = max(LEAST_RUNS, min(RUNS, DRAWS // (len(under_way) + len(waiting))))
    ends = sorted(
        _played(under_way, [tables[id(m)] for m in waiting], at_once, now, rng) for _ in range(runs)
    )
    left = quantile(ends, 0.5)
    late = max(quantile(ends, LATE_QUANTILE), left * (1 + LEAST_SPREAD))
    return RolloutExpected(
        ends_at=now + left,
        late_at=now + late,
        machines_left=len(under_way) + len(waiting),
        at_once=at_once,
        per_machine=whole,
        made_at=now,
    )


def at_once_held(before: tuple[int, int] | None, under_way: int) -> tuple[int, int]:
    """(the machines under way at this look, the most held): the most machines seen under
    way at two looks in a row (the pool is played at most once an interval). As one
    machine ends and the next begins, the controller may read the new one's start before
    the old one's end, and for that moment one more machine is under way than the rollout
    allows; taken as the rollout's width, it would end every later estimate too early.
    ``before``: the last look's pair, None at the first."""
    last, held = before or (0, 0)
    return under_way, max(held, min(last, under_way))


def _played(
    under_way: list[tuple[UpdateCursor, MachineDraws]],
    waiting: list[list[float]],
    at_once: int,
    now: float,
    rng: random.Random,
) -> float:
    """One rollout played out: the seconds until its last slot frees."""
    slots = [machine.left(update, now, rng) for update, machine in under_way]
    slots += [0.0] * (at_once - len(slots))
    heapq.heapify(slots)
    for table in waiting:  # each takes the first slot free
        heapq.heapreplace(slots, slots[0] + table[rng.randrange(TABLE)])
    return max(slots)


def wire(estimate: RolloutExpected, first: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The NodePool's ``status.estimate``; ``first``: the estimate first said for this
    rollout, whose end and late bound it carries on (itself when None)."""
    out: dict[str, Any] = {
        "endsAt": rfc3339_ms(estimate.ends_at),
        "lateAt": rfc3339_ms(estimate.late_at),
        "endsBy": clock_time(estimate.ends_at, estimate.made_at),
        "madeAt": rfc3339_ms(estimate.made_at),
        "machinesLeft": estimate.machines_left,
        "atOnce": estimate.at_once,
        "machineSeconds": round(estimate.per_machine.seconds, 3),
        "samples": estimate.per_machine.samples,
    }
    out["firstEndsAt"] = (first or out).get("firstEndsAt") or (first or out)["endsAt"]
    out["firstLateAt"] = (first or out).get("firstLateAt") or (first or out)["lateAt"]
    return out


def kept(said: Mapping[str, Any] | None, new: RolloutExpected | None) -> dict[str, Any] | None:
    """What the NodePool shows: the estimate it said while the new one's end and late bound
    are both within :data:`KEEP_WITHIN` of the time left of it (the plays of the same
    rollout differ by a little from one machine's step to the next), else the new one,
    carrying the first estimate's end and late bound. A status therefore changes when the
    rollout moves from what was said, or what it allows for does (a hold seen), not at
    each machine's step."""
    if new is None:
        return None
    if said is None:
        return wire(new)
    ends, late = parse_rfc3339(said.get("endsAt")), parse_rfc3339(said.get("lateAt"))
    if ends is None or late is None:
        return wire(new)
    near = KEEP_WITHIN * max(new.ends_at - new.made_at, 0.0)
    if abs(new.ends_at - ends) <= near and abs(new.late_at - late) <= near:
        return dict(said)
    return wire(new, said)


def on_schedule(
    estimate: Mapping[str, Any] | None, before: Mapping[str, Any] | None, now: float
) -> dict[str, str] | None:
    """The NodePool's ``OnSchedule`` condition: False (reason ``RolloutLate``) once the
    rollout is expected to end after the late bound first said for it, with both in the
    message; True while it is not; absent without an estimate. The transition time moves
    only with the status."""
    if estimate is None:
        return None
    ends, first_late = estimate.get("endsAt"), estimate.get("firstLateAt")
    late = bool(ends and first_late and str(ends) > str(first_late))  # RFC 3339 UTC: as text
    if late:
        status, reason = "False", ROLLOUT_LATE
        message = (
            f"expected to end at {ends} ({_machines(estimate.get('machinesLeft'))} left, "
            f"{estimate.get('atOnce')} at once), after {first_late}, the late bound first "
            f"said (its end: {estimate.get('firstEndsAt')})"
        )
    else:
        status, reason = "True", WITHIN_ESTIMATE
        message = f"expected to end at {ends}, within the late bound first said ({first_late})"
    since = (before or {}).get("lastTransitionTime")
    if not since or (before or {}).get("status") != status:
        since = rfc3339(now)
    return {
        "type": ON_SCHEDULE,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": str(since),
    }


def _machines(count: Any) -> str:
    return f"{count} machine" if count == 1 else f"{count} machines"
