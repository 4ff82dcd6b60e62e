"""Derive HostState conditions from a book's cursor, facts and observations.

Pure functions. The book stamps each condition's lastTransitionTime when its
status changes (inside ``Book.transition``/``Book.note``); ``Stuck`` depends on
time alone and is derived at projection time instead.
"""

from __future__ import annotations

from typing import NamedTuple

from ..api.hoststate import ConditionType as C
from ..api.states import TRANSIENT_STATES, ErrorType, OperationalStatus
from ..api.states import ProvisioningState as S
from ..api.updates import UpdateStep, in_progress
from .records import Cursor, Facts, Observations, ServiceCursor, UpdateCursor, camel

RANK: dict[S, int] = {
    S.NONE: 0,
    S.UNMANAGED: 0,
    S.REGISTERING: 1,
    S.INSPECTING: 2,
    S.PREPARING: 3,
    S.AVAILABLE: 4,
    S.PROVISIONING: 5,
    S.PROVISIONED: 6,
    S.EXTERNALLY_PROVISIONED: 6,
    S.DEPROVISIONING: 7,
    S.POWERING_OFF_BEFORE_DELETE: 8,
    S.DELETING: 9,
}


DATA_CHANGED = (
    "user, network or meta data changed since this host was deployed; it takes effect "
    "on the next deploy"
)


class Cond(NamedTuple):
    status: str  # "True" | "False" | "Unknown"
    reason: str
    message: str = ""


def _stage(cursor: Cursor, stage: S, done: str, doing: str, failed: ErrorType) -> Cond:
    rank, target = RANK[cursor.state], RANK[stage]
    if cursor.state == stage:
        if cursor.error_type == failed:
            return Cond(
                "False", camel(failed.value).replace("Error", "Failed"), cursor.error_message
            )
        return Cond("False", doing)
    if rank > target:
        return Cond("True", done)
    return Cond("False", "Pending")


def derive(
    cursor: Cursor,
    facts: Facts,
    seen: Observations,
    update: UpdateCursor | None = None,
    service: ServiceCursor | None = None,
) -> dict[str, Cond]:
    """Every provisioning condition and summary except Stuck, keyed by type.

    ``update`` is the node's update cursor, for a host that runs a Node: an
    update in progress makes the host not Ready and Progressing, a degraded
    one makes it Degraded.
    """
    detached = cursor.operational_status == OperationalStatus.DETACHED
    erroring = cursor.operational_status == OperationalStatus.ERROR
    out: dict[str, Cond] = {}

    if cursor.state == S.UNMANAGED:
        out[C.REGISTERED] = Cond("False", "NoBMC", "spec.bmc is not set; the host is unmanaged")
    elif detached:
        out[C.REGISTERED] = Cond("False", "Detached", "removed from the provisioning backend")
    elif cursor.error_type == ErrorType.PROVISIONED_REGISTRATION:
        out[C.REGISTERED] = Cond("False", "RegistrationFailed", cursor.error_message)
    else:
        out[C.REGISTERED] = _stage(
            cursor, S.REGISTERING, "Registered", "Registering", ErrorType.REGISTRATION
        )

    external = cursor.state == S.EXTERNALLY_PROVISIONED
    inspected = _stage(cursor, S.INSPECTING, "Inspected", "Inspecting", ErrorType.INSPECTION)
    if inspected.status == "True" and facts.hardware_json is None:
        inspected = Cond("False", "Skipped", "inspection was disabled or not needed")
    out[C.INSPECTED] = inspected
    prepared = _stage(cursor, S.PREPARING, "Prepared", "Preparing", ErrorType.PREPARATION)
    out[C.PREPARED] = Cond("False", "Skipped") if external else prepared

    if cursor.state == S.PROVISIONED:
        out[C.PROVISIONED] = Cond(
            "True", "Provisioned", DATA_CHANGED if seen.data_change_told else ""
        )
    elif external:
        out[C.PROVISIONED] = Cond("True", "ExternallyProvisioned")
    elif cursor.error_type == ErrorType.PROVISIONING and cursor.state in (
        S.AVAILABLE,  # a deploy refused before it started (its data is missing)
        S.PROVISIONING,
    ):
        out[C.PROVISIONED] = Cond("False", "ProvisioningFailed", cursor.error_message)
    elif cursor.state == S.PROVISIONING:
        out[C.PROVISIONED] = Cond("False", "Provisioning")
    elif RANK[cursor.state] > RANK[S.PROVISIONED]:
        out[C.PROVISIONED] = Cond("False", camel(cursor.state.value))
    else:
        out[C.PROVISIONED] = Cond("False", "NotProvisioned")

    if cursor.error_type == ErrorType.POWER_MANAGEMENT:
        out[C.POWERED_ON] = Cond(
            "True" if facts.powered_on else "False", "PowerManagementFailed", cursor.error_message
        )
    else:
        out[C.POWERED_ON] = Cond(
            *(("True", "PoweredOn") if facts.powered_on else ("False", "PoweredOff"))
        )

    if seen.spec_problem:
        out[C.SPEC_VALID] = Cond("False", seen.spec_problem_reason or "Invalid", seen.spec_problem)
    else:
        out[C.SPEC_VALID] = Cond("True", "Valid")

    if erroring and cursor.error_type is not None:
        out[C.DEGRADED] = Cond("True", camel(cursor.error_type.value), cursor.error_message)
    elif seen.spec_problem:
        out[C.DEGRADED] = Cond("True", "InvalidSpec", seen.spec_problem)
    elif seen.transient:
        out[C.DEGRADED] = Cond("True", "BackendUnavailable", seen.transient)
    elif seen.annotation_problems:
        message = "; ".join(seen.annotation_problems.values())
        out[C.DEGRADED] = Cond("True", "InvalidAnnotation", message)
    elif update is not None and update.step == UpdateStep.DEGRADED:
        out[C.DEGRADED] = Cond("True", "UpdateDegraded", update.message)
    else:
        out[C.DEGRADED] = Cond("False", "AsExpected")

    at_goal = cursor.state == seen.goal
    if detached:
        out[C.READY] = Cond(
            "False", "Detached", "management is suspended by the detached annotation"
        )
        out[C.PROGRESSING] = Cond("False", "Detached")
    elif erroring and cursor.error_type == ErrorType.SERVICING:
        out[C.READY] = Cond("False", "ServicingFailed", cursor.error_message)
        out[C.PROGRESSING] = Cond(
            "False", "ServicingFailed", "change the servicing spec to try again, or remove it"
        )
    elif erroring:
        out[C.READY] = Cond("False", "Error", cursor.error_message)
        out[C.PROGRESSING] = Cond("False", "BackingOff", "retrying after an error")
    elif cursor.operational_status == OperationalStatus.SERVICING:
        doing = f"{service.step.value}: {service.message}" if service is not None else ""
        out[C.READY] = Cond("False", "Servicing", doing or "its firmware or RAID are changing")
        out[C.PROGRESSING] = Cond("True", "Servicing", doing)
    elif update is not None and in_progress(update.step):
        out[C.READY], out[C.PROGRESSING] = _updating(update)
    elif seen.paused_by:
        out[C.READY] = Cond("True" if at_goal else "False", "Paused", seen.paused_by)
        out[C.PROGRESSING] = Cond("False", "Paused", seen.paused_by)
    elif at_goal and not seen.spec_problem:
        out[C.READY] = Cond("True", camel(cursor.state.value) or "Ready")
        out[C.PROGRESSING] = Cond("False", "Settled")
    else:
        waiting = camel(cursor.state.value) or "Pending"
        out[C.READY] = Cond("False", waiting, f"on the way to {seen.goal.value or 'deletion'}")
        moving = cursor.state in TRANSIENT_STATES or not at_goal
        out[C.PROGRESSING] = Cond("True" if moving else "False", waiting)
    return out


