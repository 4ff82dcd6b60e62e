"""The frame of the live screen of ``demo`` and ``bootstrap``: what needs a person first,
in full.

A fleet of fifty is more than a terminal holds, and during a rollout nearly every
row is a node already done. The screen therefore sorts before it draws
(:func:`sort_rows`):

1. **Needs attention** — stuck, failed or degraded — each row followed by the
   message that says why, wrapped to the terminal's width, never cut;
2. **In progress** — moving normally — one line each, the message cut to fit;
3. **Settled** — folded into one line of counts ("41 provisioned and updated").

Then the NodePools during a rollout: their counts, each pool's progress bar with when
its rollout is expected to end as its ``status.estimate`` says (:mod:`.pools`; a pool
with no estimate says why, a late one is marked), the fleet's bars, and the caller's
footer (where ``/metrics`` is). :func:`frame` fits all of it into the terminal: rows
that do not fit are counted on a line of their own, attention first to be kept. It is
drawn with rich on the alternate screen (:class:`.terminal.LiveScreen`), so a resize or
a slow terminal never leaves half a frame; the last frame is printed again on the
normal screen when the screen closes.

:func:`hoststates_table` and :func:`pools_table` print the plain ``kubectl get``
tables for a terminal that is not one (a pipe, a log).
"""

from __future__ import annotations

import io
import time
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.progress import TimeRemainingColumn as _Remaining
from rich.table import Table
from rich.text import Text

from ..api.columns import AGE, HOSTSTATE_COLUMNS, NODEPOOL_COLUMNS, Column
from ..cluster.interface import HOSTSTATES, NODEPOOLS, Cluster
from .pools import pool_bars
from .rows import Row, all_settled, sort_rows
from .tables import human_age, render, rows

UPDATE_COLUMNS: tuple[Column, ...] = (
    Column("Node", ".spec.node"),
    Column("State", ".status.provisioning.state"),
    Column("Step", ".status.update.step"),
    Column("In-Step", ".status.update.enteredAt", "date"),
    Column("Updated", '.status.conditions[?(@.type=="Updated")].status'),
    Column("Stuck", '.status.conditions[?(@.type=="Stuck")].status'),
    Column("Config", ".status.update.currentConfig"),
    Column("Message", ".status.update.message"),
)
ATTENTION_STYLE = {"stuck": "bold red", "failed": "red", "degraded": "magenta"}


class Bars:
    """Progress bars with the time left (rich's estimate from the recent pace), kept
    across frames so the estimate has a history."""

    def __init__(self) -> None:
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=None),
            MofNCompleteColumn(),
            _Remaining(compact=True, elapsed_when_finished=True),
            auto_refresh=False,
            expand=True,
        )
        self._tasks: dict[str, TaskID] = {}

    def set(self, label: str, done: int, total: int) -> None:
        if label not in self._tasks:
            self._tasks[label] = self._progress.add_task(label, total=total)
        self._progress.update(self._tasks[label], completed=done, total=total)

    def renderable(self) -> RenderableType:
        return self._progress.make_tasks_table(self._progress.tasks)

    def __len__(self) -> int:
        return len(self._tasks)


def frame(
    items: Sequence[dict[str, Any]],
    *,
    width: int,
    height: int,
    pools: Sequence[dict[str, Any]] = (),
    bars: Bars | None = None,
    footer: Sequence[str] = (),
    now: float | None = None,
) -> RenderableType:
    """One screenful of ``width`` by ``height``: attention rows with their reasons, the
    rows in progress, the settled counts, then the pools, the bars and the footer.

    What goes below the rows is measured as drawn (a bar wraps on a narrow terminal) and
    shrinks before the rows that need attention do: each pool's bar goes where it would
    cost a row, the pools fold into one line, then the bars go, then every footer line
    but the last (where ``/metrics`` is)."""
    now = time.time() if now is None else now
    attention, moving, settled = sort_rows(items)
    measure = _Measure(width)
    # room for the settled line and, if any, the title and the first row with its reason
    needed = 1 + (1 + measure(_attention_blocks(attention[:1], attention, now)) if attention else 0)
    choices, per_pool = _below_choices(pools, bars, footer, measure)
    below: list[RenderableType] = []
    for below in choices:
        if height - measure(below) >= needed:
            break
    drawn = _rows(attention, moving, settled, height - measure(below), measure, now)
    if per_pool and below is choices[0]:  # the pools' bars only where they cost no row
        lean = _rows(attention, moving, settled, height - measure(choices[1]), measure, now)
        if measure(lean) > measure(drawn):
            below, drawn = choices[1], lean
    return Group(*drawn, *below)


