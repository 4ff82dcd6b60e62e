"""Print objects as ``kubectl get`` does, from the same printer columns as the CRDs."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from ..api.columns import Column
from ..api.jsonpath import evaluate
from ..api.timefmt import parse_rfc3339


def human_age(seconds: float) -> str:
    """kubectl's short durations: 45s, 3m12s, 5h, 2d3h."""
    s = max(int(seconds), 0)
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    return f"{days}d{hours % 24}h" if days < 8 else f"{days}d"


def cell(obj: dict[str, Any], column: Column, now: float) -> str:
    values = evaluate(obj, column.json_path)
    if not values:
        return ""  # as kubectl prints a missing value, a date's too
    if column.type == "date":
        ts = parse_rfc3339(str(values[0]))
        return human_age(now - ts) if ts is not None else "<invalid>"
    if column.type == "boolean":
        return ",".join("true" if v else "false" for v in values)
    return ",".join(str(v) for v in values)


def rows(
    objs: Iterable[dict[str, Any]],
    columns: Sequence[Column],
    *,
    wide: bool = False,
    namespaces: bool = False,
    now: float | None = None,
) -> list[list[str]]:
    now = time.time() if now is None else now
    shown = [c for c in columns if wide or c.priority == 0]
    header = (["NAMESPACE"] if namespaces else []) + ["NAME"] + [c.name.upper() for c in shown]
    out = [header]
    for obj in sorted(
        objs, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"])
    ):
        meta = obj["metadata"]
        row = ([meta.get("namespace", "")] if namespaces else []) + [meta["name"]]
        out.append(row + [cell(obj, c, now) for c in shown])
    return out


def render(table: list[list[str]]) -> str:
    """Columns separated by three spaces, left-aligned, as kubectl prints them."""
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    return "\n".join(
        "   ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in table
    )
