"""When a pool's rollout is expected to finish, from the machines left, how many update
at once and how long an update of the pool's machines took.

- One machine's whole update (:func:`per_machine`): the sum of the learned means of an
  update's steps for its hardware class in this pool (or wider, as an estimate falls
  back: the class in any pool first, since a small pool of slow machines learns late);
  a sum's expectation is the sum of the means, where medians fall short of durations that
  run late more than early; its spread adds the steps' spreads in quadrature, as
  :mod:`.expected` does for one host.
- A machine under way (from ``update pending``, its turn given, to ``resuming``) has what
  its own estimate left (:class:`~..books.records.Expected`, none below zero), or, without
  one, a whole update less the time it has run; once it has run longer than a whole
  update, as long again as it is overdue (a lost reboot holds its slot as a late step
  does, not a slot free at once).
- A machine late in its step (past the step's late bound) is expected to need as long
  again as it has been late, then the rest of its update; a degraded one, as long again as
  it has been degraded: nothing says when a blocked drain or a failed apply ends, and the
  slot it holds is not free for the next machine.
- A machine not started yet takes a whole update, in the first slot free: there are ``at
  once`` slots, the most machines seen updating together in this rollout (a
  MachineConfigPool's ``maxUnavailable`` shows in it), at least one. The slot that frees
  last is the end, made later by the expected maximum of the slots freeing near it (the
  last of several is later than a typical one). The late bound adds the work left's
  spread (the machines' spreads in quadrature, shared among the slots) and the last
  machine's, never nearer than a tenth of the time left.

No learned update of the pool's machines, no estimate: nothing is made up.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from ..api.timefmt import parse_rfc3339, rfc3339, rfc3339_ms
from ..api.updates import ORDER, UpdateStep
from ..books.estimates import clock_time
from ..books.records import Expected, UpdateCursor
from .expected import UPDATE_ORDER
from .keys import ANY, UPDATE, StepKey
from .learned import LATE_QUANTILE, Learned

# the late bound is never nearer than this share of the time left: machines that all took
# the same time once will not keep to the second, and a rollout told late for a second's
# jitter would be told late all the time
LEAST_SPREAD = 0.1
LAST_STEP = UpdateStep.RESUMING  # every update ends in it, after a reboot or a reload
LATE_Z = NormalDist().inv_cdf(LATE_QUANTILE)  # a late bound is this many deviations late
ON_SCHEDULE = "OnSchedule"  # the NodePool's condition: the rollout keeps to its first estimate
ROLLOUT_LATE, WITHIN_ESTIMATE = "RolloutLate", "WithinEstimate"


@dataclass(frozen=True, slots=True)
class PerMachine:
    seconds: float  # the sum of its steps' means: what a whole update takes, on average
    spread: float  # the steps' late bounds less their medians, in quadrature
    samples: int  # the fewest durations any of its steps rests on


@dataclass(frozen=True, slots=True)
class RolloutExpected:
    ends_at: float
    late_at: float
    machines_left: int
    at_once: int
    per_machine: PerMachine
    made_at: float


def expected_maximum(count: int) -> float:
    """The expected largest of ``count`` standard normal deviations (Blom): 0 for one."""
    if count <= 1:
        return 0.0
    return NormalDist().inv_cdf((count - 0.375) / (count + 0.25))


def per_machine(learned: Learned, pool: str, hardware: str = ANY) -> PerMachine | None:
    """One machine's whole update in ``pool`` on ``hardware`` (each step from the narrowest
    key with enough durations: this class in this pool, in any pool, then the pool's, the
    fleet's); None until enough machines went through a whole update (its last step,
    ``resuming``, learned): the first steps alone would make a rollout look short."""
    if learned.estimate(StepKey(UPDATE, LAST_STEP.value, pool, hardware)) is None:
        return None  # too few whole updates yet: the steps learned would be a part of one
    seconds = spread2 = 0.0
    samples: list[int] = []
    for step in UPDATE_ORDER:
        estimate = learned.estimate(StepKey(UPDATE, step.value, pool, hardware))
        if estimate is not None:
            seconds += estimate.mean
            spread2 += (estimate.late - estimate.median) ** 2
            samples.append(estimate.samples)
    if not samples:
        return None
    return PerMachine(seconds, math.sqrt(spread2), min(samples))


def rollout_expected(
    members: Iterable[tuple[UpdateCursor, Expected | None, PerMachine | None]],
    target: str,
    whole: PerMachine | None,
    *,
    now: float,
    at_once_seen: int = 0,
) -> RolloutExpected | None:
    """When the rollout to ``target`` of these members ends (None: nothing left, or no
    learned update to say it from). Each member comes with its own machine's whole update
    (its hardware class's), ``whole`` is the pool's, shown beside the estimate."""
    if whole is None or not target:
        return None
    under_way: list[tuple[float, float]] = []  # (seconds left, spread) of each machine
    waiting: list[PerMachine] = []  # the machines not started, in the order they go
    for update, expected, own in members:
        machine = own or whole
        if update.step == UpdateStep.UPDATED and update.current == target:
            continue
        overdue = max(now - update.entered_at, 0.0)  # as long again as it has been there
        if update.step == UpdateStep.DEGRADED:  # it keeps its slot until someone acts
            under_way.append((overdue, overdue))
        elif update.step not in ORDER:  # at rest on the old config: not started
            waiting.append(machine)
        elif expected is not None and expected.kind == UPDATE:
            if now > expected.step_late_at:  # late in its step: perhaps held by something
                held = now - expected.step_late_at  # as long again as it has been late
                left = held + (expected.ends_at - expected.step_ends_at)  # and the rest
                under_way.append((left, held + (expected.late_at - expected.ends_at)))
                continue
            late = max(expected.late_at - max(expected.ends_at, now), 0.0)
            under_way.append((max(expected.ends_at - now, 0.0), late))
        else:
            ran = now - (update.started_at or now)
            if ran > machine.seconds:  # past its whole update: held, as a late step is
                under_way.append((ran - machine.seconds, machine.spread))
            else:
                under_way.append((machine.seconds - ran, machine.spread))
    if not under_way and not waiting:
        return None
    at_once = max(len(under_way), at_once_seen, 1)
    # each slot: (when it is free, the spread of the machine it runs last): the machines
    # not started take the first slot free, one after another
    slots = [(left, spread) for left, spread in under_way]
    slots += [(0.0, 0.0)] * (at_once - len(slots))
    heapq.heapify(slots)
    for machine in waiting:
        free, _ = heapq.heappop(slots)
        heapq.heappush(slots, (free + machine.seconds, machine.spread))
    last, last_spread = max(slots)
    # the rollout ends when its last slot does: of the slots freeing near the same time,
    # the latest is later than each one's own estimate by the expected maximum of as many
    # deviations (Blom), so the end is not systematically early; earlier machines' errors
    # do not pile up in one slot, as the next machine takes whichever slot frees first
    sigma = last_spread / LATE_Z
    near = sum(1 for free, _ in slots if free >= last - 2 * sigma)
    left_seconds = last + sigma * expected_maximum(near)
    # the late bound: the work left's spread shared among the slots, and the last machine's
    spreads = [spread for _, spread in under_way] + [m.spread for m in waiting]
    shared = math.sqrt(sum(spread**2 for spread in spreads))
    spread = max(math.hypot(shared / at_once, last_spread), LEAST_SPREAD * left_seconds)
    return RolloutExpected(
        ends_at=now + left_seconds,
        late_at=now + left_seconds + spread,
        machines_left=len(under_way) + len(waiting),
        at_once=at_once,
        per_machine=whole,
        made_at=now,
    )


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
    """What the NodePool shows: the estimate it said while the rollout stays within it
    (its end no earlier than one spread before the said end, no later than the said late
    bound), else the new one, carrying the first estimate's end and late bound. A status
    therefore changes when the rollout leaves what was said, not at each machine's step."""
    if new is None:
        return None
    if said is None:
        return wire(new)
    ends, late = parse_rfc3339(said.get("endsAt")), parse_rfc3339(said.get("lateAt"))
    if ends is None or late is None:
        return wire(new)
    if ends - (late - ends) <= new.ends_at <= late:
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
            f"expected to end at {ends} ({estimate.get('machinesLeft')} machines left, "
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
