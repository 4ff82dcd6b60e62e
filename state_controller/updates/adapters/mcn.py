"""OpenShift's MachineConfigNode (``machineconfiguration.openshift.io/v1``), read as the
Machine Config Operator writes it for each Node.

Its conditions follow an update as parents and children: ``UpdatePrepared``;
``UpdateExecuted`` with ``Cordoned``, ``Drained`` and ``AppliedFilesAndOS``;
``UpdatePostActionComplete`` with ``RebootedNode``; ``UpdateComplete`` with
``Uncordoned``; ``Resumed``; ``Updated``; and ``NodeDegraded``. ``Unknown`` means in
progress, ``True`` done, ``False`` not started (reason ``NotYetOccurred``) or failed.
The step is that of the first condition, in the update's order, that is in progress;
the node is updated once ``Updated`` is ``True`` with its current configuration the
desired one. A drain in progress and a drain that fails are both ``Drained: Unknown``
with the same reason; only the message differs, so the message is kept, and the pods
left and any blocking PodDisruptionBudget are counted as for every other agent.
"""

from __future__ import annotations

from ...api.updates import UpdateStep
from ...books.records import UpdateCursor
from ..signals import NodeSignals
from .base import DrainStatus, Reading, draining_message

IN_PROGRESS = "Unknown"

# the update's conditions in its order, and the step each one in progress means
STEP_OF: tuple[tuple[str, UpdateStep], ...] = (
    ("UpdatePrepared", UpdateStep.PREPARING),
    ("Cordoned", UpdateStep.CORDONING),
    ("Drained", UpdateStep.DRAINING),
    ("AppliedFilesAndOS", UpdateStep.APPLYING),
    ("UpdateExecuted", UpdateStep.APPLYING),
    ("RebootedNode", UpdateStep.REBOOTING),
    ("UpdatePostActionComplete", UpdateStep.REBOOTING),
    ("Uncordoned", UpdateStep.RESUMING),
    ("UpdateComplete", UpdateStep.RESUMING),
    ("Resumed", UpdateStep.RESUMING),
)


class MachineConfigNodeAdapter:
    name = "mcn"

    def claims(self, node: NodeSignals) -> bool:
        """A MachineConfigNode with no status yet says nothing: the Node is read as if it
        had none, until the daemon reports."""
        return node.mcn is not None and node.mcn.reported

    def read(self, node: NodeSignals, before: UpdateCursor, drain: DrainStatus) -> Reading:
        mcn = node.mcn
        assert mcn is not None  # claims() said so
        desired, current = mcn.desired or mcn.current, mcn.current

        def at(step: UpdateStep, message: str = "") -> Reading:
            return Reading(step, desired, current, message)

        status, reason, message = mcn.condition("NodeDegraded")
        if status == "True":
            return at(UpdateStep.DEGRADED, f"NodeDegraded: {message or reason}")
        if mcn.condition("Updated")[0] == "True" and desired == current:
            return at(UpdateStep.UPDATED)
        for type_, step in STEP_OF:
            status, reason, message = mcn.condition(type_)
            if status != IN_PROGRESS:
                continue
            if step == UpdateStep.DRAINING:
                said = f"; the Machine Config Operator says: {message}" if message else ""
                return at(step, draining_message(drain) + said)
            return at(step, f"{type_}: {message or reason}")
        if desired != current:
            return at(UpdateStep.PENDING, f"targeted to {desired}; the daemon has not started")
        return at(UpdateStep.UPDATED)
