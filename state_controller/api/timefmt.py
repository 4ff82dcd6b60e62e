"""Timestamps as the Kubernetes API writes them (RFC 3339, UTC)."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def rfc3339(ts: float) -> str:
    """Seconds precision, as metav1.Time (conditions, creationTimestamp).

    Truncates the millisecond-rounded instant, so a time read back from its
    millisecond form (``rfc3339_ms``) prints the same second as the original.
    """
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(round(ts * 1000) // 1000))


def rfc3339_ms(ts: float) -> str:
    """Millisecond precision, for history and time-in-state where order matters."""
    whole, ms = divmod(round(ts * 1000), 1000)  # round, so parse(format(t)) formats the same
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{ms:03d}Z"


def parse_rfc3339(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC).timestamp()
    except ValueError:
        return None
