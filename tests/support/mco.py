"""The Machine Config Operator played by a test, through a MachineConfigNode (v1) as it
writes one for each Node: the spec's targeted configuration, and the status conditions
of an update in their documented order (in progress: Unknown; done: True)."""

from __future__ import annotations

import time
from typing import Any

from state_controller.api.objects import Obj
from state_controller.cluster.interface import MACHINECONFIGNODES, Cluster

# every condition of an update, in its order (machineconfiguration/v1)
CONDITIONS = (
    "UpdatePrepared",
    "UpdateExecuted",
    "Cordoned",
    "Drained",
    "AppliedFilesAndOS",
    "UpdatePostActionComplete",
    "RebootedNode",
    "UpdateComplete",
    "Uncordoned",
    "Resumed",
    "Updated",
    "NodeDegraded",
)


class PlayedMCO:
    def __init__(self, cluster: Cluster, node: str, pool: str, config: str) -> None:
        self.cluster, self.node, self.pool = cluster, node, pool
        self.obj: Obj = cluster.create(
            MACHINECONFIGNODES,
            {
                "apiVersion": MACHINECONFIGNODES.api_version,
                "kind": MACHINECONFIGNODES.kind,
                "metadata": {"name": node},
                "spec": {
                    "node": {"name": node},
                    "pool": {"name": pool},
                    "configVersion": {"desired": config},
                },
            },
        )
        self.conditions: dict[str, tuple[str, str, str]] = {
            c: ("False", "NotYetOccurred", "") for c in CONDITIONS
        }
        self.conditions["Updated"] = ("True", "Updated", "")
        self.current = config
        self.show()

    def target(self, config: str) -> None:
        """The pool targets the node at a new configuration (the spec)."""
        self.obj = self.cluster.patch(
            MACHINECONFIGNODES, None, self.node, {"spec": {"configVersion": {"desired": config}}}
        )

    def show(self, **conditions: tuple[str, str, str]) -> Obj:
        """Write the status with these conditions changed: name -> (status, reason, message)."""
        self.conditions.update(conditions)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        body: dict[str, Any] = {
            "apiVersion": MACHINECONFIGNODES.api_version,
            "kind": MACHINECONFIGNODES.kind,
            "metadata": {
                "name": self.node,
                "resourceVersion": self.obj["metadata"]["resourceVersion"],
            },
            "status": {
                "observedGeneration": max(1, int(self.obj["metadata"].get("generation") or 1)),
                "configVersion": {
                    "current": self.current,
                    "desired": self.obj["spec"]["configVersion"]["desired"],
                },
                "conditions": [
                    {"type": t, "status": s, "reason": r, "message": m, "lastTransitionTime": now}
                    for t, (s, r, m) in self.conditions.items()
                ],
            },
        }
        self.obj = self.cluster.update_status(MACHINECONFIGNODES, body)
        return self.obj
