"""What a demo is asked to do: the fleet, its faults, its pace, what it shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..api.reach import Reach
from ..api.states import ProvisioningState
from ..observability.tracing import Exporter
from ..provisioning.fault_plan import FAULT_KINDS, FaultKind
from ..provisioning.ironic import IronicSettings
from ..simulation.bmo_fleet import BMO_FAULTS, BmoFault
from ..simulation.nodes import UPDATE_FAULTS, UpdateFault


@dataclass
class DemoOptions:
    hosts: int = 50
    namespace: str = "demo"
    faults: bool = False
    fault_rate: float = 0.3
    fault_kinds: tuple[FaultKind, ...] = FAULT_KINDS
    # some machines' BMCs report failing hardware for a while (fault_plan.health_faults)
    health_faults: bool = True
    update_fault_kinds: tuple[UpdateFault, ...] = UPDATE_FAULTS
    fault_attempts: int = 2  # 0: the fault never clears
    seed: int = 1
    speed: float = 1.0  # 2.0: twice as fast
    workers: int = 4
    metrics_port: int = 0
    exit_when_settled: bool = False
    timeout: float = 300.0
    json: bool = False
    table: bool = True
    store: str | None = None
    trace: Exporter = "none"
    target: ProvisioningState = ProvisioningState.PROVISIONED
    update: bool = True  # register Nodes and roll them to a new configuration
    max_unavailable: int = 5  # nodes of a pool updating at once
    ironic: IronicSettings | None = None  # None: the simulated provisioner
    reach: Reach = field(default_factory=Reach)  # where Hosts may send the backend
    keep: bool = False  # with ironic: leave the hosts (and their nodes) at the end
    screenshot: str | None = None  # save a picture of the screen (SVG) to this file
    # the node pools whose lost reboots are power-cycled (None: every pool; empty: none)
    remediation_pools: frozenset[str] | None = None
    # after the node update, every host gets a new BIOS image, serviced a pool at a time
    firmware_rollout: bool = False
    # observe a fleet a played baremetal-operator drives (BareMetalHosts), drive nothing
    observe: bool = False
    bmo_fault_kinds: tuple[BmoFault, ...] = BMO_FAULTS  # its faults, with --faults
    extra: dict[str, Any] = field(default_factory=dict)
