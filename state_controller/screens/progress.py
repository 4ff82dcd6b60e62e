"""The fleet's progress as the books tell it: how many hosts reached their goal, by state,
in error, stuck; and the one line of counts the demo and ``bootstrap`` print."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..api.states import OperationalStatus, ProvisioningState
from ..api.updates import UpdateStep
from ..runtime.controller import HostController


def summarize(
    controller: HostController, goals: Mapping[str, ProvisioningState], target: str
) -> dict[str, Any]:
    """Counts from the books: how many hosts (by key) reached their goal state with no
    error, by state, in error, stuck. ``target`` says what the goals are, in words."""
    books = controller.books
    by_state: Counter[str] = Counter()
    not_at_target = []
    errors = 0
    stuck = []
    now = time.time()
    for key, goal in goals.items():
        book = books.get(key)
        state = book.cursor.state.value if book else ""
        by_state[state or "(new)"] += 1
        if (
            book is None
            or book.cursor.state != goal
            or book.cursor.operational_status != OperationalStatus.OK
        ):
            not_at_target.append(key)
        if book is not None:
            errors += book.cursor.error_count
            if controller.config.stuck.stuck_now(book, now):
                stuck.append(key)
    return {
        "hosts": len(goals),
        "target": target,
        "at_target": len(goals) - len(not_at_target),
        "by_state": dict(sorted(by_state.items())),
        "errors_in_a_row": errors,
        "stuck_now": len(stuck),
        "stuck": stuck,
        "not_at_target": not_at_target,
    }


def provisioning_line(summary: dict[str, Any], started: float) -> str:
    states = ", ".join(f"{k}={v}" for k, v in summary["by_state"].items())
    return (
        f"[{time.time() - started:5.1f}s] {summary['at_target']}/{summary['hosts']} "
        f"{summary['target']} | {states} | errors {summary['errors_in_a_row']} | "
        f"stuck {summary['stuck_now']}"
    )


def update_line(update: dict[str, Any], started: float) -> str:
    steps: Counter[str] = Counter(update["by_step"])
    steps.pop(UpdateStep.UPDATED.value, None)
    moving = ", ".join(f"{k}={v}" for k, v in sorted(steps.items())) or "none updating"
    attention = [f"stuck {', '.join(update['stuck'])}"] if update["stuck"] else []
    if update["degraded"]:
        attention.append(f"degraded {', '.join(update['degraded'])}")
    return (
        f"[{time.time() - started:5.1f}s] update: {update['updated']}/{update['nodes']} "
        f"nodes at their new config | {moving}" + "".join(f" | {a}" for a in attention)
    )
