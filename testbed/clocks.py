"""Time as a test sets it: one starting instant for every test that writes times, a
clock that stands still until the test moves it, and one that runs until held."""

from __future__ import annotations

import time

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


class HoldableClock:
    """A monotonic clock that runs in real time until the test holds it; held, it moves
    only by ``advance``, and released, it runs on from where it stood. For simulated
    hardware whose work should end when the test says, not when a busy machine happens
    to poll it late."""

    def __init__(self) -> None:
        self._offset = 0.0
        self._held: float | None = None

    def __call__(self) -> float:
        return self._held if self._held is not None else time.monotonic() + self._offset

    def hold(self) -> None:
        self._held = self()

    def advance(self, seconds: float) -> None:
        """Move a held clock forward."""
        assert self._held is not None, "advance() moves a held clock"
        self._held += seconds

    def release(self) -> None:
        if self._held is not None:
            self._offset, self._held = self._held - time.monotonic(), None
