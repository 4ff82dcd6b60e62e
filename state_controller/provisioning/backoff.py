"""Per-host exponential backoff after errors (the count lives in Host.status)."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    base: float = 10.0
    cap: float = 600.0
    jitter: float = 0.1

    def delay(self, error_count: int) -> float:
        """``base * 2**(n-1)``, capped, with ±jitter so a fleet does not retry in lockstep."""
        exponent = max(error_count - 1, 0)
        raw = self.cap if exponent >= 32 else min(self.base * 2**exponent, self.cap)
        return raw * (1 + self.jitter * (2 * random.random() - 1))
