"""Pure projections of a book: Host.status, HostState.status, the phase.

Each projection returns the exact JSON the API stores and changes nothing in
the book. The controller writes a status only when its projection differs
from what the server has.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..api.base import CONDITION_MESSAGE_MAX, MESSAGE_MAX
from ..api.hoststate import ConditionType, Phase
from ..api.states import OperationalStatus
from ..api.states import ProvisioningState as S
from ..api.timefmt import rfc3339, rfc3339_ms
from .book import Book
from .records import Cursor, Observations, Transition
from .stuck import StuckPolicy, human_duration

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


def cut(text: str, limit: int) -> str:
    """``text`` within a schema's maxLength, which the API server counts in characters.

    A backend's error can be any length; a status the API server refuses for one long
    message would report nothing at all.
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _transitions(records: Iterable[Transition]) -> list[dict[str, Any]]:
    out = []
    for record in records:
        wire = record.wire()
        wire["message"] = cut(wire["message"], MESSAGE_MAX)
        out.append(wire)
    return out


def phase(book: Book) -> Phase:
    return phase_of(book.cursor, book.seen)


def phase_of(cursor: Cursor, seen: Observations) -> Phase:
    status = cursor.operational_status
    if status == OperationalStatus.DETACHED:
        return Phase.DETACHED
    if status == OperationalStatus.ERROR or seen.spec_problem:
        return Phase.FAILED
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
    }
    if facts.hardware is not None:
        out["hardware"] = facts.hardware
    if facts.credentials is not None:
        out["goodCredentials"] = {"name": facts.credentials[0], "version": facts.credentials[1]}
    if facts.last_updated is not None:
        out["lastUpdated"] = rfc3339(facts.last_updated)
    out[RECENT] = _transitions(book.recorded_since(confirmed_seq))
    return out


def host_status_differs(
    projected: dict[str, Any], current: dict[str, Any] | None, *, tidy: bool = False
) -> bool:
    """Whether Host.status must be written.

    ``recentTransitions`` alone is not worth a write while the host is busy
    (every transition changes the cursor too, and the next write drops what
    HostState confirmed meanwhile). ``tidy`` (the host is at rest) makes it
    count, so a settled Host does not go on showing transitions as unconfirmed.
    """
    if not current:
        return True
    for key, value in projected.items():
        if key == RECENT:
            if tidy and (current.get(RECENT) or []) != value:
                return True
        elif current.get(key) != value:
            return True
    return any(key not in projected for key in current)


def _stuck_condition(book: Book, policy: StuckPolicy, now: float) -> dict[str, Any]:
    cur = book.cursor
    deadline = policy.deadline(cur)
    if deadline is not None and now >= deadline:
        limit = deadline - cur.entered_at
        return {
            "type": ConditionType.STUCK.value,
            "status": "True",
            "reason": "StateTimeout",
            "message": f"in {cur.state.value} since {rfc3339(cur.entered_at)}, "
            f"longer than the {human_duration(limit)} allowed"
            + (f"; last error: {cur.error_message}" if cur.error_message else ""),
            "lastTransitionTime": rfc3339(deadline),
        }
    return {
        "type": ConditionType.STUCK.value,
        "status": "False",
        "reason": "WithinTimeout" if deadline is not None else "Steady",
        "message": "",
        "lastTransitionTime": rfc3339(cur.entered_at),
    }


def hoststate_status(book: Book, policy: StuckPolicy, now: float) -> dict[str, Any]:
    cur = book.cursor
    generation = book.facts.observed_generation
    derived = _conditions(book)
    stuck = _stuck_condition(book, policy, now)
    conds = []
    for ctype in CONDITION_ORDER:
        cond = stuck if ctype == ConditionType.STUCK else derived[ctype]
        cond["observedGeneration"] = generation
        cond["message"] = cut(cond["message"], CONDITION_MESSAGE_MAX)
        conds.append(cond)
    return {
        "phase": phase(book).value,
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
