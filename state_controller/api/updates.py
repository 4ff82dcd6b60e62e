"""The steps of a node update, in the order a node goes through them.

One vocabulary for every update agent: the Machine Config Operator, an agent
reporting through ``hoststate.io/*`` annotations, or none at all (a kubelet
upgrade seen only in the Node's status). Each signal adapter reads a Node and
answers with one of these steps; the book records each change of step as a
transition, so a host's history runs registration → … → provisioned → every
update, in one sequence.

The order follows what the Machine Config Operator does (its daemon marks the
node ``Working``, asks for a drain, the drain controller cordons and drains,
the daemon writes files and the OS, reboots — or, when only CRI-O's
configuration changed, reloads CRI-O instead —, asks for the uncordon, and
marks the node ``Done``); an agent that skips a step (no drain, no reboot)
simply never shows it.
"""

from __future__ import annotations

from enum import StrEnum


class UpdateStep(StrEnum):
    """Where a node is in its update. The values are what history and tables show."""

    UPDATED = "updated"  # at its desired configuration: no update in progress
    PENDING = "update pending"  # a new configuration was targeted; nothing done yet
    PREPARING = "preparing update"  # the agent checks and stages the update
    CORDONING = "cordoning"  # a drain was asked for; the node still takes new pods
    DRAINING = "draining"  # cordoned; pods that an eviction would move are still there
    APPLYING = "applying update"  # drained (or no drain needed): files and OS are written
    RELOADING_CRIO = "reloading CRI-O"  # the post-action is a CRI-O reload instead of a reboot
    REBOOTING = "rebooting"  # the node went down for its reboot, or was told to
    RESUMING = "resuming"  # back at the new configuration: uncordoning, resuming work
    DEGRADED = "update degraded"  # the agent gave up on this update; it says why


# The reasons of the history records (and Events) that start and end an update.
UPDATE_STARTED = "UpdateStarted"
UPDATE_COMPLETE = "UpdateComplete"
UPDATE_DEGRADED = "UpdateDegraded"

IN_PROGRESS: tuple[UpdateStep, ...] = (
    UpdateStep.PENDING,
    UpdateStep.PREPARING,
    UpdateStep.CORDONING,
    UpdateStep.DRAINING,
    UpdateStep.APPLYING,
    UpdateStep.RELOADING_CRIO,
    UpdateStep.REBOOTING,
    UpdateStep.RESUMING,
)
ORDER: dict[UpdateStep, int] = {step: rank for rank, step in enumerate(IN_PROGRESS, start=1)}

# Default stuck thresholds, seconds. The Machine Config Operator warns about a drain
# after 10 minutes (DrainThresholdExceeded) and fails it after an hour; a reboot of a
# bare-metal server (POST, RAID and NIC firmware) takes 5-15 minutes. A pending update
# waits for its turn in a rolling update, which is not being stuck.
DEFAULT_STEP_THRESHOLDS: dict[UpdateStep, float] = {
    UpdateStep.PREPARING: 15 * 60,
    UpdateStep.CORDONING: 10 * 60,
    UpdateStep.DRAINING: 30 * 60,
    UpdateStep.APPLYING: 30 * 60,
    UpdateStep.RELOADING_CRIO: 10 * 60,
    UpdateStep.REBOOTING: 20 * 60,
    UpdateStep.RESUMING: 15 * 60,
}


def in_progress(step: UpdateStep) -> bool:
    return step in ORDER or step == UpdateStep.DEGRADED
