"""The Machine Config Operator played by a test, through a MachineConfigNode (v1) as it
writes one for each Node, and through a MachineConfigPool (v1), whose status it counts
from the pool's MachineConfigNodes.

Played as openshift/machine-config-operator writes them at commit 1c5e40f25 (2025-11-13,
openshift/api v0.0.0-20251104141128): ``pkg/upgrademonitor/upgrade_monitor.go``
(``generateAndApplyMachineConfigNodes``) writes a parent condition and at most one child
in one status write; the first write creates every other condition ``False`` with reason
``NotYetOccurred``; any parent but ``Updated`` written while ``Updated=True`` turns
``Updated`` ``False``; the write of ``Updated`` resets every other condition that is not
``False`` to ``False``, its message prefixed "Action during update to <desired>: ". The
writes of an update (:data:`WRITES`) are the daemon's (``pkg/daemon/update.go``,
``daemon.go``, ``drain.go``) and the drain controller's
(``pkg/controller/drain/drain_controller.go``), with their reasons and messages, in the
order the operator's e2e test expects them (``test/extended/machineconfignode.go``,
``ValidateTransitionThroughConditions``)."""

from __future__ import annotations

import time
from typing import Any

from state_controller.api.objects import Obj
from state_controller.cluster.interface import MACHINECONFIGNODES, MACHINECONFIGPOOLS, Cluster

# the conditions the first write creates (upgrade_monitor.go, allConditionTypes)
CONDITIONS = (
    "UpdatePrepared",
    "UpdateExecuted",
    "UpdatePostActionComplete",
    "UpdateComplete",
    "Resumed",
    "Drained",
    "AppliedFilesAndOS",
    "ImagePulledFromRegistry",
    "Cordoned",
    "RebootedNode",
    "Updated",
    "Uncordoned",
    "NodeDegraded",
)

Cond = tuple[str, str, str, str]  # type, status, reason, message
Write = tuple[Cond, Cond | None]  # a parent, and the child written with it

# Each write of an update, by name, as the operator makes it ({node}, {config}: the
# node's name and the configuration it goes to).
WRITES: dict[str, Write] = {
    # daemon.go: the daemon sees a new desired configuration
    "needs update": (("Updated", "False", "Updated", "Node {node} needs an update"), None),
    # update.go: the update passed its compatibility check
    "prepared": (("UpdatePrepared", "True", "UpdatePrepared",
                  "Update Compatible. Post Cfg Actions: [] Drain Required: true"), None),
    "prepared, rebootless": (("UpdatePrepared", "True", "UpdatePrepared",
                              "Update Compatible. Post Cfg Actions: [None] Drain Required: false"),
                             None),
    # drain_controller.go: cordoned, draining, drained
    "cordoned": (("UpdateExecuted", "Unknown", "Cordoned",
                  "Cordoned Node as part of update executed phase"),
                 ("Cordoned", "True", "UpdateExecutedCordoned",
                  "Cordoned node. The node is reporting Unschedulable = true")),
    "draining": (("UpdateExecuted", "Unknown", "Drained",
                  "Draining Node as part of update executed phase"),
                 ("Drained", "Unknown", "UpdateExecutedDrained",
                  "Draining node. The drain will not be complete until desired drainer "
                  "drain-{config} matches current drainer uncordon-{config}")),
    "drained": (("UpdateExecuted", "Unknown", "Drained",
                 "Drained Node as part of update executed phase"),
                ("Drained", "True", "UpdateExecutedDrained",
                 "Drained node. The drain is complete as the desired drainer matches current "
                 "drainer: drain-{config}")),
    # update.go: no drain for this update
    "no drain": (("UpdateExecuted", "Unknown", "Drained",
                  "Node Drain Not required for this update."),
                 ("Drained", "False", "UpdateExecutedDrained",
                  "Node Drain Not required for this update.")),
    # update.go: files and OS written
    "applying": (("UpdateExecuted", "Unknown", "AppliedFilesAndOS",
                  "Updating the Files and OS on disk as a part of the in progress phase"),
                 ("AppliedFilesAndOS", "Unknown", "UpdateExecutedAppliedFilesAndOS",
                  "Applying files and new OS config to node. OS will need an update. SSH Keys "
                  "will not need an update")),
    "applied": (("UpdateExecuted", "True", "AppliedFilesAndOS",
                 "Updated the Files and OS on disk as a part of the in progress phase"),
                ("AppliedFilesAndOS", "True", "UpdateExecutedAppliedFilesAndOS",
                 "Applied files and new OS config to node. OS did need an update. SSH Keys did "
                 "not need an update")),
    # update.go (image mode): the OS image pulled, written as a parent of its own
    "pulling image": (("ImagePulledFromRegistry", "Unknown", "ImagePulledFromRegistry",
                       "Pulling OS image {config} from registry"), None),
    "image pulled": (("ImagePulledFromRegistry", "True", "ImagePulledFromRegistry",
                      "Successfully pulled OS image {config} from registry"), None),
    # update.go: the post-config action, a reboot or none
    "rebooting": (("RebootedNode", "Unknown", "RebootedNode", "Upgrade requires a reboot."), None),
    "no reboot": (("UpdatePostActionComplete", "True", "None", "Changes do not require a reboot"),
                  None),
    # daemon.go: back from the reboot, at the new configuration
    "rebooted": (("RebootedNode", "True", "RebootedNode", "Node has rebooted"), None),
    "resumed": (("Resumed", "True", "Resumed",
                 "In desired config {config}. Resumed normal operations. Applying proper "
                 "annotations."), None),
    # drain_controller.go: uncordoned, or failing to
    "uncordoned": (("UpdateComplete", "True", "Uncordoned",
                    "Uncordoned Node as part of completing upgrade phase"),
                   ("Uncordoned", "True", "UpdateCompleteUncordoned",
                    "UnCordoned node. The node is reporting Unschedulable = false")),
    "uncordon failing": (("UpdateComplete", "Unknown", "Uncordoned",
                          "Failed to Uncordon Node as part of completing upgrade phase"),
                         ("Uncordoned", "Unknown", "UpdateCompleteUncordoned",
                          "Error: Failed to UnCordon node. Error is: the server timed out The "
                          "node is reporting Unschedulable = true")),
    # daemon.go: done
    "updated": (("Updated", "True", "Updated", "Node {node} Updated"), None),
}  # fmt: skip

