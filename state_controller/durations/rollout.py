"""When a pool's rollout is expected to finish, from the machines left, how many update
at once and how long an update of the pool's machines took.

- One machine's whole update (:func:`per_machine`): the sum of the pool's learned medians
  of an update's steps, in any hardware class (the pool is what a rollout is about); its
  spread adds the steps' spreads in quadrature, as :mod:`.expected` does for one host.
- A machine under way has what its own estimate left (:class:`~..books.records.Expected`,
  none below zero), or, without one, a whole update less the time it has run.
- A machine not started yet takes a whole update.
- They are worked ``at once`` at a time: the most machines seen updating together in this
  rollout (a MachineConfigPool's ``maxUnavailable`` shows in it), at least one. The work
  left divided by that is the time left: the median end; the spreads, in quadrature and
  divided the same way, give the late bound, never nearer than a tenth of the time left.

No learned update of the pool's machines, no estimate: nothing is made up.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..api.timefmt import parse_rfc3339, rfc3339, rfc3339_ms
from ..api.updates import ORDER, UpdateStep
from ..books.projections import clock_time
from ..books.records import Expected, UpdateCursor
from .expected import UPDATE_ORDER
from .keys import ANY, UPDATE, StepKey
from .learned import Learned

# the late bound is never nearer than this share of the time left: machines that all took
# the same time once will not keep to the second, and a rollout told late for a second's
# jitter would be told late all the time
LEAST_SPREAD = 0.1
ON_SCHEDULE = "OnSchedule"  # the NodePool's condition: the rollout keeps to its first estimate
ROLLOUT_LATE, WITHIN_ESTIMATE = "RolloutLate", "WithinEstimate"


@dataclass(frozen=True, slots=True)
class PerMachine:
    median: float
    spread: float  # late bound less median
    samples: int  # the fewest durations any of its steps rests on


@dataclass(frozen=True, slots=True)
class RolloutExpected:
    ends_at: float
    late_at: float
    machines_left: int
    at_once: int
    per_machine: PerMachine
    made_at: float


def per_machine(learned: Learned, pool: str) -> PerMachine | None:
    """One machine's whole update in ``pool`` (None: no step of one learned)."""
    median = spread2 = 0.0
    samples: list[int] = []
    for step in UPDATE_ORDER:
        estimate = learned.estimate(StepKey(UPDATE, step.value, pool, ANY))
        if estimate is not None:
            median += estimate.median
            spread2 += (estimate.late - estimate.median) ** 2
            samples.append(estimate.samples)
    if not samples:
        return None
    return PerMachine(median, math.sqrt(spread2), min(samples))


def rollout_expected(
    members: Iterable[tuple[UpdateCursor, Expected | None]],
    target: str,
    whole: PerMachine | None,
    *,
    now: float,
    at_once_seen: int = 0,
) -> RolloutExpected | None:
    """When the rollout to ``target`` of these members ends (None: nothing left, or no
    learned update to say it from). A degraded machine is not waited for: it needs a
    person, and the estimate says what the rest will do."""
    if whole is None or not target:
        return None
    left = working = 0
    work = spread2 = 0.0
    for update, expected in members:
        if update.step == UpdateStep.UPDATED and update.current == target:
            continue
        if update.step == UpdateStep.DEGRADED:
            continue
        left += 1
        if update.step in ORDER and update.step != UpdateStep.PENDING:
            working += 1
            if expected is not None and expected.kind == UPDATE:
                work += max(expected.ends_at - now, 0.0)
                spread2 += max(expected.late_at - max(expected.ends_at, now), 0.0) ** 2
            else:
                ran = now - (update.started_at or now)
                work += max(whole.median - ran, 0.0)
                spread2 += whole.spread**2
        else:
            work += whole.median
            spread2 += whole.spread**2
    if not left:
        return None
    at_once = max(working, at_once_seen, 1)
    left_seconds = work / at_once
    spread = max(math.sqrt(spread2) / at_once, LEAST_SPREAD * left_seconds)
    return RolloutExpected(
        ends_at=now + left_seconds,
        late_at=now + left_seconds + spread,
        machines_left=left,
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
        "machineSeconds": round(estimate.per_machine.median, 3),
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
