"""The vocabulary of host provisioning: states, operational statuses, error types.

The string values are part of the API (they appear in ``Host.status`` and in
metric labels) and follow metal3's baremetal-operator, so that people who know
that operator read them without a dictionary.
"""

from enum import StrEnum


class ProvisioningState(StrEnum):
    NONE = ""
    UNMANAGED = "unmanaged"
    REGISTERING = "registering"
    INSPECTING = "inspecting"
    PREPARING = "preparing"
    AVAILABLE = "available"
    PROVISIONING = "provisioning"
    PROVISIONED = "provisioned"
    EXTERNALLY_PROVISIONED = "externally provisioned"
    DEPROVISIONING = "deprovisioning"
    POWERING_OFF_BEFORE_DELETE = "powering off before delete"
    DELETING = "deleting"


class OperationalStatus(StrEnum):
    OK = "OK"
    DISCOVERED = "discovered"
    ERROR = "error"
    DELAYED = "delayed"
    DETACHED = "detached"
    SERVICING = "servicing"  # metal3: changing firmware or RAID of a provisioned host


class ErrorType(StrEnum):
    REGISTRATION = "registration error"
    INSPECTION = "inspection error"
    PREPARATION = "preparation error"
    PROVISIONING = "provisioning error"
    POWER_MANAGEMENT = "power management error"
    DETACH = "detach error"
    PROVISIONED_REGISTRATION = "provisioned registration error"
    SERVICING = "servicing error"  # metal3: servicing a provisioned host failed


# States in which the host is on its way somewhere; time spent in them is
# watched for stuck detection and they make a host "Progressing".
TRANSIENT_STATES = frozenset(
    {
        ProvisioningState.REGISTERING,
        ProvisioningState.INSPECTING,
        ProvisioningState.PREPARING,
        ProvisioningState.PROVISIONING,
        ProvisioningState.DEPROVISIONING,
        ProvisioningState.POWERING_OFF_BEFORE_DELETE,
        ProvisioningState.DELETING,
    }
)
