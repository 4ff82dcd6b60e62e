"""``kubectl hoststate eta POOL``: when a NodePool's rollout is expected to end.

From the NodePool: its counts (machines, updated, updating, degraded), its
``status.estimate`` (expected end and late bound, as first said and as now, the
machines left, how many update at once, one machine's whole update) and its
``OnSchedule`` condition; then the pool's machines still updating, each with its own
estimate: the HostStates whose Node (``spec.node``) the NodePool's label puts in the
pool. With no estimate it says why, and gives no number.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..api.nodepool import UNLABELED_POOL
from ..api.objects import Obj
from ..updates.signals import DEFAULT_POOL_LABEL, pool_of
from .clock import columns, instant, one_line, relative, span, utc, when
from .reading import Target, hoststates, nodepool, nodes
from .why import UPDATE_DEGRADED, UPDATE_TIMED

HELP = "a NodePool's rollout: its expected end, on schedule or late, the machines updating"
DEFAULT_LIMIT = 20  # machines listed


def pool_nodes(pool: Obj, all_nodes: list[Obj]) -> set[str]:
    """The names of the Nodes the pool's label puts in it (``unlabeled``: those in none)."""
    name = str((pool.get("metadata") or {}).get("name") or "")
    label = str((pool.get("spec") or {}).get("label") or DEFAULT_POOL_LABEL)
    wanted = "" if name == UNLABELED_POOL else name
    return {
        str(n["metadata"]["name"])
        for n in all_nodes
        if pool_of((n.get("metadata") or {}).get("labels") or {}, label) == wanted
    }


def updating(states: list[Obj], in_pool: set[str]) -> list[Obj]:
    """The HostStates of the pool's Nodes with an update under way (or degraded)."""
    return [
        s
        for s in states
        if (s.get("spec") or {}).get("node") in in_pool
        and ((s.get("status") or {}).get("update") or {}).get("step")
        in (UPDATE_TIMED | {UPDATE_DEGRADED})
    ]


def _machines(count: object) -> str:
    return f"{count} machine" + ("" if count == 1 else "s")


def _on_schedule(conditions: list[dict[str, Any]], now: float) -> str:
    found = next((c for c in conditions if c.get("type") == "OnSchedule"), None)
    if found is None:
        return "not said (no OnSchedule condition: the rollout has no estimate)"
    changed = instant(found.get("lastTransitionTime"))
    since = f" since {when(changed, now)}" if changed is not None else ""
    word = {"True": "yes", "False": "no, late"}.get(str(found.get("status")), "unknown")
    message = one_line(found.get("message"), 300)
    return f"{word} ({found.get('reason')}{since})" + (f": {message}" if message else "")


def _no_estimate(status: dict[str, Any]) -> str:
    machines = int(status.get("machineCount") or 0)
    left = machines - int(status.get("updatedMachineCount") or 0)
    if not int(status.get("updatingMachineCount") or 0) and left <= 0:
        return f"no estimate: no rollout under way (all {machines} machines are updated)"
    return (
        "no estimate: too few whole updates of this pool's machines are learned to say "
        "(an estimate waits until every step of an update has enough past durations)"
    )


def _host_row(state: Obj, now: float) -> list[str]:
    meta = state.get("metadata") or {}
    status = state.get("status") or {}
    update = status.get("update") or {}
    entered = instant(update.get("enteredAt"))
    row = [
        f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        str((state.get("spec") or {}).get("node") or ""),
        str(update.get("step") or ""),
        span(now - entered) if entered is not None else "-",
    ]
    estimate = status.get("estimate") or {}
    if estimate.get("kind") != "update":
        return [*row, "-", "-", "no estimate"]
    ends, late = instant(estimate.get("endsAt")), instant(estimate.get("lateAt"))
    step_late = instant(estimate.get("stepLateAt"))
    verdict = "late" if step_late is not None and now >= step_late else "as usual"
    return [
        *row,
        relative(ends, now) if ends is not None else "-",
        relative(late, now) if late is not None else "-",
        f"{verdict}; {estimate.get('samples')} samples ({estimate.get('basis')})",
    ]


