"""Which Ironic nodes are hoststate's: the mark it leaves on every node it registers.

baremetal-operator and hoststate both name a host's node ``namespace~name``, so in an
Ironic they share (the handover setup) a name proves nothing: a Host named like a
BareMetalHost would find that BareMetalHost's node. Each node hoststate creates carries
``extra.hoststate_host`` (``namespace/name`` of its Host), which only hoststate, the
``adopt`` command and Ironic's operators write; a Host takes a node only when the mark
names it. The mark names the Host by namespace and name, not by uid: a pivot, a restore
from a backup and a Host applied again keep those, and each makes a new uid.

A node that an earlier hoststate registered has no mark. A Host takes such a node only
when its own status (the subresource the controller writes, not the tenant-writable
``hoststate.io/status`` annotation) names that node's UUID, and marks it on the spot.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from ..provisioner import HostView

Node = dict[str, Any]

OWNER = "hoststate_host"  # the key in a node's `extra`: the Host's namespace/name
HANDED_OVER_FROM = "hoststate_handed_over_from"  # set by `adopt`: the BareMetalHost's uid


class Claim(Enum):
    OURS = "ours"  # marked for this Host
    UNMARKED_OURS = "unmarked ours"  # an earlier version's node, recorded by the controller
    FOREIGN = "foreign"  # unmarked, or marked for another Host


def owner(node: Node) -> str:
    """The Host a node is marked for (``namespace/name``), "" when none."""
    extra = node.get("extra")
    return str(extra.get(OWNER) or "") if isinstance(extra, dict) else ""


def claim(node: Node, host: HostView) -> Claim:
    """Whether ``host`` may drive ``node`` (found under its name or recorded ID)."""
    marked = owner(node)
    if marked == host.key:
        return Claim.OURS
    if not marked and host.provider_id and node.get("uuid") == host.provider_id:
        return Claim.UNMARKED_OURS
    return Claim.FOREIGN


def marks(host: HostView) -> dict[str, str]:
    """The ``extra`` of a node registered for ``host``."""
    return {OWNER: host.key}


def mark_patch(host: HostView) -> list[dict[str, Any]]:
    """The JSON patch that marks an existing node as ``host``'s."""
    return [{"op": "add", "path": f"/extra/{OWNER}", "value": host.key}]


def refusal(node: Node, host: HostView) -> str:
    """Why ``host`` does not take ``node``, and what to do instead."""
    name, uuid, marked = node.get("name"), node.get("uuid"), owner(node)
    if marked:
        return (
            f"Ironic node {name} ({uuid}) is marked as Host {marked}'s (extra.{OWNER}), not "
            f"{host.key}'s; it is left alone. Delete the node in Ironic if it is stale"
        )
    return (
        f"Ironic already has a node {name} ({uuid}) that hoststate did not register (no "
        f"extra.{OWNER}): another controller, such as baremetal-operator, may drive that "
        "machine, so this Host does not take it and nothing is sent to it. To hand a "
        "BareMetalHost's machine over, an operator runs `state-controller adopt "
        f"baremetalhosts {host.name} -n {host.namespace}`; delete the node in Ironic if it "
        "is stale, or rename this Host"
    )
