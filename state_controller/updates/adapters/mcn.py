"""OpenShift's MachineConfigNode (``machineconfiguration.openshift.io/v1``), read as the
Machine Config Operator writes it for each Node.

The condition types are openshift/api's (``machineconfiguration/v1/
types_machineconfignode.go``); how and when they are written is the operator's
(``pkg/upgrademonitor/upgrade_monitor.go``, ``pkg/daemon/update.go``, ``daemon.go``,
``pkg/controller/drain/drain_controller.go``), and its own e2e test walks them in this
order (``test/extended/machineconfignode.go``, ``ValidateTransitionThroughConditions``):

- each write sets a parent and at most one child together: ``UpdateExecuted=Unknown``
  with ``Cordoned=True``, then with ``Drained=Unknown``, ``Drained=True``,
  ``AppliedFilesAndOS=Unknown``, then both ``True``; ``RebootedNode``, ``Resumed`` and
  ``Updated`` are written as parents of their own;
- ``Unknown`` is the phase in progress — or failing and retried (a drain that does not
  finish, a cordon refused: the message says ``Error: ...``), so the message is kept;
- a rebootless update has ``UpdatePostActionComplete=True`` (a service reloaded, or
  nothing to do) and no ``RebootedNode``;
- only the write of ``Updated=True`` ends an update, and it resets every other
  condition to ``False``; any other parent written while ``Updated=True`` turns it
  ``False``, an update or not (a pinned image set prefetched).

So the step is that of the last condition in the update's order (:data:`UPDATE`) that
has started (``Unknown`` or ``True``); the node is updated only once ``Updated=True``
with nothing left to change. ``NodeDegraded=True`` and ``PinnedImageSetsDegraded=True``
are a degraded node, with the operator's message.
"""

from __future__ import annotations

from typing import NamedTuple

from ...api.updates import UpdateStep
from ...books.records import UpdateCursor
from ..signals import MachineConfigNodeSignals, NodeSignals
from .base import DrainStatus, Reading, draining_message

S = UpdateStep


class Phase(NamedTuple):
    condition: str
    doing: UpdateStep  # the step while it is Unknown
    done: UpdateStep  # the step once it is True and nothing after it has started


# The update's conditions in the order the operator writes them, each parent before its
# children. UpdateExecuted alone (no child started) is an update that needs no drain;
# the image-mode conditions (AppliedFiles, AppliedOSImage, ImagePulledFromRegistry) are
# written where AppliedFilesAndOS is, with the ImageModeStatusReporting feature gate.
UPDATE: tuple[Phase, ...] = (
    Phase("UpdatePrepared", S.PREPARING, S.PREPARING),
    Phase("UpdateExecuted", S.APPLYING, S.APPLYING),
    Phase("Cordoned", S.CORDONING, S.CORDONING),
    Phase("Drained", S.DRAINING, S.DRAINING),
    Phase("AppliedFilesAndOS", S.APPLYING, S.APPLYING),
    Phase("AppliedFiles", S.APPLYING, S.APPLYING),
    Phase("ImagePulledFromRegistry", S.APPLYING, S.APPLYING),
    Phase("AppliedOSImage", S.APPLYING, S.APPLYING),
    # done without a RebootedNode: a rebootless update, back at work with no reboot
    Phase("UpdatePostActionComplete", S.APPLYING, S.RESUMING),
    Phase("RebootedNode", S.REBOOTING, S.RESUMING),
    Phase("Resumed", S.RESUMING, S.RESUMING),
    Phase("UpdateComplete", S.RESUMING, S.RESUMING),
    Phase("Uncordoned", S.RESUMING, S.RESUMING),
)
# conditions that, True, are a degraded node whatever the update's step
DEGRADED_BY = ("NodeDegraded", "PinnedImageSetsDegraded")
IN_PROGRESS, DONE = "Unknown", "True"


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

        for type_ in DEGRADED_BY:
            status, reason, message = mcn.condition(type_)
            if status == DONE:
                return at(S.DEGRADED, _degraded(mcn, type_, message or reason))
        started = [p for p in UPDATE if mcn.condition(p.condition)[0] in (IN_PROGRESS, DONE)]
        if mcn.condition("Updated")[0] == DONE or not started:  # not started: no update
            if mcn.targeted:
                return at(S.PENDING, f"targeted to {desired}; the daemon has not started")
            return at(S.UPDATED, _at_rest(mcn))
        phase = started[-1]
        status, reason, message = mcn.condition(phase.condition)
        if status == IN_PROGRESS and phase.doing == S.DRAINING:
            said = f"; the Machine Config Operator says: {message}" if message else ""
            return at(S.DRAINING, draining_message(drain) + said)
        step = phase.doing if status == IN_PROGRESS else phase.done
        return at(step, f"{phase.condition}={status}: {message or reason}")


def _degraded(mcn: MachineConfigNodeSignals, type_: str, said: str) -> str:
    failures = "; ".join(mcn.pinned_failures) if type_ == "PinnedImageSetsDegraded" else ""
    return f"{type_}: {said}" + (f" ({failures})" if failures else "")


def _at_rest(mcn: MachineConfigNodeSignals) -> str:
    """What a node at rest is still doing: prefetching the images of a pinned image set."""
    status, reason, message = mcn.condition("PinnedImageSetsProgressing")
    return f"PinnedImageSetsProgressing: {message or reason}" if status == DONE else ""
