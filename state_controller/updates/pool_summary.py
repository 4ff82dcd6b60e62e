"""A pool's rollout in a few numbers, as a MachineConfigPool counts its machines."""

from __future__ import annotations

from collections.abc import Iterable

from ..api.updates import UpdateStep, in_progress
from ..books.records import UpdateCursor
from .signals import NodeSignals


def pool_target(updates: Iterable[UpdateCursor | None]) -> str:
    """The configuration the pool is rolling to: the one its latest update went to.

    A MachineConfigPool knows its target; here it is read from the Nodes: the
    desired configuration of the update that began last. "" when no update
    named one (none seen yet, or kubelet upgrades with no agent to name them).
    """
    started = [u for u in updates if u is not None and u.started_at is not None and u.desired]
    return max(started, key=lambda u: u.started_at or 0.0).desired if started else ""


def pool_summary(members: Iterable[tuple[NodeSignals, UpdateCursor | None]]) -> dict[str, object]:
    """The NodePool status of these Nodes, each with its update (None: not read yet).

    Updated: no update under way and at the pool's target configuration (any, if
    none is known), so a node the rollout has not reached yet is not counted;
    updating: an update in progress and not degraded; unavailable: not Ready,
    cordoned, or updating (degraded included) — it cannot be counted on for work.
    """
    members = list(members)
    target = pool_target(update for _, update in members)
    machines = updated = updating = degraded = unavailable = 0
    for node, update in members:
        machines += 1
        step = update.step if update is not None else None
        current = update.current if update is not None else ""
        busy = step is not None and in_progress(step)
        if step == UpdateStep.UPDATED and target in ("", current):
            updated += 1
        elif step == UpdateStep.DEGRADED:
            degraded += 1
        elif busy:
            updating += 1
        if busy or node.ready != "True" or node.unschedulable:
            unavailable += 1
    return {
        "desiredConfig": target,
        "machineCount": machines,
        "updatedMachineCount": updated,
        "updatingMachineCount": updating,
        "degradedMachineCount": degraded,
        "unavailableMachineCount": unavailable,
    }
