"""What every signal adapter answers, and what it is given to read.

An adapter turns what a Node shows into the step its update is at, nothing
more: it never changes the book, and it reads the book's update cursor only
to remember what the update started from (its boot, its configuration).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ...api.updates import ORDER, UpdateStep
from ...books.records import UpdateCursor
from ..signals import NodeSignals


@dataclass(frozen=True, slots=True)
class DrainStatus:
    """The pods an eviction would still move off a cordoned node (see ``updates.drain``)."""

    known: bool = False  # pods were looked at: the node is cordoned and its pods are watched
    pods_left: int = 0
    blocked_by: str = ""  # "namespace/name" of a PodDisruptionBudget that allows no eviction
    blocked_since: str = ""  # when that budget stopped allowing disruptions (RFC 3339)


@dataclass(frozen=True, slots=True)
class Reading:
    step: UpdateStep
    desired: str  # the configuration the node is going to; "" when the agent cannot say
    current: str  # the configuration it runs
    message: str = ""  # what is happening, in words an operator can act on


class Adapter(Protocol):
    name: str  # recorded as the update's source: "mco", "agent", "kubelet"

    def claims(self, node: NodeSignals) -> bool:
        """Whether this adapter's agent reports on the node."""
        ...

    def read(self, node: NodeSignals, before: UpdateCursor, drain: DrainStatus) -> Reading: ...


def rebooted(node: NodeSignals, before: UpdateCursor) -> bool:
    """A new boot since the update began, and the kubelet is back."""
    return bool(before.boot_id) and node.info.boot_id != before.boot_id and node.ready == "True"


def draining_message(drain: DrainStatus) -> str:
    if not drain.known:
        return "draining: counting the pods an eviction would move"
    pods = f"{drain.pods_left} pod{'' if drain.pods_left == 1 else 's'} left"
    if drain.blocked_by:
        since = f" since {drain.blocked_since}" if drain.blocked_since else ""
        return (
            f"draining: {pods}, eviction blocked by PodDisruptionBudget {drain.blocked_by}"
            f" (it allows no disruption{since})"
        )
    return f"draining: {pods}"


def on_the_machine(node: NodeSignals, before: UpdateCursor, drain: DrainStatus) -> Reading:
    """The step an update is at, read from the machine itself: cordon, pods, readiness,
    boot. For agents that say only that they are working, and for no agent at all."""
    current = before.current
    if node.ready != "True":
        return Reading(UpdateStep.REBOOTING, before.desired, current, "the node is not Ready")
    if rebooted(node, before):
        return Reading(
            UpdateStep.RESUMING, before.desired, current, "rebooted; waiting to be uncordoned"
        )
    if node.unschedulable:
        if not drain.known or drain.pods_left:
            return Reading(UpdateStep.DRAINING, before.desired, current, draining_message(drain))
        return Reading(
            UpdateStep.APPLYING, before.desired, current, "drained; waiting for the reboot"
        )
    return Reading(UpdateStep.PREPARING, before.desired, current, "the update has begun")


def never_back(before: UpdateCursor, reading: Reading) -> Reading:
    """Within one update a node does not go back a step: a pod landing on a drained
    node does not make it 'draining' again, and after its reboot it stays past it."""
    same_update = before.desired == reading.desired and before.step in ORDER
    if same_update and reading.step in ORDER and ORDER[reading.step] < ORDER[before.step]:
        return Reading(before.step, reading.desired, reading.current, before.message)
    return reading
