"""Whether the two things the Machine Config Operator writes about one node agree.

The operator keeps its own account of a node's update twice: in annotations on the Node
(``state``, ``currentConfig``, ``desiredConfig``) and in the node's MachineConfigNode
(``Updated``, ``NodeDegraded``, its configurations). They have disagreed in shipped
releases (an annotation Degraded while the MachineConfigNode was not; a MachineConfigNode
not updated on one of the operator's paths), and then one of the two is wrong about the
node. :func:`disagreement` says how they differ, naming both values, or ``""``.
"""

from __future__ import annotations

from .adapters.mco import DONE, FAILED
from .signals import MCO_CURRENT_CONFIG, MCO_DESIRED_CONFIG, MCO_STATE, NodeSignals


def disagreement(node: NodeSignals) -> str | None:
    """How the node's MCO annotations and its MachineConfigNode differ: "" when they
    agree, None when the node has not both (the HostState's SourcesAgree condition)."""
    mcn, state = node.mcn, node.annotation(MCO_STATE)
    if mcn is None or not mcn.reported or not state:
        return None
    current, desired = node.annotation(MCO_CURRENT_CONFIG), node.annotation(MCO_DESIRED_CONFIG)
    updated, _, _ = mcn.condition("Updated")
    degraded, _, degraded_message = mcn.condition("NodeDegraded")
    annotations = f"the Node's annotations say state {state}"
    if state in FAILED and degraded != "True":
        return f"{annotations}; its MachineConfigNode says NodeDegraded={degraded or 'absent'}"
    if degraded == "True" and state not in FAILED:
        said = f" ({degraded_message})" if degraded_message else ""
        return f"its MachineConfigNode says NodeDegraded=True{said}; {annotations}"
    if state == DONE and current == desired and (updated != "True" or mcn.current != current):
        return (
            f"{annotations} at {current}; its MachineConfigNode says Updated="
            f"{updated or 'absent'} with current configuration {mcn.current or 'none'}"
        )
    if desired and mcn.desired and desired != mcn.desired:
        return (
            f"the Node's annotations target {desired}; its MachineConfigNode targets {mcn.desired}"
        )
    return ""
