"""The live screen of ``demo`` and ``bootstrap``: what needs a person first, in full.

A fleet of fifty is more than a terminal holds, and during a rollout nearly every
row is a node already done. The screen therefore sorts before it draws
(:func:`sort_rows`):

1. **Needs attention** — stuck, failed or degraded — each row followed by the
   message that says why, wrapped to the terminal's width, never cut;
2. **In progress** — moving normally — one line each, the message cut to fit;
3. **Settled** — folded into one line of counts ("41 provisioned and updated").

Then the NodePools during a rollout, progress bars with the time left, and the
caller's footer (where ``/metrics`` is). :func:`frame` fits all of it into the
terminal: rows that do not fit are counted on a line of their own, attention
first to be kept. Drawn with rich on the alternate screen (:class:`LiveScreen`),
so a resize or a slow terminal never leaves half a frame; the last frame is
printed again on the normal screen when the screen closes.

:func:`hoststates_table` and :func:`pools_table` print the plain ``kubectl get``
tables for a terminal that is not one (a pipe, a log).
"""

from __future__ import annotations

import io
import logging
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.padding import Padding
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.progress import TimeRemainingColumn as _Remaining
from rich.table import Table
from rich.text import Text

from ..api.columns import AGE, HOSTSTATE_COLUMNS, NODEPOOL_COLUMNS, Column
from ..api.timefmt import parse_rfc3339
from ..api.updates import UpdateStep
from ..cluster.interface import HOSTSTATES, NODEPOOLS, Cluster
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
ALLOWED = re.compile(r"longer than the (\S+) allowed")  # in the Stuck condition's message
ATTENTION_STYLE = {"stuck": "bold red", "failed": "red", "degraded": "magenta"}


@dataclass(frozen=True)
class Row:
    """One HostState as the screen reads it."""

    name: str
    node: str
    where: str  # the update step while a node updates, else the provisioning state
    since: float | None  # when it entered ``where`` (epoch seconds)
    errors: int
    trouble: str  # "stuck", "failed", "degraded", or "" when nothing needs a person
    moving: bool  # on its way somewhere (Progressing), or updating
    updating: bool  # its node is in an update
    why: str  # what it waits for, or what went wrong
    allowed: str  # how long its state or step may last, when it is stuck
    settled_as: str  # the count it joins once settled, e.g. "provisioned and updated"


def _conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c.get("type", ""): c for c in status.get("conditions") or ()}


def read_row(hoststate: dict[str, Any]) -> Row:
    status = hoststate.get("status") or {}
    cond = _conditions(status)
    prov = status.get("provisioning") or {}
    update = status.get("update") or {}
    state = prov.get("state") or "(new)"
    step = update.get("step") or ""
    updating = bool(step) and step != UpdateStep.UPDATED.value
    where, since = (step, update.get("enteredAt")) if updating else (state, prov.get("enteredAt"))
    trouble = ""
    if cond.get("Stuck", {}).get("status") == "True":
        trouble = "stuck"
    elif step == UpdateStep.DEGRADED.value or cond.get("Degraded", {}).get("status") == "True":
        trouble = "degraded"
    elif status.get("phase") == "Failed" or prov.get("operationalStatus") == "error":
        trouble = "failed"
    ready = cond.get("Ready", {}).get("message") or ""
    own = update.get("message") if updating else prov.get("errorMessage")
    why = own or ready or cond.get("Degraded", {}).get("message") or ""
    allowed = ALLOWED.search(cond.get("Stuck", {}).get("message") or "")
    settled_as = state
    if step == UpdateStep.UPDATED.value and hoststate.get("spec", {}).get("node"):
        settled_as += " and updated" if update.get("startedAt") else " with a node"
    return Row(
        name=hoststate["metadata"]["name"],
        node=(hoststate.get("spec") or {}).get("node", ""),
        where=where,
        since=parse_rfc3339(since) if since else None,
        errors=int(prov.get("errorCount") or 0),
        trouble=trouble,
        moving=updating or cond.get("Progressing", {}).get("status") == "True",
        updating=updating,
        why=why,
        allowed=allowed.group(1) if allowed and trouble == "stuck" else "",
        settled_as=settled_as,
    )


