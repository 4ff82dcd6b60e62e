"""The Ironic node baremetal-operator created, read before its host is taken over.

The controller will find the node by the UUID the restored status carries, and only
if it bears the name both baremetal-operator and hoststate give it
(``namespace~name``). It must be at rest: nothing to finish, no lock held, not in
maintenance; else the controller would take over work half done.
"""

from __future__ import annotations

from ..provisioning.ironic.nodes import Node
from ..provisioning.ironic.states import BUSY_STATES

# The Ironic states a node of each BareMetalHost state is left in by baremetal-operator:
# an available host's node is kept manageable until it is deployed (or provided already).
EXPECTED: dict[str, frozenset[str]] = {
    "available": frozenset({"manageable", "available"}),
    "ready": frozenset({"manageable", "available"}),
    "provisioned": frozenset({"active"}),
    "externally provisioned": frozenset({"active"}),
}


def node_refusal(node: Node | None, uuid: str, expected_name: str, bmh_state: str) -> str:
    """Why this node cannot be handed over now, with what to do; "" when it can."""
    if node is None:
        return (
            f"Ironic has no node {uuid} (status.provisioning.ID): is --ironic-url the Ironic "
            "baremetal-operator uses?"
        )
    name, state = str(node.get("name") or ""), str(node.get("provision_state") or "")
    if name != expected_name:
        return (
            f"Ironic node {uuid} is named {name!r}, not {expected_name!r} as baremetal-operator "
            "names its nodes; it is not this host's"
        )
    target = node.get("target_provision_state")
    if state in BUSY_STATES or target:
        going = f" to {target!r}" if target else ""
        return f"Ironic is working on node {uuid} ({state!r}{going}); run again once it is done"
    if node.get("reservation"):
        return f"a conductor holds node {uuid} ({node['reservation']}); run again once it lets go"
    if node.get("maintenance"):
        why = node.get("maintenance_reason") or "no reason given"
        return f"Ironic node {uuid} is in maintenance ({why}); end it, then run again"
    if state not in EXPECTED.get(bmh_state, frozenset()):
        return (
            f"Ironic node {uuid} is {state!r}, not what a BareMetalHost {bmh_state!r} "
            "leaves it in; let baremetal-operator settle it, then run again"
        )
    return ""
