"""Times as the plugin prints them: an instant in UTC beside how long ago (or how soon)
it is, computed when the text is made, and durations in kubectl's short words."""

from __future__ import annotations

import time

from ..api.timefmt import parse_rfc3339


def span(seconds: float) -> str:
    """A duration the way ``kubectl get`` prints ages: ``45s``, ``12m``, ``3h5m``,
    ``2d4h`` (two units at most, rounded down; under two minutes in seconds)."""
    whole = max(0, int(seconds))
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours}h" if hours else f"{days}d"


def relative(at: float, now: float) -> str:
    """``41m ago`` for a past instant, ``in 12m`` for one to come, ``now`` within a second."""
    delta = at - now
    if abs(delta) < 1:
        return "now"
    return f"in {span(delta)}" if delta > 0 else f"{span(-delta)} ago"


def utc(at: float) -> str:
    """``2026-11-28 23:09:00Z``: seconds, in UTC."""
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(at))


def when(at: float, now: float) -> str:
    """``2026-11-28 23:09:00Z (41m ago)``."""
    return f"{utc(at)} ({relative(at, now)})"


def instant(value: object) -> float | None:
    """An RFC 3339 timestamp of a status as seconds since the epoch; None when absent or
    not a timestamp."""
    return parse_rfc3339(value) if isinstance(value, str) else None


def one_line(text: object, limit: int = 200) -> str:
    """A message on one line, at most ``limit`` characters (an ellipsis says it was cut)."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def columns(rows: list[list[str]], indent: str = "") -> list[str]:
    """Rows of cells as lines of left-aligned columns two spaces apart (the last column
    unpadded): a plain-text table that reads the same on a terminal and in a pipe."""
    if not rows:
        return []
    count = max(len(r) for r in rows)
    widths = [max((len(r[i]) for r in rows if i < len(r)), default=0) for i in range(count)]
    lines = []
    for row in rows:
        cells = [c.ljust(widths[i]) for i, c in enumerate(row[:-1])] + row[-1:]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines
