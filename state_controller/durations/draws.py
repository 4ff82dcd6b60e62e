"""One machine's update as the durations learned say it may go, drawn step by step.

Each step is drawn from the durations its key keeps (:meth:`~.learned.Learned.ring`), not
from a normal spread around a mean: a hold already seen among the machines (a drain a
PodDisruptionBudget blocked, a reboot that did not come back) is in the draws as often as
it happened. An update that degraded adds the time its machine spent degraded, in the
share of whole updates that went through it (a failed apply is no step every machine
takes, so it is no step of the sum). A rollout's end is the last of many machines' ends:
it is decided by such rare long holds far more than a machine's typical update is, and
drawing them is how the rollout's estimate (:mod:`.rollout`) and its late bound allow for
them.

A machine under way has the step it is in drawn among the durations longer than it has run
(it has not ended, so the shorter ones are not what it will take); once past the step's
late bound it is held by something, and needs at least as long again as it has been past
it, as a held drain or a lost reboot does. A degraded machine is drawn among the times
degraded longer than its own, or needs as long again as it has been degraded; then it
applies again, reboots and resumes.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass

from ..api.updates import UpdateStep as U
from ..books.records import UpdateCursor
from .expected import UPDATE_ORDER, update_steps_after
from .learned import LATE_QUANTILE
from .tail import tail
from .window import quantile

ORDER_NAMES = tuple(s.value for s in UPDATE_ORDER)
# a failed apply, once seen to, is applied again, then the update goes on
AFTER_DEGRADED = (U.APPLYING.value, *update_steps_after(U.APPLYING.value))
MAY_DEGRADE = frozenset(ORDER_NAMES[: ORDER_NAMES.index(U.APPLYING.value) + 1])


@dataclass(frozen=True, slots=True)
class Ring:
    """The durations one step's estimate rests on, sorted, each with its share."""

    values: tuple[float, ...]
    cumulative: tuple[float, ...]  # the shares' running sum, one per value
    late: float  # the late bound of the durations learned (of the machines still in it: none)

    @classmethod
    def of(cls, values: Iterable[float], running: Iterable[float] = ()) -> Ring:
        """The durations learned, and the machines still in the step (``running``: how
        long each has been in it). Each of those is known only to take longer than it has
        run, so its share goes to the durations longer than that (Kaplan and Meier's
        redistribution to the right); the share of those past every duration goes to the
        fitted tail beyond the last of them (:mod:`.tail`), or stays at its time, the
        least it will take, without a fit. Without them, the first machines to finish a
        step early in a rollout (the quick ones) would be all the rollout is drawn from."""
        learned = sorted(values)
        still = sorted(running)
        points = sorted([(v, False) for v in learned] + [(r, True) for r in still])
        kept: list[float] = []
        cumulative: list[float] = []
        total = extra = 0.0  # extra: the shares handed on to every point further right
        for i, (value, censored) in enumerate(points):
            share = 1.0 + extra
            if censored and i + 1 < len(points):
                extra += share / (len(points) - i - 1)
                continue
            total += share
            kept.append(value)
            cumulative.append(total)
        beyond = tail(learned, still, kept[-1]) if points and points[-1][1] else []
        if beyond:  # the last point's share, spread over the tail past it
            share = cumulative[-1] - (cumulative[-2] if len(cumulative) > 1 else 0.0)
            below = cumulative[-1] - share
            del kept[-1], cumulative[-1]
            for j, value in enumerate(beyond, 1):
                kept.append(value)
                cumulative.append(below + share * j / len(beyond))
        late = quantile(learned, LATE_QUANTILE) if learned else max(kept, default=0.0)
        return cls(tuple(kept), tuple(cumulative), late)

    def mean(self) -> float:
        """The durations' mean, each by its share."""
        shares = [b - a for a, b in zip((0.0, *self.cumulative), self.cumulative, strict=False)]
        return sum(v * s for v, s in zip(self.values, shares, strict=True)) / self.cumulative[-1]

    def draw(self, rng: random.Random) -> float:
        return self._at(rng.random() * self.cumulative[-1])

    def left_after(self, ran: float, rng: random.Random) -> float:
        """What is left of the step for a machine ``ran`` seconds into it: a duration
        longer than that, less ``ran``; at least as long again as it is past the late
        bound."""
        held = max(ran - self.late, 0.0)
        longer = bisect_right(self.values, ran)
        if longer == len(self.values):
            return held
        below = self.cumulative[longer - 1] if longer else 0.0
        pick = below + rng.random() * (self.cumulative[-1] - below)
        return max(self._at(pick) - ran, held)

    def _at(self, share: float) -> float:
        """The value whose share holds ``share`` of the running sum."""
        return self.values[min(bisect_right(self.cumulative, share), len(self.values) - 1)]


@dataclass(frozen=True, slots=True)
class MachineDraws:
    """The learned durations of one kind of machine's update (its pool's, its class's)."""

    steps: dict[str, Ring]  # the update's steps with durations enough, by name
    degraded: Ring | None = None  # how long failed applies held their machines
    degraded_share: float = 0.0  # the share of whole updates that degraded

    def whole(self, rng: random.Random) -> float:
        """One whole update, drawn: from its turn given to resumed."""
        return self._draw(ORDER_NAMES, rng, may_degrade=True)

    def left(self, update: UpdateCursor, now: float, rng: random.Random) -> float:
        """What is left of the update of a machine under way, drawn."""
        step = update.step.value
        ran = max(now - update.entered_at, 0.0)
        after = self.after(step)
        if update.step == U.DEGRADED:
            here = self.degraded.left_after(ran, rng) if self.degraded else ran
            return here + self._draw(after, rng, may_degrade=False)
        ring = self.steps.get(step)
        if ring is None:  # no durations of its step: a whole update less what it ran
            whole, ran_all = self.whole(rng), max(now - (update.started_at or now), 0.0)
            return abs(whole - ran_all)  # once past it, as long again as it is overdue
        return ring.left_after(ran, rng) + self._draw(after, rng, step in MAY_DEGRADE)

    @staticmethod
    def after(step: str) -> tuple[str, ...]:
        """The steps still to come after ``step``."""
        return AFTER_DEGRADED if step == U.DEGRADED.value else update_steps_after(step)

    def _draw(self, steps: Iterable[str], rng: random.Random, may_degrade: bool) -> float:
        total = 0.0
        for step in steps:
            ring = self.steps.get(step)
            if ring is not None:
                total += ring.draw(rng)
        if may_degrade and self.degraded is not None and rng.random() < self.degraded_share:
            total += self.degraded.draw(rng)
        return total
