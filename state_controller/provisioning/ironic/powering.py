"""A host's power through Ironic: on, off (hard or soft), and reboots.

Ironic runs one power action at a time and says how it went only in the node's
``power_state`` and ``last_error``: the target this controller asked for is remembered
(:mod:`.memory`) so a later poll can tell its own request's end from another's.
"""

from __future__ import annotations

from ..results import Result, complete, continuing, failed
from .attempt import Attempt
from .faults import power_message
from .node_work import NodeWork
from .states import wait_out_maintenance

REBOOTS = ("rebooting", "soft rebooting")  # power targets that end with the host on


def power(work: NodeWork, at: Attempt, target: str) -> Result:
    node = work.node(at)
    uuid = node["uuid"]
    if node.get("target_power_state"):
        return continuing(work.poll_delay)
    if work.memory.power_target(uuid) == target:  # our request ran: did it work?
        work.memory.power_answered(uuid)
        want = "power on" if target in REBOOTS else target.removeprefix("soft ")
        # Ironic clears last_error when it starts a power action, so one now is ours
        # (a failed reboot leaves the host on, which alone would look done)
        if node.get("power_state") == want and not node.get("last_error"):
            return complete(powered_on=want == "power on")
        verb = {
            "power on": "power on",
            "power off": "power off",
            "rebooting": "reboot",
            "soft rebooting": "soft reboot",
            "soft power off": "soft power off",
        }
        error = str(node.get("last_error") or "")
        return failed(
            power_message(verb[target], error),
            error or f"power state is {node.get('power_state')}",
        )
    if target not in REBOOTS and node.get("power_state") == target.removeprefix("soft "):
        work.memory.power_answered(uuid)  # an older request of ours for another target
        return complete(powered_on=target == "power on")
    wait_out_maintenance(node)  # Ironic would power it; its operator may not want that
    at.power(node, target)
    work.memory.power_asked(uuid, target)
    work.count(node, target)
    return continuing(work.poll_delay)
