"""Pure projections of a book: Host.status, HostState.status, the phase.

Each projection returns the exact JSON the API stores and changes nothing in
the book. The controller writes a status only when its projection differs
from what the server has.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..api.base import CONDITION_MESSAGE_MAX, MESSAGE_MAX, REASON_MAX
from ..api.hoststate import ConditionType, Phase
from ..api.servicing import ServiceStep
from ..api.states import OperationalStatus
from ..api.states import ProvisioningState as S
from ..api.timefmt import rfc3339, rfc3339_ms
from ..api.updates import ORDER, UpdateStep
from .book import Book
from .chapters import UPDATE_CHAPTER
from .estimates import estimate_status, slow_condition, usual_of_step
from .host_conditions import HOST_CONDITION_ORDER
from .inventory import inventory_of, source
from .records import (
    BareMetalHostFacts,
    Cursor,
    Observations,
    Remediation,
    ServiceCursor,
    Transition,
    UpdateCursor,
    cut,
)
from .stuck import StuckPolicy
from .update_conditions import CONDITION_TYPES as UPDATE_CONDITION_TYPES

RECENT = "recentTransitions"

PHASE_OF_STATE: dict[S, Phase] = {
    S.NONE: Phase.PENDING,
    S.UNMANAGED: Phase.UNMANAGED,
    S.REGISTERING: Phase.REGISTERING,
    S.INSPECTING: Phase.INSPECTING,
    S.PREPARING: Phase.PREPARING,
    S.AVAILABLE: Phase.AVAILABLE,
    S.PROVISIONING: Phase.PROVISIONING,
    S.PROVISIONED: Phase.PROVISIONED,
    S.EXTERNALLY_PROVISIONED: Phase.EXTERNALLY_PROVISIONED,
    S.DEPROVISIONING: Phase.DEPROVISIONING,
    S.POWERING_OFF_BEFORE_DELETE: Phase.DELETING,
    S.DELETING: Phase.DELETING,
}

CONDITION_ORDER = (
    ConditionType.READY,
    ConditionType.PROGRESSING,
    ConditionType.STUCK,
    ConditionType.DEGRADED,
    ConditionType.SPEC_VALID,
    ConditionType.REGISTERED,
    ConditionType.INSPECTED,
    ConditionType.PREPARED,
    ConditionType.PROVISIONED,
    ConditionType.POWERED_ON,
)
NODE_ONLY_ORDER = (
    ConditionType.READY,
    ConditionType.PROGRESSING,
    ConditionType.STUCK,
    ConditionType.DEGRADED,
    *UPDATE_CONDITION_TYPES,
)


def _transitions(records: Iterable[Transition]) -> list[dict[str, Any]]:
    return [record.wire() for record in records]


def phase(book: Book) -> Phase:
    return phase_of(book.cursor, book.seen, book.node_update(), node_only=book.node_only)


def phase_of(
    cursor: Cursor,
    seen: Observations,
    update: UpdateCursor | None = None,
    *,
    node_only: bool = False,
) -> Phase:
    status = cursor.operational_status
    if status == OperationalStatus.DETACHED:
        return Phase.DETACHED
    if status == OperationalStatus.SERVICING:
        return Phase.SERVICING
    degraded = update is not None and update.step == UpdateStep.DEGRADED
    if status == OperationalStatus.ERROR or seen.spec_problem or degraded:
        return Phase.FAILED
    if update is not None and update.step in ORDER:
        return Phase.UPDATING
    if node_only:
        return Phase.UPDATED
    return PHASE_OF_STATE[cursor.state]


def host_status(book: Book, confirmed_seq: int) -> dict[str, Any]:
    """Host.status; ``confirmed_seq`` is the last transition the HostState holds."""
    cur, facts = book.cursor, book.facts
    provisioning: dict[str, Any] = {
        "state": cur.state.value,
        "id": facts.provider_id,
        "enteredAt": rfc3339_ms(cur.entered_at),
    }
    if facts.image is not None:
        provisioning["image"] = facts.image
    if facts.custom_deploy is not None:
        provisioning["customDeploy"] = {"method": facts.custom_deploy}
    if facts.deployed_data is not None:
        provisioning["dataDigest"] = facts.deployed_data
    if facts.serviced:
        provisioning["servicedDigest"] = facts.serviced
    if facts.backend_history:
        provisioning["backendHistoryMark"] = facts.backend_history
    if facts.root_device_hints is not None:
        provisioning["rootDeviceHints"] = facts.root_device_hints
    if facts.boot_mode is not None:
        provisioning["bootMode"] = facts.boot_mode
    out: dict[str, Any] = {
        "operationalStatus": cur.operational_status.value,
        "errorType": cur.error_type.value if cur.error_type else "",
        "errorMessage": cut(cur.error_message, MESSAGE_MAX),
        "errorCount": cur.error_count,
        "poweredOn": facts.powered_on,
        "provisioning": provisioning,
        "observedGeneration": facts.observed_generation,
        "conditions": host_conditions(book),
    }
    if facts.hardware is not None:
        out["hardware"] = facts.hardware
    if facts.credentials is not None:
        out["goodCredentials"] = {"name": facts.credentials[0], "version": facts.credentials[1]}
    if facts.last_updated is not None:
        out["lastUpdated"] = rfc3339(facts.last_updated)
    # Only provisioning records wait here: an update step is re-read from the Node
    # after a restart, and is written to the HostState alone.
    waiting = (t for t in book.recorded_since(confirmed_seq) if t.chapter != UPDATE_CHAPTER)
    out[RECENT] = _transitions(waiting)
    return out


def host_conditions(book: Book) -> list[dict[str, Any]]:
    """Host.status.conditions: the summaries ``kubectl wait`` waits on, in a fixed order."""
    stamped = book.stamped_host_conditions()
    out = []
    for ctype in HOST_CONDITION_ORDER:
        cond, at = stamped[ctype]
        out.append(
            {
                "type": ctype.value,
                "status": cond.status,
                "reason": cond.reason,
                "message": cut(cond.message, MESSAGE_MAX),
                "lastTransitionTime": rfc3339(at),
                "observedGeneration": book.facts.observed_generation,
            }
        )
    return out


def host_status_differs(projected: dict[str, Any], current: dict[str, Any] | None) -> bool:
    """Whether Host.status must be written.

    ``recentTransitions`` alone is never worth a write: every transition changes the
    cursor too, so it is written with the transition it carries, and the next write
    drops what the HostState confirmed meanwhile. A host at rest therefore keeps the
    transitions of its last change there, already in the HostState's history (restore
    skips what the history holds). Writing Host.status once more to drop them cost one
    write per settled change: at the demo's timings, 13 writes for a host's 6
    transitions (2.17 each, Events aside) where 12 suffice.
    """
    if not current:
        return True
    for key, value in projected.items():
        if key != RECENT and current.get(key) != value:
            return True
    return any(key not in projected for key in current)


def _stuck_condition(book: Book, policy: StuckPolicy, now: float) -> dict[str, Any]:
    cur, update = book.cursor, book.node_update()
    clock = policy.clock_of(book)
    deadline, entered = clock.deadline, clock.entered_at
    if deadline is not None and now >= deadline:
        if isinstance(clock.step, ServiceStep):
            where, reason = clock.step.value, "StepTimeout"
            detail = f"; {book.service.message}" if book.service.message else ""
        elif update is not None and clock.step is not None:
            where, reason = clock.step.value, "StepTimeout"
            detail = f"; {update.message}" if update.message else ""
        else:
            where, reason = cur.state.value, "StateTimeout"
            detail = f"; last error: {cur.error_message}" if cur.error_message else ""
        return {
            "type": ConditionType.STUCK.value,
            "status": "True",
            "reason": reason,
            "message": cut(
                f"in {where} since {rfc3339(entered)}, longer than "
                f"{policy.limit_words(clock, book.facts.pool)}"
                f"{usual_of_step(book.seen.expected, where, entered)}{detail}",
                CONDITION_MESSAGE_MAX,
            ),
            "lastTransitionTime": rfc3339(deadline),
        }
    return {
        "type": ConditionType.STUCK.value,
        "status": "False",
        "reason": "WithinTimeout" if deadline is not None else "Steady",
        "message": "",
        "lastTransitionTime": rfc3339(entered),
    }


def _update_progress(update: UpdateCursor) -> dict[str, Any]:
    out: dict[str, Any] = {
        "step": update.step.value,
        "enteredAt": rfc3339_ms(update.entered_at),
        "desiredConfig": cut(update.desired, REASON_MAX),
        "currentConfig": cut(update.current, REASON_MAX),
        "source": update.source,
        "message": cut(update.message, MESSAGE_MAX),
        "visitedSteps": [s.value for s in UpdateStep if s in update.visited],
        "failedStep": update.failed_step.value if update.failed_step else "",
        "bootID": update.boot_id,
    }
    if update.started_at is not None:
        out["startedAt"] = rfc3339_ms(update.started_at)
    return out


def hoststate_status(book: Book, policy: StuckPolicy, now: float) -> dict[str, Any]:
    cur = book.cursor
    generation = book.facts.observed_generation
    derived = _conditions(book)
    stuck = _stuck_condition(book, policy, now)
    conds = []
    order = _condition_order(book)
    if ConditionType.SOURCES_AGREE in derived:  # only for a node with two accounts
        order = (*order, ConditionType.SOURCES_AGREE)
    if ConditionType.HARDWARE_HEALTHY in derived:  # only where something reports health
        order = (*order, ConditionType.HARDWARE_HEALTHY)
    slow = slow_condition(book.seen.expected, now)
    for ctype in order:
        cond = stuck if ctype == ConditionType.STUCK else derived[ctype]
        cond["observedGeneration"] = generation
        cond["message"] = cut(cond["message"], CONDITION_MESSAGE_MAX)
        conds.append(cond)
        if ctype == ConditionType.STUCK and slow is not None:  # Slow beside Stuck, while timed
            slow["observedGeneration"] = generation
            conds.append(slow)
    out: dict[str, Any] = {
        "phase": phase(book).value,
        "source": source(book).value,
        "mode": book.facts.mode,
        "provisioning": {
            "state": cur.state.value,
            "operationalStatus": cur.operational_status.value,
            "enteredAt": rfc3339_ms(cur.entered_at),
            "errorType": cur.error_type.value if cur.error_type else "",
            "errorMessage": cut(cur.error_message, MESSAGE_MAX),
            "errorCount": cur.error_count,
        },
        "stuck": stuck["status"] == "True",
        "conditions": conds,
        "chapters": [c.wire() for c in book.chapters],
        "history": _transitions(book.history),
        "historyDropped": book.history_dropped,
        "lastSeq": book.last_seq,
        "observedGeneration": generation,
    }
    update = book.node_update()
    if update is not None:
        out["update"] = _update_progress(update)
    if book.facts.consumer:
        out["consumer"] = book.facts.consumer
    if inventory := inventory_of(book).wire():
        out["inventory"] = inventory
    if book.facts.bare_metal_host is not None:
        out["bareMetalHost"] = _bare_metal_host(book.facts.bare_metal_host)
    if book.service.tasks or book.service.digest:
        out["servicing"] = _service_progress(book.service)
    if book.facts.firmware is not None:
        out["firmware"] = book.facts.firmware
    if book.facts.remediation is not None:
        out["remediation"] = _remediation(book.facts.remediation)
    if book.seen.expected is not None:
        out["estimate"] = estimate_status(book.seen.expected)
    return out


def _service_progress(service: ServiceCursor) -> dict[str, Any]:
    out: dict[str, Any] = {
        "step": service.step.value,
        "enteredAt": rfc3339_ms(service.entered_at),
        "tasks": [cut(t, REASON_MAX) for t in service.tasks],
        "done": service.done,
        "message": cut(service.message, MESSAGE_MAX),
        "failedStep": service.failed_step.value if service.failed_step else "",
        "digest": service.digest,
    }
    if service.started_at is not None:
        out["startedAt"] = rfc3339_ms(service.started_at)
    return out


def _remediation(shown: Remediation) -> dict[str, Any]:
    out: dict[str, Any] = {
        "trouble": shown.trouble,
        "since": rfc3339_ms(shown.since),
        "attempts": shown.attempts,
        "action": shown.action,
        "message": cut(shown.message, MESSAGE_MAX),
    }
    if shown.last_attempt_at is not None:
        out["lastAttemptAt"] = rfc3339_ms(shown.last_attempt_at)
    return out


def _bare_metal_host(shown: BareMetalHostFacts) -> dict[str, Any]:
    out: dict[str, Any] = {
        "online": shown.online,
        "conditions": [
            {
                "type": c.type,
                "status": c.status,
                "reason": c.reason,
                "message": c.message,
                "lastTransitionTime": rfc3339(c.at),
            }
            for c in shown.conditions
        ],
    }
    if shown.detached is not None:
        out["detached"] = shown.detached
    return out


def _condition_order(book: Book) -> tuple[str, ...]:
    if book.node_only:
        return NODE_ONLY_ORDER
    if book.follows_node():
        return (*CONDITION_ORDER, *UPDATE_CONDITION_TYPES)
    return CONDITION_ORDER


def _conditions(book: Book) -> dict[str, dict[str, Any]]:
    return {
        ctype: {
            "type": ctype,
            "status": cond.status,
            "reason": cond.reason,
            "message": cond.message,
            "lastTransitionTime": rfc3339(at),
        }
        for ctype, (cond, at) in book.stamped_conditions().items()
    }
