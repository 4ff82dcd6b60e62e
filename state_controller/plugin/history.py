"""``kubectl hoststate history NAME``: a machine's timeline, chapter by chapter.

From its HostState's ``status.chapters`` (each stage of its life: registration,
inspection, preparation, provisioning, each servicing, each node update, …) and
``status.history`` (its last transitions, each naming its chapter), oldest first: per
chapter a heading (name, started, ended, outcome), then each of its transitions
``at  age  from -> to  reason  message``. Bounded: the last ``--limit`` transitions
(50 by default), those since ``--since``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from ..api.objects import Obj
from .clock import columns, instant, one_line, relative, utc, when
from .reading import Target

HELP = "a machine's timeline: its chapters and transitions, oldest first"
DEFAULT_LIMIT = 50  # the controller keeps the last 50 by default
MESSAGE_WIDTH = 160
EPSILON = 0.002  # a chapter's start and its first record share an instant, to the ms


@dataclass
class _Section:
    """One chapter's heading and the transitions shown under it."""

    name: str
    started: float
    chapter: dict[str, Any] | None  # None: its summary fell off status.chapters
    rows: list[list[str]] = field(default_factory=list)


def _chapter_of(entry: Obj, chapters: list[tuple[float, dict[str, Any]]]) -> int | None:
    """The index of the chapter a transition belongs to: the last of its name that had
    begun by then (a node's updates are all chapters named ``update``)."""
    at = instant(entry.get("at")) or 0.0
    found = None
    for index, (started, chapter) in enumerate(chapters):
        if chapter.get("name") == entry.get("chapter") and started <= at + EPSILON:
            found = index
    return found


def _heading(section: _Section, now: float) -> str:
    chapter = section.chapter
    if chapter is None:
        return (
            f"{section.name}: an earlier chapter (its summary is no longer kept), "
            f"first transition shown {when(section.started, now)}"
        )
    parts = [f"started {when(section.started, now)}"]
    ended = instant(chapter.get("endedAt"))
    if ended is None:
        parts.append("not ended")
    else:
        parts.append(f"ended {when(ended, now)}")
        parts.append(f"outcome {chapter.get('outcome') or '(none)'}")
    count = int(chapter.get("transitions") or 0)
    parts.append(f"{count} transition{'s' if count != 1 else ''}")
    return f"{section.name}: " + ", ".join(parts)


def render(obj: Obj, now: float, since: float | None = None, limit: int = DEFAULT_LIMIT) -> str:
    """The timeline of one HostState as text; ``since`` (seconds since the epoch) and
    ``limit`` (0: no limit) bound the transitions shown."""
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    who = f"HostState {meta.get('namespace', '')}/{meta.get('name', '')}"
    kept = sorted(status.get("history") or [], key=lambda e: int(e.get("seq") or 0))
    shown = [e for e in kept if since is None or (instant(e.get("at")) or 0.0) >= since]
    if limit > 0:
        shown = shown[-limit:]
    chapters = sorted(
        ((instant(c.get("startedAt")) or 0.0, c) for c in status.get("chapters") or []),
        key=lambda pair: pair[0],
    )
    lines = [f"{who}: phase {status.get('phase') or '(none)'}; times in UTC, ages as of {utc(now)}"]
    if not kept:
        lines.append("no transitions recorded yet")
        return "\n".join(lines) + "\n"
    window = (instant(shown[0].get("at")) or 0.0) if shown else now
    if since is not None:
        window = min(window, since)
    sections: dict[object, _Section] = {}
    for position, (started, chapter) in enumerate(chapters):
        ended = instant(chapter.get("endedAt"))
        if ended is None or ended >= window:
            sections[position] = _Section(str(chapter.get("name") or ""), started, chapter)
    for entry in shown:
        at = instant(entry.get("at")) or 0.0
        index = _chapter_of(entry, chapters)
        key: object = index if index is not None else ("lost", entry.get("chapter"))
        if key not in sections:
            summary = chapters[index][1] if index is not None else None
            start = chapters[index][0] if index is not None else at
            sections[key] = _Section(str(entry.get("chapter") or ""), start, summary)
        sections[key].rows.append(
            [
                utc(at),
                relative(at, now),
                f"{entry.get('from') or '-'} -> {entry.get('to') or '-'}",
                str(entry.get("reason") or "-"),
                one_line(entry.get("message"), MESSAGE_WIDTH),
            ]
        )
    ordered = sorted(sections.values(), key=lambda s: s.started)
    table = iter(columns([row for s in ordered for row in s.rows], indent="  "))
    for section in ordered:
        lines.append("")
        lines.append(_heading(section, now))
        lines.extend(next(table) for _ in section.rows)
        if not section.rows:
            lines.append("  (no transition of it in the window shown)")
    lines.append("")
    hidden = len(kept) - len(shown)
    dropped = int(status.get("historyDropped") or 0)
    summary = f"shown: {len(shown)} of the {len(kept)} transitions kept"
    if hidden:
        summary += f"; {hidden} earlier not shown (--limit 0 and no --since shows all kept)"
    if dropped:
        summary += f"; {dropped} older ones fell off the bounded history (historyDropped)"
    lines.append(summary)
    return "\n".join(lines) + "\n"


def add(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="the HostState (the Host's, BareMetalHost's or Node's name)")
    p.add_argument(
        "--since",
        metavar="WHEN",
        help="only transitions since then: a duration back from now (45m, 2h, 1h30m) "
        "or an RFC 3339 time (2026-11-28T21:00:00Z)",
    )
    p.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"the last N transitions at most (default {DEFAULT_LIMIT}; 0: all kept)",
    )


def run(args: argparse.Namespace, target: Target, now: float) -> str:
    """Read the HostState and render its timeline."""
    obj = target.hoststate(args.namespace, args.name)
    return render(obj, now, since=args.since_at, limit=args.limit)
