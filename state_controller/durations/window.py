"""The last durations of one kind of step, and their quantiles.

A window of the most recent :data:`WINDOW` durations, not every duration ever seen: a
new firmware or a changed workload changes how long a step takes, and an estimate must
follow within a rollout; a hundred is enough for a 90th percentile that one odd machine
moves by a single rank. Kept in an ``array`` of doubles (8 bytes a duration) filled as a
ring, so a key costs under a kilobyte whatever the fleet's age.
"""

from __future__ import annotations

from array import array

WINDOW = 100


class Window:
    __slots__ = ("_next", "_size", "_values", "count")

    def __init__(self, size: int = WINDOW) -> None:
        self._values = array("d")
        self._size = size
        self._next = 0
        self.count = 0  # every duration ever added, the window's and those it let go

    def add(self, seconds: float) -> None:
        if len(self._values) < self._size:
            self._values.append(seconds)
        else:
            self._values[self._next] = seconds
            self._next = (self._next + 1) % self._size
        self.count += 1

    def __len__(self) -> int:
        return len(self._values)

    def mean(self) -> float:
        if not self._values:
            raise ValueError("no durations")
        return sum(self._values) / len(self._values)

    def quantile(self, q: float) -> float:
        """The ``q`` quantile of the window (linear between ranks, as numpy's default)."""
        return self.quantiles(q)[0]

    def quantiles(self, *qs: float) -> tuple[float, ...]:
        """Several quantiles from one sort (an estimate asks two of each window, at a
        scrape and at each step a pool's rollout is estimated)."""
        ordered = sorted(self._values)
        if not ordered:
            raise ValueError("no durations")
        return tuple(quantile(ordered, q) for q in qs)

    def values(self) -> tuple[float, ...]:
        """The durations kept, in no particular order."""
        return tuple(self._values)


def quantile(ordered: list[float] | tuple[float, ...], q: float) -> float:
    """The ``q`` quantile of sorted numbers (linear between ranks, as numpy's default)."""
    rank = q * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
