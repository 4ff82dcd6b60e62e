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

# The default columns (priority 0) answer "where is each machine, is anything wrong, since
# when" (IN-STEP for a node that updates, IN-STATE for its host) in 120 characters for a
# 20-character name, whatever the values: each shows a word from a known set (phases,
# steps, states, error types), a count or an age, and tests/unit/test_crds.py adds up the
# widest of each. The rest is for -o wide: the MachineConfigNode conditions (STEP says
# where an update is), a HostState's provisioning state (PHASE says it in one word; two
# long words would not fit beside STEP) and its Node (a name of any length, often an
# FQDN; STEP is blank until a Node is followed).

HOSTSTATE_COLUMNS: tuple[Column, ...] = (
    Column("Host", ".spec.host", priority=1, description="The Host this state belongs to"),
    Column("Node", ".spec.node", priority=1, description="The Kubernetes Node running on the host"),
    Column("Phase", ".status.phase", description="Where the host is, in one word"),
    Column("State", ".status.provisioning.state", priority=1, description="Provisioning state"),
    Column("Step", ".status.update.step", description="Node update step"),
    Column(
        "In-Step",
        ".status.update.enteredAt",
        "date",
        description="Time in the update step (stuck is judged on this clock while updating)",
    ),
    Column("Stuck", _condition("Stuck"), description="In its state longer than allowed"),
    Column("Errors", ".status.provisioning.errorCount", "integer", description="Errors in a row"),
    Column("In-State", ".status.provisioning.enteredAt", "date", description="Time in state"),
    AGE,
    Column(
        "Mode",
        ".status.mode",
        priority=1,
        description="Bootstrap: kept before the cluster exists; Cluster: in this cluster",
    ),
    Column(
        "Registered",
        _condition("Registered"),
        priority=1,
        description="Registered with the provisioning backend",
    ),
    Column("Inspected", _condition("Inspected"), priority=1, description="Hardware inspected"),
    Column(
        "Prepared",
        _condition("Prepared"),
        priority=1,
        description="Prepared: cleaned, RAID and firmware set",
    ),
    Column(
        "Provisioned",
        _condition("Provisioned"),
        priority=1,
        description="Image written, or externally provisioned",
    ),
    Column(
        "Degraded",
        _condition("Degraded"),
        priority=1,
        description="Something is wrong; MESSAGE says what",
    ),
    # the MachineConfigNode parents, in the order an update passes them
    Column(
        "Updated", _condition("Updated"), priority=1, description="Node runs its desired config"
    ),
    Column(
        "UpdatePrepared",
        _condition("UpdatePrepared"),
        priority=1,
        description="Update prepared",
    ),
    Column(
        "UpdateExecuted",
        _condition("UpdateExecuted"),
        priority=1,
        description="Drained and applied",
    ),
    Column(
        "UpdatePostActionComplete",
        _condition("UpdatePostActionComplete"),
        priority=1,
        description="Rebooted (or reloaded) after the update",
    ),
    Column(
        "UpdateComplete", _condition("UpdateComplete"), priority=1, description="Update complete"
    ),
    Column(
        "Resumed", _condition("Resumed"), priority=1, description="Uncordoned, taking work again"
    ),
    # the MachineConfigNode children
    Column(
        "UpdateCompatible",
        _condition("UpdateCompatible"),
        priority=1,
        description="Checked that the update applies",
    ),
    Column(
        "AppliedFilesAndOS",
        _condition("AppliedFilesAndOS"),
        priority=1,
        description="Files and OS written",
    ),
    Column("Cordoned", _condition("Cordoned"), priority=1, description="Cordoned: no new pods"),
    Column(
        "Drained",
        _condition("Drained"),
        priority=1,
        description="Drained of the pods an eviction moves",
    ),
    Column("ReloadedCRIO", _condition("ReloadedCRIO"), priority=1, description="CRI-O reloaded"),
    Column(
        "RebootedNode",
        _condition("RebootedNode"),
        priority=1,
        description="Rebooted into the new config",
    ),
    Column(
        "Uncordoned",
        _condition("Uncordoned"),
        priority=1,
        description="Uncordoned: taking new pods",
    ),
    Column(
        "NodeDegraded",
        _condition("NodeDegraded"),
        priority=1,
        description="The update agent gave up",
    ),
    Column(
        "Message",
        '.status.conditions[?(@.type=="Degraded")].message',
        priority=1,
        description="What is wrong, as the Degraded condition says",
    ),
)

HOST_COLUMNS: tuple[Column, ...] = (
    Column("Status", ".status.operationalStatus", priority=1, description="Operational status"),
    Column("State", ".status.provisioning.state", description="Provisioning state"),
    Column("Online", ".spec.online", "boolean", description="Whether the host should be on"),
    Column("Powered", ".status.poweredOn", "boolean", description="Whether the host is on"),
    Column("Error", ".status.errorType", description="Type of the last error"),
    Column("Errors", ".status.errorCount", "integer", description="Errors in a row"),
    AGE,
    Column("BMC", ".spec.bmc.address", priority=1, description="The management controller"),
    Column(
        "ID", ".status.provisioning.id", priority=1, description="ID in the provisioning backend"
    ),
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
    Column("Label", ".spec.label", priority=1, description="The Node label naming the pool"),
)
