"""What a simulated machine's BMC reports of its hardware health (its Redfish
``Status.Health`` rollup), for the demo's ``health`` fault.

The simulated BMCs report no rollup (as Ironic's fake-hardware driver reports none),
except a machine given a ``health`` fault: its BMC reports OK until the machine is first
read deployed, then a memory module goes bad, the way a part fails in a machine in
service: Warning (correctable errors) for the first third of the fault's ``seconds``,
Critical (the module failed) for the rest, then OK again (the module replaced); with no
``times`` it stays Critical. The instant it struck is this process's own, as the faults
due at the end of an operation are.
"""

from __future__ import annotations

import threading

from ..api.hardware import Health
from ..books.records import HardwareHealth
from .fault_plan import FaultPlan
from .simulated_machines import Machine

SOURCE = "simulated BMC"
WARNING = "DIMM A2 reports correctable ECC errors"
CRITICAL = "DIMM A2 failed (uncorrectable ECC errors); replace it"
REPLACED = "DIMM A2 replaced"


class SimulatedHealth:
    """When each faulted machine's trouble began, and what its BMC says now."""

    def __init__(self) -> None:
        self._struck: dict[str, float] = {}  # host key -> when its part went bad
        self._lock = threading.Lock()

    def reported(
        self, plan: FaultPlan, key: str, machine: Machine, now: float
    ) -> HardwareHealth | None:
        """The BMC's rollup now (None: this BMC reports none)."""
        fault = plan.health(key)
        if fault is None:
            return None
        with self._lock:
            struck = self._struck.get(key)
            if struck is None and machine.node_active:
                self._struck[key] = struck = now
        if struck is None:
            return HardwareHealth(Health.OK, "", SOURCE)
        into = now - struck
        if into < fault.seconds / 3:
            return HardwareHealth(Health.WARNING, WARNING, SOURCE)
        if into < fault.seconds or fault.times is None:
            return HardwareHealth(Health.CRITICAL, CRITICAL, SOURCE)
        return HardwareHealth(Health.OK, REPLACED, SOURCE)
