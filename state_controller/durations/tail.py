"""How long the machines still in a step past every duration learned of it will take.

Early in a rollout the first machines to end a step are its quick ones; the machines
still in it are known only to take longer than they have run. Among the durations
learned, Kaplan and Meier's redistribution gives each such machine's share to the longer
durations (:meth:`.draws.Ring.of`), but a machine past every one of them has none to give
it to: taken as ending now, the least it will take, it puts the rollout's end early
through its first rounds, while the slow machines of a pool are the ones still in their
steps (the measure is in docs/benchmarks.md).

Instead its share goes to a tail: the step's durations are taken to spread as a
log-normal does (a duration is a product of many small delays: a machine's reboot, its
firmware's checks, its disks), fitted to the durations ended and to the machines still in
it, each known only to take longer (the EM algorithm for a censored normal of the logs),
and the share is spread over :data:`POINTS` durations at even quantiles of that law
beyond the last machine's time.

Written here rather than taken from SciPy (``scipy.stats`` fits censored data): SciPy is
a large dependency for one fit of at most a window of numbers, which this does in a few
dozen lines with :class:`statistics.NormalDist`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

POINTS = 4  # durations the tail's share is spread over
ROUNDS = 20  # of the EM algorithm: enough for the fit to settle
LEAST_SIGMA = 1e-3  # of the logs: durations all alike still have a spread to draw from
STANDARD = NormalDist()


def log_normal_fit(ended: Sequence[float], still: Sequence[float]) -> tuple[float, float] | None:
    """(mean, standard deviation) of the logs of the durations, from those ``ended`` and
    the times the machines ``still`` in the step have run; None with fewer than two
    durations ended (no spread to fit)."""
    logs = [math.log(v) for v in ended if v > 0]
    censored = [math.log(r) for r in still if r > 0]
    if len(logs) < 2:
        return None
    mu = sum(logs) / len(logs)
    sigma = max(math.sqrt(sum((x - mu) ** 2 for x in logs) / (len(logs) - 1)), LEAST_SIGMA)
    count = len(logs) + len(censored)
    for _ in range(ROUNDS):
        first, second = sum(logs), sum(x * x for x in logs)
        for at in censored:  # its log's expected value and square, given it is past ``at``
            alpha = (at - mu) / sigma
            ratio = STANDARD.pdf(alpha) / max(1.0 - STANDARD.cdf(alpha), 1e-12)
            mean = mu + sigma * ratio
            first += mean
            second += sigma * sigma * (1.0 + alpha * ratio - ratio * ratio) + mean * mean
        mu = first / count
        sigma = math.sqrt(max(second / count - mu * mu, LEAST_SIGMA**2))
    return mu, sigma


def tail(ended: Sequence[float], still: Sequence[float], beyond: float) -> list[float]:
    """:data:`POINTS` durations longer than ``beyond``, at even quantiles of the fitted law
    past it (each the middle of its share); none when there is no fit."""
    fit = log_normal_fit(ended, still)
    if fit is None or beyond <= 0:
        return []
    law = NormalDist(*fit)
    low = law.cdf(math.log(beyond))
    points = []
    for j in range(POINTS):
        q = min(low + (1.0 - low) * (j + 0.5) / POINTS, 1.0 - 1e-9)
        points.append(max(math.exp(law.inv_cdf(q)), beyond))
    return points