def _late_first(state: Obj) -> float:
    estimate = (state.get("status") or {}).get("estimate") or {}
    return -(instant(estimate.get("lateAt")) or float("inf"))


def render(pool: Obj, hosts: list[Obj], now: float, limit: int = DEFAULT_LIMIT) -> str:
    """The pool's rollout and its machines still updating (those ending last first, the
    ones without an estimate before them; at most ``limit``, 0: all), as text."""
    meta = pool.get("metadata") or {}
    status = pool.get("status") or {}
    lines = [f"NodePool {meta.get('name', '')}: times in UTC, ages as of {utc(now)}"]
    counts = (
        f"{status.get('machineCount', 0)} in the pool, "
        f"{status.get('updatedMachineCount', 0)} updated, "
        f"{status.get('updatingMachineCount', 0)} updating, "
        f"{status.get('degradedMachineCount', 0)} degraded"
    )
    rows = [["machines:", counts]]
    if status.get("desiredConfig"):
        rows.append(["desired:", str(status["desiredConfig"])])
    estimate = status.get("estimate")
    if estimate:
        ends, late = instant(estimate.get("endsAt")), instant(estimate.get("lateAt"))
        first_ends = instant(estimate.get("firstEndsAt"))
        first_late = instant(estimate.get("firstLateAt"))
        made = instant(estimate.get("madeAt"))
        end_words = when(ends, now) if ends is not None else "-"
        late_words = when(late, now) if late is not None else "-"
        rows.append(["ends:", f"{end_words}, late after {late_words}"])
        if first_ends is not None and first_late is not None:
            rows.append(
                [
                    "first said:",
                    f"{utc(first_ends)}, late after {utc(first_late)} "
                    f"(past that, the rollout is late)",
                ]
            )
        rows.append(
            [
                "from:",
                f"{_machines(estimate.get('machinesLeft'))} left, {estimate.get('atOnce')} at "
                f"once, {span(float(estimate.get('machineSeconds') or 0))} per machine "
                f"(the median of a whole update), the least known step from "
                f"{estimate.get('samples')} past durations"
                + (f"; made {relative(made, now)}" if made is not None else ""),
            ]
        )
    else:
        rows.append(["ends:", _no_estimate(status)])
    rows.append(["on schedule:", _on_schedule(list(status.get("conditions") or []), now)])
    lines.extend(columns(rows))
    ordered = sorted(hosts, key=_late_first)
    shown = ordered[:limit] if limit > 0 else ordered
    lines.append("")
    if not hosts:
        lines.append("machines updating: none")
        return "\n".join(lines) + "\n"
    lines.append(f"machines updating: {len(hosts)}")
    table = [["HOSTSTATE", "NODE", "STEP", "IN STEP", "ENDS", "LATE AFTER", "ESTIMATE"]]
    table.extend(_host_row(s, now) for s in shown)
    lines.extend(columns(table, indent="  "))
    if len(shown) < len(hosts):
        lines.append(f"  … and {len(hosts) - len(shown)} more (--limit 0 lists them all)")
    return "\n".join(lines) + "\n"


def add(p: argparse.ArgumentParser) -> None:
    p.add_argument("pool", help="the NodePool (kubectl get nodepools.hoststate.io)")
    p.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"list N machines updating at most (default {DEFAULT_LIMIT}; 0: all)",
    )


def run(args: argparse.Namespace, target: Target, now: float) -> str:
    """Read the NodePool, the Nodes and the HostStates, and say when the rollout ends."""
    cluster = target.connect()
    try:
        pool = nodepool(cluster, args.pool)
        in_pool = pool_nodes(pool, nodes(cluster))
        hosts = updating(hoststates(cluster), in_pool)
    finally:
        cluster.close()
    return render(pool, hosts, now, limit=args.limit)
