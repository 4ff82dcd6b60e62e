"""What a HostState says of what to expect of its host (:class:`~.records.Expected`, made
by durations/ when a step begins): its ``status.estimate`` and its ``Slow`` condition.

Pure functions of the expectation and the clock, as every projection is; their words do
not change as time passes, so a status is rewritten only when the step or the estimate
does.
"""

from __future__ import annotations

import time
from typing import Any

from ..api.base import CONDITION_MESSAGE_MAX, REASON_MAX
from ..api.hoststate import ConditionType
from ..api.timefmt import rfc3339, rfc3339_ms
from .records import Expected, cut
from .stuck import human_duration


def usual(expected: Expected) -> str:
    """``3m0s-12m0s on machines like it (pool worker, …), from 240 past durations``."""
    median = human_duration(expected.step_ends_at - expected.entered_at)
    late = human_duration(expected.step_late_at - expected.entered_at)
    return (
        f"{expected.step} takes {median}-{late} on machines like it ({expected.basis}), "
        f"from {expected.samples} past durations"
    )


def usual_of_step(expected: Expected | None, step: str, entered_at: float) -> str:
    """``; draining takes 3m0s-12m0s on machines like it (…), from 240 past durations``
    when the estimate is of this step (entered at this time); "" when there is none."""
    if expected is None or expected.step != step or expected.entered_at != entered_at:
        return ""
    return f"; {usual(expected)}"


def slow_condition(expected: Expected | None, now: float) -> dict[str, Any] | None:
    """``Slow`` while the host is in a step it has an estimate of: True once past the
    step's late bound (as late as one in ten was, or later), with what is usual; absent
    otherwise. Its words do not change with the clock, so a status is not rewritten."""
    if expected is None:
        return None
    if now >= expected.step_late_at:
        return {
            "type": ConditionType.SLOW.value,
            "status": "True",
            "reason": "SlowerThanUsual",
            "message": cut(
                f"in {expected.step} since {rfc3339(expected.entered_at)}; {usual(expected)}",
                CONDITION_MESSAGE_MAX,
            ),
            "lastTransitionTime": rfc3339(expected.step_late_at),
        }
    return {
        "type": ConditionType.SLOW.value,
        "status": "False",
        "reason": "AsUsual",
        "message": cut(usual(expected), CONDITION_MESSAGE_MAX),
        "lastTransitionTime": rfc3339(expected.entered_at),
    }


DAY = 24 * 3600


def clock_time(at: float, since: float) -> str:
    """``at`` as ``HH:MM`` in UTC, for a column; ``>24h`` when over a day after ``since``."""
    if at - since > DAY:
        return ">24h"
    return time.strftime("%H:%M", time.gmtime(at))


def estimate_status(expected: Expected) -> dict[str, Any]:
    return {
        "kind": expected.kind,
        "step": expected.step,
        "enteredAt": rfc3339_ms(expected.entered_at),
        "stepEndsAt": rfc3339_ms(expected.step_ends_at),
        "stepLateAt": rfc3339_ms(expected.step_late_at),
        "endsAt": rfc3339_ms(expected.ends_at),
        "lateAt": rfc3339_ms(expected.late_at),
        "endsBy": clock_time(expected.ends_at, expected.entered_at),
        "lateBy": clock_time(expected.late_at, expected.entered_at),
        "samples": expected.samples,
        "basis": cut(expected.basis, REASON_MAX),
    }
