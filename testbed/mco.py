"""The Machine Config Operator played by a test, through a MachineConfigNode (v1) as it
writes one for each Node: the spec's targeted configuration, and the status conditions
of an update in their documented order (in progress: Unknown; done: True); and through
a MachineConfigPool (v1), whose status it counts from the pool's MachineConfigNodes."""

from __future__ import annotations

import time
from typing import Any

from state_controller.api.objects import Obj
from state_controller.cluster.interface import MACHINECONFIGNODES, MACHINECONFIGPOOLS, Cluster

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


class PlayedPool:
    """A MachineConfigPool whose status the test writes as the operator's pool controller
    does: counted from its nodes' MachineConfigNodes, with its Updated, Updating,
    NodeDegraded and Degraded conditions. ``degraded`` overrides the degraded count, to
    play the operator miscounting it (MCO PR #5110)."""

    def __init__(self, cluster: Cluster, name: str, config: str) -> None:
        self.cluster, self.name, self.config = cluster, name, config
        self.obj: Obj = cluster.create(
            MACHINECONFIGPOOLS,
            {
                "apiVersion": MACHINECONFIGPOOLS.api_version,
                "kind": MACHINECONFIGPOOLS.kind,
                "metadata": {"name": name},
                "spec": {
                    "machineConfigSelector": {
                        "matchLabels": {"machineconfiguration.openshift.io/role": name}
                    },
                    "nodeSelector": {"matchLabels": {f"node-role.kubernetes.io/{name}": ""}},
                    "paused": False,
                    "maxUnavailable": 1,
                    "configuration": {"name": config},
                },
            },
        )

    def recount(self, nodes: list[PlayedMCO], *, degraded: int | None = None) -> Obj:
        """Write the status the operator would count from these nodes."""

        def state(node: PlayedMCO, condition: str) -> str:
            return node.conditions[condition][0]

        failing = [n.node for n in nodes if state(n, "NodeDegraded") == "True"]
        updated = [
            n for n in nodes
            if state(n, "Updated") == "True" and n.current == self.config and n.node not in failing
        ]  # fmt: skip
        unavailable = len(nodes) - len(updated)
        counted = len(failing) if degraded is None else degraded
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        done = len(updated) == len(nodes)
        said = (
            f"{len(failing)} nodes are reporting degraded status on sync: "
            + ", ".join(f"Node {n} is reporting" for n in failing)
            if failing
            else ""
        )
        conditions = {
            "Updated": ("True" if done else "False", ""),
            "Updating": ("False" if done or failing else "True", ""),
            "NodeDegraded": ("True" if failing else "False", said),
            "RenderDegraded": ("False", ""),
            "Degraded": ("True" if failing else "False", said),
        }
        body: dict[str, Any] = {
            "apiVersion": MACHINECONFIGPOOLS.api_version,
            "kind": MACHINECONFIGPOOLS.kind,
            "metadata": {
                "name": self.name,
                "resourceVersion": self.obj["metadata"]["resourceVersion"],
            },
            "status": {
                "observedGeneration": int(self.obj["metadata"].get("generation") or 1),
                "configuration": {
                    "name": self.config,
                    "source": [{"kind": "MachineConfig", "name": f"00-{self.name}"}],
                },
                "machineCount": len(nodes),
                "updatedMachineCount": len(updated),
                "readyMachineCount": len(updated),
                "unavailableMachineCount": unavailable,
                "degradedMachineCount": counted,
                "conditions": [
                    {"type": t, "status": s, "reason": "", "message": m, "lastTransitionTime": now}
                    for t, (s, m) in conditions.items()
                ],
            },
        }
        self.obj = self.cluster.update_status(MACHINECONFIGPOOLS, body)
        return self.obj
