"""The words for a machine's hardware health, as a BMC rolls it up (Redfish
``Status.Health``: OK, Warning, Critical) and as the HostState's ``HardwareHealthy``
condition says it."""

from __future__ import annotations

from enum import StrEnum


class Health(StrEnum):
    OK = "OK"
    WARNING = "Warning"
    CRITICAL = "Critical"  # a part failed: a power-cycle mends nothing
    UNKNOWN = "Unknown"  # the BMC gave no rollup, or could not be asked


# the HardwareHealthy condition's status and reason for each (baremetal-operator's Healthy
# condition has the same reasons: metal3-io/baremetal-operator PR #3013)
CONDITION = {
    Health.OK: ("True", "Healthy"),
    Health.WARNING: ("False", "Warning"),
    Health.CRITICAL: ("False", "CriticalError"),
    Health.UNKNOWN: ("Unknown", "Unknown"),
}
