"""The MachineConfigNode vocabulary, derived from a book's update cursor.

Parents ``UpdatePrepared``, ``UpdateExecuted``, ``UpdatePostActionComplete``,
``UpdateComplete``, ``Resumed`` and ``Updated``; their children ``Cordoned``,
``Drained``, ``AppliedFilesAndOS`` (of UpdateExecuted), ``RebootedNode`` (of
UpdatePostActionComplete), ``Uncordoned`` (of UpdateComplete); and ``NodeDegraded``:
openshift/api's ``machineconfiguration/v1`` words, which have no ``UpdateCompatible`` or
``ReloadedCRIO`` (a CRI-O reload is ``UpdatePostActionComplete`` in progress, reason
``ReloadingCRIO``). As in OpenShift's MachineConfigNode: ``True`` = done,
``Unknown`` = in progress, ``False`` = not started or failed, the reason says
which. A parent in progress names the child in progress (``Draining``).

Unlike MachineConfigNode, the phases of a finished update stay ``True`` (its
daemon resets them to ``False`` once ``Updated``): a table of nodes then
reads "all done" for an updated node, and ``NotYetOccurred`` only for a node
never seen updating. A phase the update went past without showing it (no
drain, no reboot) is ``True`` with reason ``NotRequired``.

Pure functions: the book stamps each condition when its status changes.
"""

from __future__ import annotations

from typing import NamedTuple

from ..api.updates import ORDER, UpdateStep
from .conditions import Cond
from .records import UpdateCursor

S = UpdateStep


class Phase(NamedTuple):
    condition: str
    steps: tuple[UpdateStep, ...]  # the steps during which it is in progress
    doing: str  # reason while in progress: what the node is doing


# In the order a node goes through them.
CHILDREN: tuple[Phase, ...] = (
    Phase("Cordoned", (S.CORDONING,), "Cordoning"),
    Phase("Drained", (S.DRAINING,), "Draining"),
    Phase("AppliedFilesAndOS", (S.APPLYING,), "ApplyingFilesAndOS"),
    Phase("RebootedNode", (S.REBOOTING,), "Rebooting"),
    Phase("Uncordoned", (S.RESUMING,), "Uncordoning"),
)
PARENTS: tuple[Phase, ...] = (
    Phase("UpdatePrepared", (S.PREPARING,), ""),
    Phase("UpdateExecuted", (S.CORDONING, S.DRAINING, S.APPLYING), ""),
    Phase("UpdatePostActionComplete", (S.RELOADING_CRIO, S.REBOOTING), ""),
    Phase("UpdateComplete", (S.RESUMING,), ""),
    Phase("Resumed", (S.RESUMING,), "Resuming"),
)
PARENT_COLUMNS = (
    "Updated",
    "UpdatePrepared",
    "UpdateExecuted",
    "UpdatePostActionComplete",
    "UpdateComplete",
    "Resumed",
)
CONDITION_TYPES = (
    *PARENT_COLUMNS,
    "Cordoned",
    "Drained",
    "AppliedFilesAndOS",
    "RebootedNode",
    "Uncordoned",
    "NodeDegraded",
)
# what a node does in each step, the reason of the condition in progress
DOING: dict[UpdateStep, str] = {
    S.PREPARING: "CheckingCompatibility",
    S.RELOADING_CRIO: "ReloadingCRIO",
    **{step: c.doing for c in CHILDREN for step in c.steps},
}
# the reason of Drained (and UpdateExecuted) while no eviction is allowed: a drain that
# fails, where MachineConfigNode writes the same reason as for one that runs
DRAIN_BLOCKED = "DrainBlocked"


def derive(cursor: UpdateCursor) -> dict[str, Cond]:
    """Every update condition, keyed by type."""
    step, visited = cursor.step, cursor.visited
    failed = cursor.failed_step if step == S.DEGRADED else None
    at = failed or step
    rank = ORDER.get(at, 0)
    finished = step == S.UPDATED and cursor.started_at is not None
    out: dict[str, Cond] = {}
    for phase in (*PARENTS, *CHILDREN):
        out[phase.condition] = _phase(phase, at, rank, finished, failed, visited, cursor)
    if step == S.UPDATED:
        out["Updated"] = Cond("True", "AtDesiredConfig", _running(cursor))
    elif step == S.DEGRADED:
        out["Updated"] = Cond("False", "UpdateDegraded", cursor.message)
    else:
        target = f"updating to {cursor.desired}" if cursor.desired else "updating"
        out["Updated"] = Cond("False", "Updating", f"{target}: {step.value}")
    if step == S.DEGRADED:
        out["NodeDegraded"] = Cond("True", "UpdateFailed", cursor.message)
    else:
        out["NodeDegraded"] = Cond("False", "AsExpected")
    return out


def _phase(
    phase: Phase,
    at: UpdateStep,
    rank: int,
    finished: bool,
    failed: UpdateStep | None,
    visited: frozenset[UpdateStep],
    cursor: UpdateCursor,
) -> Cond:
    if finished:
        shown = any(s in visited for s in phase.steps)
        return Cond("True", "Done" if shown else "NotRequired")
    if at in phase.steps:
        if failed is not None:
            return Cond("False", "Failed", cursor.message)
        if at == S.DRAINING and cursor.drain_blocked_by:  # failing, not running: say which
            return Cond("Unknown", DRAIN_BLOCKED, cursor.message)
        return Cond("Unknown", phase.doing or DOING.get(at, "InProgress"), cursor.message)
    if rank > max(ORDER[s] for s in phase.steps):
        shown = any(s in visited for s in phase.steps)
        return Cond("True", "Done" if shown else "NotRequired")
    return Cond("False", "NotYetOccurred")


def _running(cursor: UpdateCursor) -> str:
    return f"running {cursor.current}" if cursor.current else ""