def _updating(update: UpdateCursor) -> tuple[Cond, Cond]:
    """Ready and Progressing of a node in an update (degraded or not)."""
    if update.step == UpdateStep.DEGRADED:
        return Cond("False", "UpdateDegraded", update.message), Cond("False", "UpdateDegraded")
    doing = camel(update.step.value)
    return Cond("False", "Updating", f"{update.step.value}: {update.message}"), Cond("True", doing)


def derive_node_only(update: UpdateCursor) -> dict[str, Cond]:
    """The summaries of a Node with no Host: only its updates can be told."""
    out: dict[str, Cond] = {C.SPEC_VALID: Cond("True", "Valid")}
    if in_progress(update.step):
        out[C.READY], out[C.PROGRESSING] = _updating(update)
    else:
        out[C.READY] = Cond("True", "AtDesiredConfig", update.current)
        out[C.PROGRESSING] = Cond("False", "Settled")
    if update.step == UpdateStep.DEGRADED:
        out[C.DEGRADED] = Cond("True", "UpdateDegraded", update.message)
    else:
        out[C.DEGRADED] = Cond("False", "AsExpected")
    return out


Stamps = dict[str, tuple[str, float]]


def stamp(stamps: Stamps, derived: dict[str, Cond], at: float) -> None:
    """Stamp with ``at`` each condition whose status is not the one stamped."""
    for ctype, cond in derived.items():
        stamp = stamps.get(ctype)
        if stamp is None or stamp[0] != cond.status:
            stamps[ctype] = (cond.status, at)


def stamped(
    current: dict[str, Cond], stamps: Stamps, at: float | None, since: float
) -> dict[str, tuple[Cond, float]]:
    """Each condition with its stamp; one whose status changed at a pending instant ``at``
    (not yet stamped) with that instant, one never stamped with ``since``."""
    out: dict[str, tuple[Cond, float]] = {}
    for ctype, cond in current.items():
        stamp = stamps.get(ctype)
        if stamp is not None and (at is None or stamp[0] == cond.status):
            out[ctype] = (cond, stamp[1])
        else:
            out[ctype] = (cond, at if at is not None else since)
    return out
