"""What the demo shows: the HostStates as ``kubectl get`` prints them, and one line of counts.

While the fleet provisions, the table is ``kubectl get hoststates``. Once its
Nodes update, it is the columns an operator reads during a rollout — each
node's step, how long it has been in it, and what it is waiting for — with
the NodePools below; on a terminal, stuck and degraded nodes are shown in red.
"""

from __future__ import annotations

import shutil
from typing import Any

from ..api.columns import AGE, HOSTSTATE_COLUMNS, NODEPOOL_COLUMNS, Column
from ..api.updates import UpdateStep
from ..cluster.interface import HOSTSTATES, NODEPOOLS, Cluster
from .tables import render, rows

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
RED, RESET = "\x1b[31m", "\x1b[0m"


def hoststates_table(
    cluster: Cluster,
    namespace: str | None,
    *,
    updating: bool,
    color: bool = False,
    height: int | None = None,
    width: int | None = None,
) -> str:
    """The table; with ``height``, at most that many lines (rows that need attention
    first, then a line saying how many are not shown); with ``width``, no line longer."""
    items, _ = cluster.list(HOSTSTATES, namespace)
    columns = UPDATE_COLUMNS if updating else HOSTSTATE_COLUMNS
    header, *lines = render(rows(items, columns)).split("\n")
    by_name = {i["metadata"]["name"]: i for i in items}
    urgent = [needs_attention(by_name.get(line.split(" ", 1)[0], {})) for line in lines]
    shown = list(range(len(lines)))
    if height is not None and len(lines) > height - 1:
        room = max(height - 2, 1)  # the header and the line saying what is left out
        order = [i for i in shown if urgent[i]] + [i for i in shown if not urgent[i]]
        shown = sorted(order[:room])
    out = [header[:width] if width else header]
    for i in shown:
        line = lines[i][:width] if width else lines[i]
        out.append(f"{RED}{line}{RESET}" if color and urgent[i] else line)
    hidden = len(lines) - len(shown)
    if hidden:
        attention = sum(urgent) - sum(urgent[i] for i in shown)
        note = f"... {hidden} more not shown ({attention} of them need attention)"
        out.append(note[:width] if width else note)
    return "\n".join(out)


def live_frame(cluster: Cluster, namespace: str | None, updating: bool, footer: list[str]) -> str:
    """One screenful: the table (as many rows as fit; ``namespace`` None: all of them),
    the pools, then ``footer``, each line cut to the terminal's width; drawn from the
    top of a cleared screen."""
    size = shutil.get_terminal_size()
    pools = pools_table(cluster) if updating else ""
    below = (pools.split("\n") if pools else []) + footer
    table = hoststates_table(
        cluster,
        namespace,
        updating=updating,
        color=True,
        height=max(size.lines - len(below) - 1, 3),
        width=size.columns,
    )
    return "\x1b[H\x1b[2J" + "\n".join([table, *(line[: size.columns] for line in below)]) + "\n"


def pools_table(cluster: Cluster) -> str:
    items, _ = cluster.list(NODEPOOLS, None)
    if not items:
        return ""
    return render(rows(items, tuple(c for c in NODEPOOL_COLUMNS if c is not AGE)))


def needs_attention(hoststate: dict[str, Any]) -> bool:
    status = hoststate.get("status") or {}
    stuck = any(
        c.get("type") == "Stuck" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )
    step = (status.get("update") or {}).get("step")
    return stuck or step == UpdateStep.DEGRADED.value