class _Measure:
    """How many lines a renderable takes at the screen's width."""

    def __init__(self, width: int) -> None:
        self.width = width
        self._console = Console(width=width, color_system=None, file=io.StringIO())

    def fits(self, renderable: RenderableType) -> bool:
        """Whether it is drawn whole in the width, nothing cut."""
        return self._console.measure(renderable).maximum <= self.width

    def __call__(self, parts: RenderableType | list[RenderableType]) -> int:
        group = Group(*parts) if isinstance(parts, list) else parts
        options = self._console.options.update(width=self.width)
        return len(self._console.render_lines(group, options, pad=False))


def _below_choices(
    pools: Sequence[dict[str, Any]], bars: Bars | None, footer: Sequence[str], measure: _Measure
) -> tuple[list[list[RenderableType]], bool]:
    """What goes below the rows, from the fullest to the leanest (the pools' table only
    where it is drawn whole; first, if they fit, each pool's bar with its estimate), and
    whether the first has the pools' bars."""
    lines: list[RenderableType] = [Text(t, overflow="ellipsis", no_wrap=True) for t in footer]
    has_bars = bars is not None and len(bars) > 0
    bar: list[RenderableType] = [bars.renderable()] if bars is not None and has_bars else []
    folded: list[RenderableType] = [_pools_line(pools)] if pools else []
    table = _pools(pools) if pools else None
    counts = [table] if table is not None and measure.fits(table) else folded
    per_pool = pool_bars(pools, measure.width)
    fullest = [[*counts, per_pool, *bar, *lines]] if per_pool is not None else []
    return [
        *fullest,
        counts + bar + lines,
        folded + bar + lines,
        folded + lines,
        lines[-1:],
    ], bool(fullest)


def _rows(
    attention: list[Row],
    moving: list[Row],
    settled: Counter[str],
    room: int,
    measure: _Measure,
    now: float,
) -> list[RenderableType]:
    """The rows in ``room`` lines: those that need attention first, each with its whole
    reason, then those in progress; the settled line last, always."""
    out: list[RenderableType] = []
    left = room - 1  # the settled line
    notes = []
    if attention and left >= 2:  # the title, and a block or the line saying how many
        kept, used = _fit_attention(attention, measure, left - 1, now)
        if len(kept) < len(attention):
            kept, used = _fit_attention(attention, measure, left - 2, now)
        out.append(Text(f"NEEDS ATTENTION ({len(attention)})", style="bold"))
        out += kept
        left -= 1 + used
        if len(kept) < len(attention):
            more = len(attention) - len(kept)
            out.append(Text(f"… {more} more need attention", "red", no_wrap=True))
            left -= 1
    elif attention:
        notes.append(f"{len(attention)} need attention")
    listed = 0
    if moving and left >= 2:  # the header and one row at least
        shown = moving if len(moving) <= left - 1 else moving[: left - 1]
        listed = len(shown)
        out.append(_progress_table(shown, now))
    if len(moving) > listed:
        notes.append(f"{len(moving) - listed} {'more ' if listed else ''}in progress")
    counts = [f"{n} {what}" for what, n in sorted(settled.items())] or ["none yet"]
    summary = " · ".join([*notes, f"settled: {', '.join(counts)}"])
    out.append(Text(summary, style="green", overflow="ellipsis", no_wrap=True))
    return out


def _ago(since: float | None, now: float) -> str:
    return human_age(now - since) if since is not None else "-"


