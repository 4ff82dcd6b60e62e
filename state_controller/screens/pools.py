"""The NodePools in a rollout as the live screen draws them: for each pool with an
update under way, rich's progress bar of its machines updated out of all, and when the
rollout is expected to end, as the pool's ``status.estimate`` says (docs/durations.md).

A pure function of the NodePools read: no pace is learned across frames here, the
estimate is the controller's. A pool with no estimate says why (too few whole updates
learned yet); a pool behind schedule (its ``OnSchedule`` condition False) is marked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from ..api.timefmt import parse_rfc3339
from ..books.estimates import clock_time

BAR_MIN, BAR_MAX = 10, 30  # the bar's width in columns: narrower says nothing, wider no more
NO_ESTIMATE = "no estimate yet: too few whole updates learned"
LATE_STYLE = "bold red"


@dataclass(frozen=True)
class PoolBar:
    """One pool in a rollout as the screen reads it."""

    name: str
    updated: int
    machines: int
    eta: str  # when it is expected to end, or why no one can say yet
    late: bool  # behind schedule: its OnSchedule condition is False


def _eta(estimate: dict[str, Any] | None) -> str:
    if not estimate or not estimate.get("endsAt"):
        return NO_ESTIMATE
    made = parse_rfc3339(str(estimate.get("madeAt") or ""))
    ends = _hhmm(estimate.get("endsAt"), made)
    late = _hhmm(estimate.get("lateAt"), made)
    return f"ends ~{ends}, late bound {late}"


def _hhmm(at: Any, since: float | None) -> str:
    """``at`` (RFC 3339) as HH:MM UTC, or >24h when a day past ``since``."""
    ts = parse_rfc3339(str(at)) if at else None
    if ts is None:
        return "?"
    said = clock_time(ts, ts if since is None else since)
    return said if said.startswith(">") else f"{said} UTC"


def in_rollout(pool: dict[str, Any]) -> bool:
    """An update under way: machines not yet at the pool's config, or one updating."""
    status = pool.get("status") or {}
    machines = int(status.get("machineCount") or 0)
    return machines > 0 and (
        int(status.get("updatedMachineCount") or 0) < machines
        or int(status.get("updatingMachineCount") or 0) > 0
        or int(status.get("degradedMachineCount") or 0) > 0
    )


def read_pool(pool: dict[str, Any]) -> PoolBar:
    status = pool.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or ()}
    machines = int(status.get("machineCount") or 0)
    return PoolBar(
        name=pool["metadata"]["name"],
        updated=min(int(status.get("updatedMachineCount") or 0), machines),
        machines=machines,
        eta=_eta(status.get("estimate")),
        late=conditions.get("OnSchedule", {}).get("status") == "False",
    )


def pool_bars(pools: Sequence[dict[str, Any]], width: int) -> Table | None:
    """The pools in a rollout, one line each: name, bar, updated/machines, percent, the
    estimate (or why there is none); None when no pool is in a rollout or the lines do
    not fit in ``width`` with a bar of :data:`BAR_MIN` columns at least."""
    shown = [read_pool(p) for p in sorted(pools, key=_name) if in_rollout(p)]
    if not shown:
        return None
    names = max(len(p.name) for p in shown)
    counts = max(len(f"{p.updated}/{p.machines}") for p in shown)
    etas = max(len(_said(p)) for p in shown)
    gaps = 2 * 4
    bar = min(BAR_MAX, width - (names + counts + len("100%") + etas + gaps))
    if bar < BAR_MIN:
        return None
    table = Table(
        box=None, pad_edge=False, show_edge=False, show_header=False, padding=(0, 2, 0, 0)
    )
    table.add_column(no_wrap=True)
    table.add_column(width=bar, no_wrap=True)
    table.add_column(no_wrap=True, justify="right")
    table.add_column(no_wrap=True, justify="right")
    table.add_column(no_wrap=True)
    for p in shown:
        style = LATE_STYLE if p.late else "green"
        done = 100 * p.updated // p.machines
        table.add_row(
            Text(p.name, style=LATE_STYLE if p.late else ""),
            ProgressBar(total=p.machines, completed=p.updated, width=bar, complete_style=style),
            Text(f"{p.updated}/{p.machines}"),
            Text(f"{done}%"),
            Text(_said(p), style=LATE_STYLE if p.late else ("dim" if p.eta == NO_ESTIMATE else "")),
        )
    return table


def _name(pool: dict[str, Any]) -> str:
    return str(pool["metadata"]["name"])


def _said(pool: PoolBar) -> str:
    return f"LATE: {pool.eta}" if pool.late else pool.eta
