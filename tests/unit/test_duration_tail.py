"""The tail fitted beyond the durations learned: early in a rollout the machines still in a
step are its slow ones, and taking them as ending now would put the rollout's end early."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from state_controller.durations.draws import Ring
from state_controller.durations.tail import POINTS, log_normal_fit, tail

MU, SIGMA = math.log(600.0), 0.3  # reboots of ten minutes at the median


def a_rollout_seen_midway(seed: int, machines: int = 300) -> tuple[list[float], list[float]]:
    """Machines that began a step at even times over twenty minutes, looked at when those
    end (a rollout's first rounds): the durations of those that ended, and how long the
    others have run."""
    rng = random.Random(seed)
    ended: list[float] = []
    still: list[float] = []
    for index in range(machines):
        began = 1200.0 * index / machines
        took = math.exp(rng.gauss(MU, SIGMA))
        ran = 1200.0 - began
        (ended if took <= ran else still).append(took if took <= ran else ran)
    return ended, still


def test_the_fit_counts_the_machines_still_in_the_step_as_longer() -> None:
    ended, still = a_rollout_seen_midway(seed=1)
    assert len(still) > 150  # the last ten minutes', and the slow of those before
    fit = log_normal_fit(ended, still)
    assert fit is not None
    assert fit[0] == pytest.approx(MU, abs=0.05) and fit[1] == pytest.approx(SIGMA, abs=0.05)
    naive = statistics.mean(math.log(v) for v in ended)
    assert naive < MU - 0.05  # the ended alone: the quick ones
    assert log_normal_fit([600.0], still) is None  # one duration: no spread to fit


def test_the_tail_lies_beyond_and_holds_what_the_law_expects_there() -> None:
    ended, still = a_rollout_seen_midway(seed=2)
    beyond = 900.0  # about the 91st percentile
    points = tail(ended, still, beyond)
    assert len(points) == POINTS and points == sorted(points) and points[0] > beyond
    rng = random.Random(3)
    past = [d for d in (math.exp(rng.gauss(MU, SIGMA)) for _ in range(200_000)) if d > beyond]
    assert statistics.mean(points) == pytest.approx(statistics.mean(past), rel=0.05)
    assert tail([600.0], still, beyond) == []


def test_a_machine_past_every_duration_is_not_taken_as_ending_now() -> None:
    """Two quick reboots ended, three machines still rebooting past both: the ring's mean
    lies past the longest of them, where keeping their share at their own times did not."""
    ring = Ring.of((500.0, 520.0), running=(560.0, 600.0, 640.0))
    assert ring.mean() > 640.0
    assert ring.cumulative[-1] == pytest.approx(5)
