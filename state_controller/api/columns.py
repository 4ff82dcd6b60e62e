"""Printer columns: defined once, used by the CRDs and by ``state-controller get``.

``kubectl get hoststates`` and ``state-controller get hoststates`` therefore
always show the same columns with the same values.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    json_path: str
    type: str = "string"  # string | integer | boolean | date
    priority: int = 0  # 1: only with -o wide
    description: str = ""

    def crd(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.priority:
            out["priority"] = self.priority
        if self.description:
            out["description"] = self.description
        return out


def _condition(type_: str) -> str:
    return f'.status.conditions[?(@.type=="{type_}")].status'


AGE = Column("Age", ".metadata.creationTimestamp", "date")

HOSTSTATE_COLUMNS: tuple[Column, ...] = (
    Column("Host", ".spec.host", description="The Host this state belongs to"),
    Column("Node", ".spec.node", description="The Kubernetes Node running on the host"),
    Column("Phase", ".status.phase", description="Where the host is, in one word"),
    Column("State", ".status.provisioning.state", description="Provisioning state"),
    Column("Updated", _condition("Updated"), description="Node runs its desired config"),
    # the MachineConfigNode parents, in the order an update passes them
    Column("UpdatePrepared", _condition("UpdatePrepared"), description="Update prepared"),
    Column("UpdateExecuted", _condition("UpdateExecuted"), description="Drained and applied"),
    Column(
        "UpdatePostActionComplete",
        _condition("UpdatePostActionComplete"),
        description="Rebooted (or reloaded) after the update",
    ),
    Column("UpdateComplete", _condition("UpdateComplete"), description="Update complete"),
    Column("Resumed", _condition("Resumed"), description="Uncordoned, taking work again"),
    Column("Stuck", _condition("Stuck"), description="In its state longer than allowed"),
    Column("Errors", ".status.provisioning.errorCount", "integer", description="Errors in a row"),
    Column("In-State", ".status.provisioning.enteredAt", "date", description="Time in state"),
    AGE,
    Column("Registered", _condition("Registered"), priority=1),
    Column("Inspected", _condition("Inspected"), priority=1),
    Column("Prepared", _condition("Prepared"), priority=1),
    Column("Provisioned", _condition("Provisioned"), priority=1),
    Column("Degraded", _condition("Degraded"), priority=1),
    Column("Step", ".status.update.step", priority=1, description="Node update step"),
    Column(
        "Mode",
        ".status.mode",
        priority=1,
        description="Bootstrap: kept before the cluster exists; Cluster: in this cluster",
    ),
    # the MachineConfigNode children
    Column("UpdateCompatible", _condition("UpdateCompatible"), priority=1),
    Column("AppliedFilesAndOS", _condition("AppliedFilesAndOS"), priority=1),
    Column("Cordoned", _condition("Cordoned"), priority=1),
    Column("Drained", _condition("Drained"), priority=1),
    Column("ReloadedCRIO", _condition("ReloadedCRIO"), priority=1),
    Column("RebootedNode", _condition("RebootedNode"), priority=1),
    Column("Uncordoned", _condition("Uncordoned"), priority=1),
    Column("NodeDegraded", _condition("NodeDegraded"), priority=1),
    Column("Message", '.status.conditions[?(@.type=="Degraded")].message', priority=1),
)

HOST_COLUMNS: tuple[Column, ...] = (
    Column("Status", ".status.operationalStatus", description="Operational status"),
    Column("State", ".status.provisioning.state", description="Provisioning state"),
    Column("Online", ".spec.online", "boolean", description="Whether the host should be on"),
    Column("Powered", ".status.poweredOn", "boolean", description="Whether the host is on"),
    Column("Error", ".status.errorType", description="Type of the last error"),
    AGE,
    Column("BMC", ".spec.bmc.address", priority=1),
    Column("Errors", ".status.errorCount", "integer", priority=1),
    Column("ID", ".status.provisioning.id", priority=1),
)

NODEPOOL_COLUMNS: tuple[Column, ...] = (
    Column("Machines", ".status.machineCount", "integer", description="Nodes in the pool"),
    Column("Updated", ".status.updatedMachineCount", "integer", description="At desired config"),
    Column("Updating", ".status.updatingMachineCount", "integer", description="Update under way"),
    Column("Degraded", ".status.degradedMachineCount", "integer", description="Update degraded"),
    Column(
        "Unavailable", ".status.unavailableMachineCount", "integer", description="Not taking work"
    ),
    AGE,
    Column("Config", ".status.desiredConfig", priority=1, description="Rolling to"),
    Column("Label", ".spec.label", priority=1),
)
