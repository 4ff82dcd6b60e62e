"""A HostState as the live screen reads it (:class:`Row`), and the fleet sorted for a
person: what needs attention, what is in progress, what has settled (:func:`sort_rows`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from ..api.timefmt import parse_rfc3339
from ..api.updates import UpdateStep

ALLOWED = re.compile(r"longer than the (\S+) allowed")  # in the Stuck condition's message


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


def all_settled(items: Iterable[dict[str, Any]], keys: Collection[str]) -> bool:
    """The HostStates of ``keys`` (namespace/name) are there, and show every one settled,
    none in progress or in trouble: what a screen may call settled. The books get there
    first and each HostState is written after them, so a screen that trusted the books
    alone could draw its last frame with a host still in progress."""
    wanted = set(keys)
    ours = [i for i in items if f"{i['metadata']['namespace']}/{i['metadata']['name']}" in wanted]
    attention, moving, settled = sort_rows(ours)
    return not attention and not moving and sum(settled.values()) == len(wanted)
