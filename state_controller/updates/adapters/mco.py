"""OpenShift's Machine Config Operator, read from the annotations it keeps on each Node.

The node controller targets a node by setting ``desiredConfig``; the daemon
marks it ``state: Working``, asks for ``desiredDrain: drain-<config>``; the
drain controller cordons and drains, then acknowledges with
``lastAppliedDrain: drain-<config>``; the daemon writes files and the OS, sets
``post-config-action: Rebooting`` and reboots; after the reboot it asks for
``desiredDrain: uncordon-<config>`` and, once acknowledged, writes
``currentConfig: <config>`` with ``state: Done``. ``Degraded`` and
``Unreconcilable`` carry the daemon's error in ``reason``. A node is done when
its current and desired configurations (and images, on layered pools) agree
and its state is ``Done``.
"""

from __future__ import annotations

from ...api.updates import UpdateStep
from ...books.records import UpdateCursor
from ..signals import (
    MCO_CURRENT_CONFIG,
    MCO_CURRENT_IMAGE,
    MCO_DESIRED_CONFIG,
    MCO_DESIRED_DRAIN,
    MCO_DESIRED_IMAGE,
    MCO_LAST_APPLIED_DRAIN,
    MCO_POST_CONFIG_ACTION,
    MCO_REASON,
    MCO_STATE,
    NodeSignals,
)
from .base import DrainStatus, Reading, draining_message, rebooted

DONE, WORKING = "Done", "Working"
FAILED = ("Degraded", "Unreconcilable")
REBOOTING = "Rebooting"


class MachineConfigAdapter:
    name = "mco"

    def claims(self, node: NodeSignals) -> bool:
        return bool(node.annotation(MCO_DESIRED_CONFIG) or node.annotation(MCO_STATE))

    def read(self, node: NodeSignals, before: UpdateCursor, drain: DrainStatus) -> Reading:
        desired = node.annotation(MCO_DESIRED_CONFIG)
        current = node.annotation(MCO_CURRENT_CONFIG)
        state = node.annotation(MCO_STATE)

        def at(step: UpdateStep, message: str = "") -> Reading:
            return Reading(step, desired, current, message)

        if state in FAILED:
            reason = node.annotation(MCO_REASON) or f"the Machine Config Daemon reported {state}"
            return at(UpdateStep.DEGRADED, f"{state}: {reason}")
        if state == DONE and desired == current and images_done(node):
            return at(UpdateStep.UPDATED)
        if state == DONE:
            return at(UpdateStep.PENDING, f"targeted to {desired}; the daemon has not started")
        wanted = node.annotation(MCO_DESIRED_DRAIN)
        applied = node.annotation(MCO_LAST_APPLIED_DRAIN)
        if node.annotation(MCO_POST_CONFIG_ACTION) == REBOOTING or node.ready != "True":
            return at(UpdateStep.REBOOTING, "the Machine Config Daemon is rebooting the node")
        if wanted == f"uncordon-{desired}" or rebooted(node, before):
            waiting = "" if wanted == applied else "; waiting for the drain controller"
            return at(UpdateStep.RESUMING, f"in {desired}; uncordoning{waiting}")
        if wanted == f"drain-{desired}":
            if wanted != applied:
                if not node.unschedulable:
                    return at(UpdateStep.CORDONING, f"{wanted} asked; waiting for the cordon")
                return at(UpdateStep.DRAINING, draining_message(drain))
            return at(UpdateStep.APPLYING, f"drained; writing the files and OS of {desired}")
        return at(UpdateStep.PREPARING, f"the Machine Config Daemon is preparing {desired}")


def images_done(node: NodeSignals) -> bool:
    """The image half of the operator's 'done': no image annotations, or the same image."""
    desired, current = node.annotation(MCO_DESIRED_IMAGE), node.annotation(MCO_CURRENT_IMAGE)
    if not desired and not current:
        return True
    return bool(desired) and desired == current