def sort_rows(items: Iterable[dict[str, Any]]) -> tuple[list[Row], list[Row], Counter[str]]:
    """(needs attention, in progress, settled counts), each list in name order."""
    attention, moving = [], []
    settled: Counter[str] = Counter()
    for row in sorted((read_row(i) for i in items), key=lambda r: r.name):
        if row.trouble:
            attention.append(row)
        elif row.moving:
            moving.append(row)
        else:
            settled[row.settled_as] += 1
    return attention, moving, settled


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
    shrinks before the rows that need attention do: the pools fold into one line, then
    the bars go, then every footer line but the last (where ``/metrics`` is)."""
    now = time.time() if now is None else now
    attention, moving, settled = sort_rows(items)
    measure = _Measure(width)
    # room for the settled line and, if any, the title and the first row with its reason
    needed = 1 + (1 + measure(_attention_blocks(attention[:1], attention, now)) if attention else 0)
    below: list[RenderableType] = []
    for below in _below_choices(pools, bars, footer, measure):
        if height - measure(below) >= needed:
            break
    room = height - measure(below)
    return Group(*_rows(attention, moving, settled, room, measure, now), *below)


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
) -> list[list[RenderableType]]:
    """What goes below the rows, from the fullest to the leanest (the pools' table only
    where it is drawn whole)."""
    lines: list[RenderableType] = [Text(t, overflow="ellipsis", no_wrap=True) for t in footer]
    has_bars = bars is not None and len(bars) > 0
    bar: list[RenderableType] = [bars.renderable()] if bars is not None and has_bars else []
    folded: list[RenderableType] = [_pools_line(pools)] if pools else []
    table = _pools(pools) if pools else None
    return [
        ([table] if table is not None and measure.fits(table) else folded) + bar + lines,
        folded + bar + lines,
        folded + lines,
        lines[-1:],
    ]


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


class LiveScreen:
    """The terminal as one live frame (rich's Live on the alternate screen), redrawn by
    :meth:`show`; on leaving, the last frame is printed on the normal screen.

    Log lines written to the terminal while the screen is up would land inside a frame
    and tear it; they are held (up to :data:`HELD_LOG_LINES`, the rest counted) and
    printed below the last frame when the screen closes, so none is lost from view.
    """

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()
        self._live = Live(
            console=self.console,
            screen=True,
            auto_refresh=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._last: RenderableType | None = None
        self._after: list[str] = []
        self._held = _HeldLines()
        self._swapped: list[tuple[logging.StreamHandler[Any], Any]] = []

    @property
    def size(self) -> tuple[int, int]:
        return self.console.size.width, self.console.size.height

    def show(self, renderable: RenderableType) -> None:
        self._last = renderable
        self._live.update(renderable, refresh=True)

    def after(self, line: str) -> None:
        """A line to print below the last frame once the screen closes."""
        self._after.append(line)

    def __enter__(self) -> LiveScreen:
        for handler in logging.getLogger().handlers:
            stream = getattr(handler, "stream", None)
            if isinstance(handler, logging.StreamHandler) and _on_terminal(stream):
                self._swapped.append((handler, handler.setStream(self._held)))
        self._live.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._live.stop()
        for handler, stream in self._swapped:
            handler.setStream(stream)
        if self._last is not None:
            self.console.print(self._last)
        for line in self._after:
            self.console.print(line, highlight=False, markup=False)
        self._held.release(sys.stderr)


HELD_LOG_LINES = 5000


def _on_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no such method, or closed
        return False


class _HeldLines(io.TextIOBase):
    """A stream that keeps the first :data:`HELD_LOG_LINES` lines written to it."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._dropped = 0

    def write(self, text: str) -> int:
        for line in text.splitlines(keepends=True):
            if len(self._lines) < HELD_LOG_LINES:
                self._lines.append(line)
            else:
                self._dropped += 1
        return len(text)

    def release(self, out: Any) -> None:
        out.write("".join(self._lines))
        if self._dropped:
            out.write(f"({self._dropped} more log lines were dropped while the screen was up)\n")
        out.flush()


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


def hoststates_table(cluster: Cluster, namespace: str | None, *, updating: bool) -> str:
    """The HostStates as ``kubectl get`` prints them (the rollout's columns while updating)."""
    items, _ = cluster.list(HOSTSTATES, namespace)
    return render(rows(items, UPDATE_COLUMNS if updating else HOSTSTATE_COLUMNS))


def pools_table(cluster: Cluster) -> str:
    items, _ = cluster.list(NODEPOOLS, None)
    if not items:
        return ""
    return render(rows(items, tuple(c for c in NODEPOOL_COLUMNS if c is not AGE)))
