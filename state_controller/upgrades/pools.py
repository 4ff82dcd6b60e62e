"""A pool's rollout in five numbers, as a MachineConfigPool counts its machines."""

from __future__ import annotations

from collections.abc import Iterable

from ..api.updates import UpdateStep, in_progress
from .signals import NodeSignals


def pool_summary(members: Iterable[tuple[NodeSignals, UpdateStep | None]]) -> dict[str, int]:
    """The NodePool status of these Nodes, each with its update step (None: not read yet).

    Updated: at the desired configuration with no update under way; updating: an
    update in progress and not degraded; unavailable: not Ready, cordoned, or
    updating (degraded included) — it cannot be counted on for work.
    """
    machines = updated = updating = degraded = unavailable = 0
    for node, step in members:
        machines += 1
        busy = step is not None and in_progress(step)
        if step == UpdateStep.UPDATED:
            updated += 1
        elif step == UpdateStep.DEGRADED:
            degraded += 1
        elif busy:
            updating += 1
        if busy or node.ready != "True" or node.unschedulable:
            unavailable += 1
    return {
        "machineCount": machines,
        "updatedMachineCount": updated,
        "updatingMachineCount": updating,
        "degradedMachineCount": degraded,
        "unavailableMachineCount": unavailable,
    }
