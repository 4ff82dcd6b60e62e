"""``kubectl hoststate eta POOL``: when a NodePool's rollout is expected to end.

From the NodePool: its counts (machines, updated, updating, degraded), its
``status.estimate`` (expected end and late bound, as first said and as now, the
machines left, how many update at once, one machine's whole update) and its
``OnSchedule`` condition; then the pool's machines still updating, each with its own
estimate. A machine is in the pool the controller put it in: the pool its HostState
records (``status.inventory.pool``, which the controller takes from the Node's
MachineConfigNode ``spec.pool.name`` first, else from the pool label: ``NodeSignals.pool``).
A HostState that records none (written by an older controller) is placed the same way
from what the API shows: its Node's MachineConfigNode where that kind is served, else
the Node's labels. With no estimate it says why, and gives no number.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..api.nodepool import UNLABELED_POOL
from ..api.objects import Obj
from ..updates.signals import DEFAULT_POOL_LABEL, machine_config_node_signals, pool_of
from .clock import columns, instant, one_line, relative, span, utc, when
from .reading import Target, hoststates, machineconfignodes, nodepool, nodes
from .why import UPDATE_DEGRADED, UPDATE_TIMED

HELP = "a NodePool's rollout: its expected end, on schedule or late, the machines updating"
DEFAULT_LIMIT = 20  # machines listed


def _pool_name(pool: Obj) -> str:
    """The pool as the controller names a Node's pool: ``""`` for ``unlabeled``."""
    name = str((pool.get("metadata") or {}).get("name") or "")
    return "" if name == UNLABELED_POOL else name


def node_pools(pool: Obj, all_nodes: list[Obj], mcns: list[Obj]) -> dict[str, str]:
    """Each Node's pool as the controller decides it from what the API shows: its
    MachineConfigNode's ``spec.pool.name`` (the MCN named after the Node), else the
    NodePool's label on the Node (``""``: in none)."""
    label = str((pool.get("spec") or {}).get("label") or DEFAULT_POOL_LABEL)
    named: dict[str, str] = {}
    for mcn in mcns:
        node = ((mcn.get("spec") or {}).get("node") or {}).get("name")
        chosen = machine_config_node_signals(mcn).pool
        if chosen:
            named[str(node or (mcn.get("metadata") or {}).get("name") or "")] = chosen
    found: dict[str, str] = {}
    for n in all_nodes:
        meta = n.get("metadata") or {}
        name = str(meta.get("name") or "")
        found[name] = named.get(name) or pool_of(meta.get("labels") or {}, label)
    return found


def pool_nodes(pool: Obj, all_nodes: list[Obj], mcns: list[Obj] | None = None) -> set[str]:
    """The names of the Nodes in the pool by what the API shows (``unlabeled``: those in
    none): see :func:`node_pools`."""
    wanted = _pool_name(pool)
    return {n for n, p in node_pools(pool, all_nodes, mcns or []).items() if p == wanted}


def recorded_pool(state: Obj) -> str | None:
    """The pool the controller recorded for the HostState's Node (``status.inventory``;
    ``""``: in none), or None when the HostState records no inventory."""
    inventory = (state.get("status") or {}).get("inventory")
    if not isinstance(inventory, dict) or not inventory.get("source"):
        return None
    return str(inventory.get("pool") or "")


def in_pool(pool: Obj, states: list[Obj], all_nodes: list[Obj], mcns: list[Obj]) -> list[Obj]:
    """The HostStates of the pool's machines: those with a Node (``spec.node``) whose
    recorded pool is this one; for a HostState recording none, its Node's pool as
    :func:`node_pools` finds it."""
    wanted = _pool_name(pool)
    shown = node_pools(pool, all_nodes, mcns)
    chosen = []
    for s in states:
        node = (s.get("spec") or {}).get("node")
        if not node:
            continue
        recorded = recorded_pool(s)
        if (recorded if recorded is not None else shown.get(str(node))) == wanted:
            chosen.append(s)
    return chosen


def updating(states: list[Obj], in_pool: set[str] | None = None) -> list[Obj]:
    """The HostStates (of the Nodes named, when given) with an update under way (or
    degraded)."""
    return [
        s
        for s in states
        if (in_pool is None or (s.get("spec") or {}).get("node") in in_pool)
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
    """Read the NodePool, the HostStates (and, for those recording no pool, the Nodes
    and MachineConfigNodes), and say when the rollout ends."""
    cluster = target.connect()
    try:
        pool = nodepool(cluster, args.pool)
        states = hoststates(cluster)
        unrecorded = any(recorded_pool(s) is None for s in states)
        all_nodes = nodes(cluster) if unrecorded else []
        mcns = machineconfignodes(cluster) if unrecorded else []
        hosts = updating(in_pool(pool, states, all_nodes, mcns))
    finally:
        cluster.close()
    return render(pool, hosts, now, limit=args.limit)
