"""Time as a test sets it: one starting instant for every test that writes times, and a
clock that stands still until the test moves it."""

from __future__ import annotations

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z: the instant the tests' books and clocks start at


class Clock:
    """A clock to pass where the code takes ``clock: Callable[[], float]``: calling it
    reads ``now``, which moves only when the test sets it or calls ``advance``."""

    def __init__(self, start: float = T0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        """Move the clock forward; the new time."""
        self.now += seconds
        return self.now
