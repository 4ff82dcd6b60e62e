"""No update agent: an update is what the kubelet's ``status.nodeInfo`` says changed.

Plain Kubernetes has no desired configuration. The node's configuration is
what it runs (kubelet, OS image, kernel, container runtime); an update is
either a cordon that ends (drain, reboot, uncordon), or a change of that
software with no cordon at all (an in-place upgrade). A reboot is a new
``bootID`` after the node was not Ready. A node that is merely not Ready is
not updating: that is a node problem, which the Node's own conditions report.
"""

from __future__ import annotations

from ...api.updates import ORDER, UpdateStep
from ...books.records import UpdateCursor
from ..signals import NodeSignals
from .base import DrainStatus, Reading, on_the_machine


class KubeletAdapter:
    name = "kubelet"

    def claims(self, node: NodeSignals) -> bool:
        return True  # every node has a kubelet; the adapter of last resort

    def read(self, node: NodeSignals, before: UpdateCursor, drain: DrainStatus) -> Reading:
        software = node.info.software()
        updating = before.step in ORDER
        if not node.unschedulable and (node.ready == "True" or not updating):
            return Reading(UpdateStep.UPDATED, "", software)
        reading = on_the_machine(node, before, drain)
        return Reading(reading.step, "", before.current or software, reading.message)
