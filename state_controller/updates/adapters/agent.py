"""An update agent of any kind reporting through ``hoststate.io/`` annotations.

The agent sets ``hoststate.io/desired-config`` when it targets a node,
``hoststate.io/update-state`` to ``Working`` while it updates and ``Done``
with ``hoststate.io/current-config`` when it is finished, or ``Degraded``
with ``hoststate.io/update-reason`` when it gives up. Which step a working
node is at is read from the machine: cordon, pods left, readiness and boot.
An update whose post-action is a CRI-O reload rather than a reboot says so
with ``update-state: ReloadingCRIO`` for as long as the reload runs — the
one step the machine does not show.
"""

from __future__ import annotations

from ...api.updates import UpdateStep
from ...books.records import UpdateCursor
from ..signals import (
    OWN_CURRENT_CONFIG,
    OWN_DESIRED_CONFIG,
    OWN_REASON,
    OWN_UPDATE_STATE,
    NodeSignals,
)
from .base import DrainStatus, Reading, on_the_machine

WORKING, DONE, DEGRADED = "Working", "Done", "Degraded"
RELOADING_CRIO = "ReloadingCRIO"


class AgentAdapter:
    name = "agent"

    def claims(self, node: NodeSignals) -> bool:
        return any(
            node.annotation(key)
            for key in (OWN_UPDATE_STATE, OWN_DESIRED_CONFIG, OWN_CURRENT_CONFIG)
        )

    def read(self, node: NodeSignals, before: UpdateCursor, drain: DrainStatus) -> Reading:
        desired = node.annotation(OWN_DESIRED_CONFIG)
        current = node.annotation(OWN_CURRENT_CONFIG)
        state = node.annotation(OWN_UPDATE_STATE) or DONE
        if state == DEGRADED:
            reason = node.annotation(OWN_REASON) or "the update agent reported Degraded"
            return Reading(UpdateStep.DEGRADED, desired, current, reason)
        if state == RELOADING_CRIO:
            return Reading(UpdateStep.RELOADING_CRIO, desired, current, "reloading CRI-O")
        if state != WORKING:
            if desired and desired != current:
                return Reading(
                    UpdateStep.PENDING, desired, current, f"targeted to {desired}; not started"
                )
            return Reading(UpdateStep.UPDATED, desired or current, current)
        machine = on_the_machine(node, before, drain)
        if UpdateStep.RELOADING_CRIO in before.visited and machine.step != UpdateStep.REBOOTING:
            return Reading(
                UpdateStep.RESUMING, desired, current, "CRI-O reloaded; waiting to be uncordoned"
            )
        return Reading(machine.step, desired, current, machine.message)