# an update that reboots, and one that does not, in the e2e test's order
REBOOTING_UPDATE = (
    "needs update", "prepared", "cordoned", "draining", "drained", "applying", "applied",
    "rebooting", "rebooted", "resumed", "uncordoned", "updated",
)  # fmt: skip
REBOOTLESS_UPDATE = (
    "needs update", "prepared, rebootless", "no drain", "applying", "applied", "no reboot",
    "resumed", "uncordoned", "updated",
)  # fmt: skip


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
        self.conditions: dict[str, tuple[str, str, str]] = {}
        self.current = config
        self.write(("Updated", "True", "Updated", f"Node {node} Updated"))

    @property
    def desired(self) -> str:
        return str(self.obj["spec"]["configVersion"]["desired"])

    def target(self, config: str) -> None:
        """The pool targets the node at a new configuration (the spec)."""
        self.obj = self.cluster.patch(
            MACHINECONFIGNODES, None, self.node, {"spec": {"configVersion": {"desired": config}}}
        )

    def step(self, name: str) -> Obj:
        """One write of :data:`WRITES`, for this node and its desired configuration."""
        parent, child = WRITES[name]

        def filled(c: Cond) -> Cond:
            type_, status, reason, message = c
            return type_, status, reason, message.format(node=self.node, config=self.desired)

        return self.write(filled(parent), filled(child) if child else None)

    def write(self, parent: Cond, child: Cond | None = None) -> Obj:
        """One status write of a parent and its child, as upgrade_monitor.go makes it."""
        if not self.conditions:  # the first write: every other condition not yet occurred
            self.conditions = {
                c: ("False", "NotYetOccurred", f"This node has not yet entered the {c} phase")
                for c in CONDITIONS
            }
        elif self.conditions["Updated"][0] == "True" and parent[0] != "Updated":
            self.conditions["Updated"] = (
                "False", "Updated", "This node is not updated, sensed disruption via a manual "
                "update.",
            )  # fmt: skip
        if parent[0] == "Updated":
            for type_, (status, reason, message) in self.conditions.items():
                if status != "False" and type_ != parent[0]:
                    said = f"Action during update to {self.desired}: {message}"
                    self.conditions[type_] = ("False", reason, said)
        for type_, status, reason, message in (parent, *((child,) if child else ())):
            self.conditions[type_] = (status, reason, message)
        return self._write_status()

    def _write_status(self) -> Obj:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        body: dict[str, Any] = {
            "apiVersion": MACHINECONFIGNODES.api_version,
            "kind": MACHINECONFIGNODES.kind,
            "metadata": {
                "name": self.node,
                "resourceVersion": self.obj["metadata"]["resourceVersion"],
            },
            "status": {
                # the operator writes the object's generation plus one
                "observedGeneration": int(self.obj["metadata"].get("generation") or 1) + 1,
                "configVersion": {"current": self.current, "desired": self.desired},
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