def _attention(row: Row, widths: tuple[int, int, int], now: float) -> Group:
    head = Text(no_wrap=True, overflow="ellipsis")
    head.append(row.name.ljust(widths[0]), ATTENTION_STYLE[row.trouble])
    head.append("  " + row.node.ljust(widths[1]))
    head.append("  " + row.where.ljust(widths[2]))
    head.append(f"  {row.trouble} {_ago(row.since, now)}", ATTENTION_STYLE[row.trouble])
    if row.allowed:
        head.append(f" ({row.allowed} allowed)")
    if row.errors:
        head.append(f"  {row.errors} errors in a row")
    why = Padding(Text(row.why or "(no message)", style="dim" if not row.why else ""), (0, 0, 0, 2))
    return Group(head, why)


def _widths(rows_: Sequence[Row]) -> tuple[int, int, int]:
    return (
        max(len(r.name) for r in rows_),
        max(len(r.node) for r in rows_),
        max(len(r.where) for r in rows_),
    )


def _attention_blocks(rows_: Sequence[Row], among: Sequence[Row], now: float) -> Group:
    """``rows_`` drawn as attention blocks, aligned as they are among ``among``."""
    widths = _widths(among)
    return Group(*(_attention(row, widths, now) for row in rows_))


def _fit_attention(
    rows_: list[Row], measure: _Measure, room: int, now: float
) -> tuple[list[RenderableType], int]:
    """As many attention rows, each with its whole reason, as ``room`` lines hold."""
    widths = _widths(rows_)
    kept: list[RenderableType] = []
    used = 0
    for row in rows_:
        block = _attention(row, widths, now)
        lines = measure(block)
        if used + lines > room:
            break
        kept.append(block)
        used += lines
    return kept, used


def _progress_table(rows_: Sequence[Row], now: float) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold", expand=True)
    for name in ("NAME", "NODE", "STATE", "IN"):
        table.add_column(name, no_wrap=True)
    table.add_column("MESSAGE", no_wrap=True, overflow="ellipsis", ratio=1)
    for row in rows_:
        cells = (row.name, row.node, row.where, _ago(row.since, now), row.why)
        table.add_row(*(Text(c) for c in cells), style="yellow")  # never read as markup
    return table


def _pools(pools: Sequence[dict[str, Any]]) -> Table:
    columns = tuple(c for c in NODEPOOL_COLUMNS if c is not AGE and c.priority == 0)
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for name in rows(pools, columns)[0]:
        table.add_column(name, no_wrap=True)
    for line in rows(pools, columns)[1:]:
        table.add_row(*(Text(c) for c in line))
    return table


def _pools_line(pools: Sequence[dict[str, Any]]) -> Text:
    """The pools in one line, for a terminal too short for their table."""
    parts = []
    for pool in sorted(pools, key=lambda p: p["metadata"]["name"]):
        status = pool.get("status") or {}
        parts.append(
            f"{pool['metadata']['name']} {status.get('updatedMachineCount', 0)}/"
            f"{status.get('machineCount', 0)} updated"
        )
    return Text("pools: " + ", ".join(parts), overflow="ellipsis", no_wrap=True)


def cluster_frame(
    cluster: Cluster,
    namespace: str | None,
    size: tuple[int, int],
    *,
    pools: bool,
    bars: Bars | None,
    footer: Sequence[str],
) -> RenderableType:
    """:func:`frame` of the HostStates (and NodePools) ``cluster`` holds now."""
    items, _ = cluster.list(HOSTSTATES, namespace)
    pool_items = cluster.list(NODEPOOLS, None)[0] if pools else []
    width, height = size
    return frame(items, width=width, height=height, pools=pool_items, bars=bars, footer=footer)


def hoststates_settled(cluster: Cluster, namespace: str | None, keys: Collection[str]) -> bool:
    """:func:`all_settled` of the HostStates ``cluster`` holds now."""
    return all_settled(cluster.list(HOSTSTATES, namespace)[0], keys)


def hoststates_table(cluster: Cluster, namespace: str | None, *, updating: bool) -> str:
    """The HostStates as ``kubectl get`` prints them (the rollout's columns while updating)."""
    items, _ = cluster.list(HOSTSTATES, namespace)
    return render(rows(items, UPDATE_COLUMNS if updating else HOSTSTATE_COLUMNS))


def pools_table(cluster: Cluster) -> str:
    items, _ = cluster.list(NODEPOOLS, None)
    if not items:
        return ""
    return render(rows(items, tuple(c for c in NODEPOOL_COLUMNS if c is not AGE)))
