"""Derive the Host's summary conditions from a book's cursor, facts and observations.

A few conditions, each answering one question, so that ``kubectl wait
--for=condition=Provisioned host/NAME`` and scripts need not read the
provisioning fields. Types and reasons are baremetal-operator's (its
BareMetalHost conditions) wherever the meaning is the same; the HostState keeps
the detailed ones (Registered, Inspected, Stuck, ...).

Pure functions, like :mod:`.conditions`: the book stamps each condition's
lastTransitionTime when its status changes, and restores the stamps from
Host.status after a restart.
"""

from __future__ import annotations

from enum import StrEnum

from ..api.states import TRANSIENT_STATES, ErrorType, OperationalStatus
from ..api.states import ProvisioningState as S
from .conditions import Cond
from .records import Cursor, Facts, Observations, camel


class HostConditionType(StrEnum):
    MANAGEABLE = "Manageable"
    AVAILABLE_FOR_PROVISIONING = "AvailableForProvisioning"
    PROVISIONED = "Provisioned"
    READY = "Ready"
    PROGRESSING = "Progressing"
    BMC_ACCESSIBLE = "BMCAccessible"


HOST_CONDITION_ORDER = tuple(HostConditionType)

REGISTRATION_ERRORS = (ErrorType.REGISTRATION, ErrorType.PROVISIONED_REGISTRATION)
NOT_YET_REGISTERED = (S.NONE, S.REGISTERING)
RUNNING_AN_IMAGE = (S.PROVISIONED, S.EXTERNALLY_PROVISIONED)
# a deploy the backend refused stays in available (a state changes only once the backend
# accepted the work); one that failed on the way, in provisioning
DEPLOYING = (S.AVAILABLE, S.PROVISIONING)


def _manageable(cursor: Cursor, detached: bool) -> Cond:
    """Whether the backend has the host registered and can act on it."""
    if cursor.state == S.UNMANAGED:
        return Cond("False", "NotManaged", "spec.bmc is not set")
    if detached:
        return Cond("False", "Detached", "removed from the provisioning backend")
    if cursor.error_type in REGISTRATION_ERRORS:
        return Cond("False", "RegistrationFailed", cursor.error_message)
    if cursor.error_type == ErrorType.POWER_MANAGEMENT:
        return Cond("False", "PowerFailure", cursor.error_message)
    if cursor.state in NOT_YET_REGISTERED:
        return Cond("False", "Registering")
    return Cond("True", "Manageable")


def _available(cursor: Cursor, manageable: Cond) -> Cond:
    """Whether the host is registered, inspected and prepared, and runs nothing."""
    # baremetal-operator v0.13.2 (internal/controller/metal3.io/baremetalhost_controller.go,
    # computeConditions) says NotAvailable in every state but ready/available: its
    # NotManageableReason and InspectingReason are declared, never set.
    if manageable.status != "True":
        return Cond("False", "NotAvailable", manageable.message or manageable.reason)
    if cursor.state == S.AVAILABLE:
        return Cond("True", "Available")
    return Cond("False", "NotAvailable", cursor.error_message or cursor.state.value)


def _provisioned(cursor: Cursor) -> Cond:
    """Whether the host runs its image (the goal ``kubectl wait`` waits for).

    baremetal-operator v0.13.2 (computeConditions) has two reasons here: Provisioned for
    provisioned and externally provisioned alike, NotProvisioned for every other state,
    deploying included. ProvisioningFailed is hoststate's own, so that a script waiting
    on the condition can tell a failed deploy from one under way (docs/hosts.md).
    """
    if cursor.state in RUNNING_AN_IMAGE:
        return Cond("True", "Provisioned")
    if cursor.error_type == ErrorType.PROVISIONING and cursor.state in DEPLOYING:
        return Cond("False", "ProvisioningFailed", cursor.error_message)
    return Cond("False", "NotProvisioned", cursor.state.value)


def _ready(cursor: Cursor, detached: bool) -> Cond:
    """Whether the host runs its image and nothing is wrong with it."""
    status = cursor.operational_status
    if detached:
        return Cond("False", "Detached", "management is suspended by the detached annotation")
    if status == OperationalStatus.ERROR:
        return Cond("False", "Error", cursor.error_message)
    if status == OperationalStatus.SERVICING:
        return Cond("False", "Servicing", "its firmware, settings or RAID are changing")
    if cursor.state in RUNNING_AN_IMAGE:
        return Cond("True", "Provisioned")  # both states, as baremetal-operator v0.13.2
    return Cond("False", "NotProvisioned", cursor.state.value)


def _progressing(cursor: Cursor, detached: bool) -> Cond:
    """Whether the controller is moving the host from one stable state to another."""
    status = cursor.operational_status
    if detached:
        return Cond("False", "Detached")
    if status == OperationalStatus.ERROR:
        return Cond("False", "Error", f"retrying after: {cursor.error_message}")
    if status == OperationalStatus.SERVICING:
        return Cond("True", "Servicing")
    if cursor.state == S.NONE:
        return Cond("True", "Registering")
    if cursor.state in TRANSIENT_STATES:
        return Cond("True", camel(cursor.state.value))
    return Cond("False", "NotProgressing", cursor.state.value)


def _bmc(cursor: Cursor, facts: Facts, seen: Observations, detached: bool) -> Cond:
    """Whether the BMC answered the controller's last request with the credentials given."""
    if cursor.state == S.UNMANAGED:
        return Cond("False", "NoBMC", "spec.bmc is not set")
    if cursor.error_type in REGISTRATION_ERRORS:
        return Cond("False", "RegistrationFailed", cursor.error_message)
    if cursor.error_type == ErrorType.POWER_MANAGEMENT:
        return Cond("False", "PowerFailure", cursor.error_message)
    if detached:
        return Cond("Unknown", "Detached", "the BMC is not contacted while the host is detached")
    if seen.transient:
        return Cond("Unknown", "BackendUnavailable", seen.transient)
    if facts.credentials is None:
        return Cond("Unknown", "Registering", "the BMC has not been contacted yet")
    return Cond("True", "Accessible")


def derive_host(cursor: Cursor, facts: Facts, seen: Observations) -> dict[str, Cond]:
    """The Host's summary conditions, keyed by type, in :data:`HOST_CONDITION_ORDER`."""
    detached = cursor.operational_status == OperationalStatus.DETACHED
    manageable = _manageable(cursor, detached)
    return {
        HostConditionType.MANAGEABLE: manageable,
        HostConditionType.AVAILABLE_FOR_PROVISIONING: _available(cursor, manageable),
        HostConditionType.PROVISIONED: _provisioned(cursor),
        HostConditionType.READY: _ready(cursor, detached),
        HostConditionType.PROGRESSING: _progressing(cursor, detached),
        HostConditionType.BMC_ACCESSIBLE: _bmc(cursor, facts, seen, detached),
    }
