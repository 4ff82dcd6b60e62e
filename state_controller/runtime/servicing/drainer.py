"""A serviced host's Node, cordoned and drained before its run and uncordoned after.

The machine asks through ``HostInput.drain`` and ``HostInput.uncordon`` (it never writes
to the cluster itself). Draining is what ``kubectl drain`` does: cordon, then evict every
pod a drain moves (:func:`..updates.drain.evictable`) through the Eviction API, which
refuses while a PodDisruptionBudget allows no disruption; the pods are watched while the
Node is cordoned (:class:`..nodes.cordoned_pods.Drains`), so each pod that goes queues the
host again.
The cordon carries ``hoststate.io/cordoned-for: servicing``: the update adapters do not
read it as an update, and only a cordon made here is undone here.
"""

from __future__ import annotations

import contextlib

from ...cluster.interface import NODES, Cluster, NotFound
from ...updates.adapters.base import draining_message
from ...updates.signals import CORDONED_FOR, NodeSignals
from ..nodes.cordoned_pods import Drains

SERVICING = "servicing"


class ServiceDrainer:
    def __init__(self, cluster: Cluster, drains: Drains) -> None:
        self.cluster = cluster
        self.drains = drains

    def drain(self, node: NodeSignals) -> tuple[bool, str]:
        """Cordon and evict: (whether no pod is left, what the drain waits for)."""
        if node.annotation(CORDONED_FOR) != SERVICING:
            patch = {"metadata": {"annotations": {CORDONED_FOR: SERVICING}},
                     "spec": {"unschedulable": True}}  # fmt: skip
            self.cluster.patch(NODES, None, node.name, patch)
        self.drains.follow(node.name, True)  # its pods watched from now on
        for pod in self.drains.evictable(node.name):
            meta = pod["metadata"]
            self.cluster.evict(str(meta.get("namespace", "")), str(meta["name"]))
        status = self.drains.status(node.name)
        return status.known and status.pods_left == 0, draining_message(status)

    def uncordon(self, node: NodeSignals) -> None:
        """Undo a cordon made here (a person's own cordon is left alone)."""
        if node.annotation(CORDONED_FOR) != SERVICING:
            return
        patch = {"metadata": {"annotations": {CORDONED_FOR: None}}, "spec": {"unschedulable": None}}
        with contextlib.suppress(NotFound):  # the Node went meanwhile
            self.cluster.patch(NODES, None, node.name, patch)
