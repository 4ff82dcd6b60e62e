"""Every key's window of durations, and the estimate for a step.

Each duration is learned under four keys (:meth:`~.keys.StepKey.wider`): its pool and
class, its class in any pool, its pool on any class, and the fleet; an estimate rests on
the narrowest of them with at least :data:`MIN_SAMPLES` durations, and says which one and
how many. With fewer anywhere there is no estimate: nothing is made up.

Bounded: at most :data:`MAX_KEYS` keys, the least recently taught one let go first (a
pool that was deleted, a class that left the fleet); with a window of a hundred, a few
megabytes at most. Safe from every worker thread (one lock; an estimate sorts at most a
hundred numbers under it).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from ..books.stuck import human_duration
from .keys import StepKey
from .window import WINDOW, Window

MIN_SAMPLES = 5  # fewer past durations make no estimate
LATE_QUANTILE = 0.9  # the late bound: nine in ten took no longer
MAX_KEYS = 4096


@dataclass(frozen=True, slots=True)
class Estimate:
    """How long a step is expected to take, from ``samples`` past durations of ``key``."""

    key: StepKey  # the key it rests on: the one asked for, or a wider one
    median: float
    late: float  # the late bound (:data:`LATE_QUANTILE`)
    samples: int  # durations in the window it was read from
    seen: int  # every duration of the key learned since the controller started
    mean: float  # for sums: a sum's expectation is the sum of the means, not of the medians

    def words(self, plural: str) -> str:
        """``drains in this pool take 3m0s-12m0s, from 240 past drains``-style text: the
        range from the median to the late bound and what it rests on."""
        return (
            f"{human_duration(self.median)}-{human_duration(self.late)}, "
            f"from {self.seen} past {plural}"
        )


class Learned:
    def __init__(
        self, *, window: int = WINDOW, max_keys: int = MAX_KEYS, min_samples: int = MIN_SAMPLES
    ) -> None:
        self._windows: OrderedDict[StepKey, Window] = OrderedDict()
        self._window = window
        self._max_keys = max_keys
        self.min_samples = min_samples
        self._lock = threading.Lock()

    def learn(self, key: StepKey, seconds: float) -> None:
        """One duration of ``key`` (a negative one, from clocks that disagree, is not)."""
        if seconds < 0:
            return
        with self._lock:
            for each in dict.fromkeys(key.wider()):  # once each, should two coincide
                window = self._windows.get(each)
                if window is None:
                    window = self._windows[each] = Window(self._window)
                    if len(self._windows) > self._max_keys:
                        self._windows.popitem(last=False)
                else:
                    self._windows.move_to_end(each)
                window.add(seconds)

    def estimate(self, key: StepKey) -> Estimate | None:
        """The estimate from the narrowest key with enough durations; None without one."""
        with self._lock:
            for each in key.wider():
                window = self._windows.get(each)
                if window is not None and len(window) >= self.min_samples:
                    return _estimate(each, window)
        return None

    def ring(self, key: StepKey, least: int | None = None) -> tuple[StepKey, tuple[float, ...]]:
        """The durations kept of the narrowest key with at least ``least`` of them (the
        estimate's minimum by default), and that key; none: ``(key, ())``."""
        floor = self.min_samples if least is None else least
        with self._lock:
            for each in key.wider():
                window = self._windows.get(each)
                if window is not None and len(window) >= max(floor, 1):
                    return each, window.values()
        return key, ()

    def values(self, key: StepKey) -> tuple[float, ...]:
        """The durations kept of ``key`` itself (no wider key stands in)."""
        with self._lock:
            window = self._windows.get(key)
            return () if window is None else window.values()

    def seen(self, key: StepKey) -> int:
        """Every duration of ``key`` itself learned since the controller started."""
        with self._lock:
            window = self._windows.get(key)
            return 0 if window is None else window.count

    def known(self) -> list[StepKey]:
        with self._lock:
            return sorted(self._windows)

    def exact(self, key: StepKey) -> Estimate | None:
        """The estimate of ``key`` itself (for the metrics: no wider key stands in)."""
        with self._lock:
            window = self._windows.get(key)
            if window is None or not len(window):
                return None
            return _estimate(key, window)


def _estimate(key: StepKey, window: Window) -> Estimate:
    median, late = window.quantiles(0.5, LATE_QUANTILE)
    return Estimate(key, median, late, len(window), window.count, window.mean())
