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
# FQDN; STEP is blank until a Node is followed), and who uses it (an observed
# BareMetalHost's consumerRef, as Kind namespace/name). SOURCE leads -o wide: what the
# HostState follows (a driven Host, an observed BareMetalHost, a lone Node), the one thing
# a name does not tell; the default columns have no room for its 13 characters.

# The conditions -o wide shows, each under its own name, in this order.
WIDE_CONDITIONS: tuple[tuple[str, str], ...] = (
    ("Registered", "Registered with the provisioning backend"),
    ("Inspected", "Hardware inspected"),
    ("Prepared", "Prepared: cleaned, RAID and firmware set"),
    ("Provisioned", "Image written, or externally provisioned"),
    ("Degraded", "Something is wrong; MESSAGE says what"),
    # the MachineConfigNode parents, in the order an update passes them
    ("Updated", "Node runs its desired config"),
    ("UpdatePrepared", "Update prepared"),
    ("UpdateExecuted", "Drained and applied"),
    ("UpdatePostActionComplete", "Rebooted (or reloaded) after the update"),
    ("UpdateComplete", "Update complete"),
    ("Resumed", "Uncordoned, taking work again"),
    # the MachineConfigNode children
    ("AppliedFilesAndOS", "Files and OS written"),
    ("Cordoned", "Cordoned: no new pods"),
    ("Drained", "Drained of the pods an eviction moves"),
    ("RebootedNode", "Rebooted into the new config"),
    ("Uncordoned", "Uncordoned: taking new pods"),
    ("NodeDegraded", "The update agent gave up"),
)

HOSTSTATE_COLUMNS: tuple[Column, ...] = (
    Column(
        "Source",
        ".status.source",
        priority=1,
        description="What it follows: Host (driven), BareMetalHost (observed) or Node (only)",
    ),
    Column("Host", ".spec.host", priority=1, description="The Host this state belongs to"),
    Column("Node", ".spec.node", priority=1, description="The Kubernetes Node running on the host"),
    Column(
        "Consumer",
        ".status.consumer",
        priority=1,
        description="Who uses the host: an observed BareMetalHost's consumerRef",
    ),
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
        "Ends",
        ".status.estimate.endsBy",
        description="When the operation under way is expected to end (UTC), from how long "
        "its steps took on machines of its pool and class",
    ),
    Column(
        "Late",
        ".status.estimate.lateBy",
        priority=1,
        description="Its late bound (UTC): the end if its steps run as late as past ones did",
    ),
    Column(
        "Mode",
        ".status.mode",
        priority=1,
        description="Bootstrap: kept before the cluster exists; Cluster: in this cluster",
    ),
    *(
        Column(type_, _condition(type_), priority=1, description=description)
        for type_, description in WIDE_CONDITIONS
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
        "Consumer",
        ".spec.consumerRef.name",
        priority=1,
        description="Who uses the host (consumerRef)",
    ),
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
    Column(
        "Ends",
        ".status.estimate.endsBy",
        description="When the rollout is expected to finish (UTC), from the machines left "
        "and how long this pool's updates took",
    ),
    Column("Config", ".status.desiredConfig", priority=1, description="Rolling to"),
    Column("Label", ".spec.label", priority=1, description="The Node label naming the pool"),
)

CONTROLLER_COLUMNS: tuple[Column, ...] = (
    Column("Mode", ".status.mode", description="Bootstrap, or Cluster"),
    Column("Replicas", ".status.replicas", "integer", description="Replicas reconciling"),
    Column("Ready", ".status.readyReplicas", "integer", description="Synced, with a live Lease"),
    Column("Hosts", ".status.hosts", "integer", description="Hosts followed"),
    Column("Nodes", ".status.nodes", "integer", description="Nodes followed"),
    Column("Stuck", ".status.stuck", "integer", description="Hosts and nodes stuck"),
    Column("Failed", ".status.failed", "integer", description="Hosts in error"),
    Column("Available", _condition("Available"), description="Every host has a live owner"),
    Column("Degraded", _condition("Degraded"), description="Something is wrong with it"),
    AGE,
    Column("Progressing", _condition("Progressing"), priority=1, description="Hosts moving"),
    Column("Provisioner", ".status.provisioner.backend", priority=1, description="Its backend"),
    Column(
        "Reachable",
        ".status.provisioner.reachable",
        "boolean",
        priority=1,
        description="The provisioner answers every replica",
    ),
    Column("Version", ".status.version", priority=1, description="The controller's version"),
    Column(
        "Message",
        '.status.conditions[?(@.type=="Degraded")].message',
        priority=1,
        description="What is wrong, as the Degraded condition says",
    ),
)
