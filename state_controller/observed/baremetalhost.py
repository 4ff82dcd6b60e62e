"""metal3's BareMetalHost, as baremetal-operator (BMO) writes it, read into a book.

:func:`observe` compares what a BareMetalHost shows with the book and records the
difference, and nothing else:

* ``status.provisioning.state`` moves the book's state. A move BMO's state machine can
  make in one step is recorded as ``Observed``; any other means states were passed
  while nobody watched, and is one ``ObservedJump`` from the last state known to the
  new one (never an invented state in between). The first look at a host already on
  its way is ``FirstObserved``: its earlier life is not in this history.
* The time of each record is BMO's where BMO wrote one (``operationHistory``'s start
  of the operation a state begins, or end of the one it follows; else
  ``status.lastUpdated``), else the moment it was seen; the message names which.
* ``operationalStatus`` and ``errorType``/``errorCount`` become the book's error (with
  BMO's count, in the controller's own sentence for the type), ``detached``,
  ``delayed`` and ``servicing`` (a chapter of its own); ``poweredOn`` a fact and a
  record when it changes. ``errorMessage`` is Ironic's ``last_error``, which may quote
  what a BMC or an image server answered: it is never recorded, only handed to the
  operator's log (:func:`bmo_words`).
* Its consumer, ``spec.online``, the detached annotation and BMO's own conditions are
  facts, a change of one told when worth an Event (:mod:`.baremetalhost_facts`).

Nothing here reads the clock or the cluster: a test hands in a BareMetalHost and an
instant, and reads the book.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..api.baremetalhost import PAUSED
from ..api.states import ErrorType, OperationalStatus
from ..api.states import ProvisioningState as S
from ..api.timefmt import parse_rfc3339
from ..books.book import Book
from ..books.chapters import SERVICING_CHAPTER
from ..books.records import camel
from .baremetalhost_facts import observe_facts

# BMO's provisioning states; "ready" is the old name of available, and "match profile"
# (a no-op kept for old hosts) ends inspection.
STATES: dict[str, S] = {
    "": S.NONE,
    "unmanaged": S.UNMANAGED,
    "registering": S.REGISTERING,
    "match profile": S.INSPECTING,
    "inspecting": S.INSPECTING,
    "preparing": S.PREPARING,
    "ready": S.AVAILABLE,
    "available": S.AVAILABLE,
    "provisioning": S.PROVISIONING,
    "provisioned": S.PROVISIONED,
    "externally provisioned": S.EXTERNALLY_PROVISIONED,
    "deprovisioning": S.DEPROVISIONING,
    "powering off before delete": S.POWERING_OFF_BEFORE_DELETE,
    "deleting": S.DELETING,
}

# The moves BMO's state machine makes in one step (v0.13.2,
# internal/controller/metal3.io/host_state_machine.go); deletion may begin from anywhere.
# Registering is entered only from none and unmanaged (handleNone, handleUnmanaged): after
# lost credentials ensureRegistered registers again in place, the state unchanged.
_ANYWHERE = frozenset({S.POWERING_OFF_BEFORE_DELETE, S.DELETING})
NEXT: dict[S, frozenset[S]] = {
    S.NONE: frozenset({S.UNMANAGED, S.REGISTERING}),
    S.UNMANAGED: frozenset({S.REGISTERING}),
    S.REGISTERING: frozenset({S.INSPECTING, S.PREPARING, S.AVAILABLE, S.EXTERNALLY_PROVISIONED}),
    S.INSPECTING: frozenset({S.PREPARING, S.AVAILABLE}),
    S.PREPARING: frozenset({S.AVAILABLE}),
    S.AVAILABLE: frozenset({S.INSPECTING, S.PREPARING, S.PROVISIONING, S.EXTERNALLY_PROVISIONED}),
    S.PROVISIONING: frozenset({S.PROVISIONED, S.DEPROVISIONING}),
    S.PROVISIONED: frozenset({S.DEPROVISIONING}),
    S.EXTERNALLY_PROVISIONED: frozenset({S.INSPECTING, S.PREPARING, S.AVAILABLE}),
    S.DEPROVISIONING: frozenset({S.AVAILABLE}),
    S.POWERING_OFF_BEFORE_DELETE: frozenset(),
    S.DELETING: frozenset(),
}

# The operation of operationHistory a state is the work of: its start is when the state
# began, its end when the state that follows began.
OPERATION_OF: dict[S, str] = {
    S.REGISTERING: "register",
    S.INSPECTING: "inspect",
    S.PROVISIONING: "provision",
    S.DEPROVISIONING: "deprovision",
}
# The operations whose end leads into a state (the latest one that did is taken).
ENDS_IN: dict[S, tuple[str, ...]] = {
    S.INSPECTING: ("register",),
    S.PREPARING: ("inspect", "deprovision"),
    S.AVAILABLE: ("inspect", "deprovision"),
    S.EXTERNALLY_PROVISIONED: ("register",),
    S.PROVISIONED: ("provision",),
}

STATUSES: dict[str, OperationalStatus] = {s.value: s for s in OperationalStatus}
ERRORS: dict[str, ErrorType] = {e.value: e for e in ErrorType}

OBSERVED, JUMP, FIRST = "Observed", "ObservedJump", "FirstObserved"

# What each of BMO's error types means (its baremetalhost_types.go), said by the
# controller: a tenant who reads the HostState or an Event learns which failure it was,
# never what a server at an address a BareMetalHost named replied.
WHAT_FAILED: dict[ErrorType, str] = {
    ErrorType.REGISTRATION: "it could not reach or use the BMC",
    ErrorType.PROVISIONED_REGISTRATION: "it could not register the provisioned host again",
    ErrorType.INSPECTION: "inspecting the hardware failed",
    ErrorType.PREPARATION: "preparing the host (cleaning, RAID, firmware settings) failed",
    ErrorType.PROVISIONING: "provisioning or deprovisioning the host failed",
    ErrorType.POWER_MANAGEMENT: "it could not change the host's power",
    ErrorType.DETACH: "it could not detach the host from Ironic",
    ErrorType.SERVICING: "servicing the provisioned host failed",
}
NOT_SHOWN = (
    "baremetal-operator's words are in hoststate's log "
    "(not shown here: they may quote a remote server)"
)


def error_sentence(error: ErrorType) -> str:
    """What the book says of a BMO error of this type, in place of BMO's ``errorMessage``."""
    return f"baremetal-operator reports a {error.value}: {WHAT_FAILED[error]}; {NOT_SHOWN}"


def bmo_words(bmh: dict[str, Any]) -> str:
    """BMO's own ``errorMessage`` while the host is in error ("" otherwise): for the
    operator's log only."""
    status = bmh.get("status") or {}
    if str(status.get("operationalStatus") or "") != OperationalStatus.ERROR.value:
        return ""
    return str(status.get("errorMessage") or "")


@dataclass(frozen=True)
class Shown:
    """What a BareMetalHost's status shows, in the book's words."""

    state: S
    status: OperationalStatus
    error: ErrorType | None
    error_count: int
    powered_on: bool
    history: dict[str, tuple[float | None, float | None]]  # operation -> (start, end)
    last_updated: float | None
    hardware: dict[str, Any] | None = None  # what inspection found, as BMO wrote it
    unknown_state: str = ""  # a state this version does not know (kept as it was)


def shown(bmh: dict[str, Any]) -> Shown:
    status = bmh.get("status") or {}
    raw_state = str((status.get("provisioning") or {}).get("state") or "")
    state = STATES.get(raw_state)
    history = {
        op: (parse_rfc3339(times.get("start")), parse_rfc3339(times.get("end")))
        for op, times in (status.get("operationHistory") or {}).items()
        if isinstance(times, dict)
    }
    return Shown(
        state=state if state is not None else S.NONE,
        status=STATUSES.get(str(status.get("operationalStatus") or "OK"), OperationalStatus.OK),
        error=ERRORS.get(str(status.get("errorType") or "")),
        error_count=int(status.get("errorCount") or 0),
        powered_on=bool(status.get("poweredOn")),
        history=history,
        last_updated=parse_rfc3339(status.get("lastUpdated")),
        hardware=status.get("hardware") if isinstance(status.get("hardware"), dict) else None,
        unknown_state=raw_state if state is None else "",
    )


def observe(book: Book, bmh: dict[str, Any], now: float) -> None:
    """Record in ``book`` what ``bmh`` shows that the book does not hold yet."""
    seen = shown(bmh)
    first = book.last_seq == 0
    if seen.unknown_state:
        reason = f"unknown BareMetalHost state {seen.unknown_state!r}"
        if book.seen.spec_problem != reason:
            book.note_seen(now=now, spec_problem=reason, spec_problem_reason="UnknownState")
        return
    if book.seen.spec_problem:
        book.note_seen(now=now, spec_problem="", spec_problem_reason="")
    _observe_state(book, seen, now)
    _observe_status(book, seen, now)
    observe_facts(book, bmh, now)
    paused = _paused_by(bmh)
    if paused != book.seen.paused_by:
        book.note_seen(now=now, paused_by=paused)
    if seen.hardware is not None and seen.hardware != book.facts.hardware:
        book.note(now=now, hardware=seen.hardware)
    if seen.powered_on != book.facts.powered_on:
        book.note(now=now, powered_on=seen.powered_on)
        if not first:
            book.transition(
                now=_written_at(book, seen, now),
                reason="PoweredOn" if seen.powered_on else "PoweredOff",
                message=f"baremetal-operator turned the power {'on' if seen.powered_on else 'off'}",
                always_record=True,
            )


def _observe_state(book: Book, seen: Shown, now: float) -> None:
    before = book.cursor.state
    if seen.state == before and book.last_seq > 0:
        return
    if seen.state == before == S.NONE:
        return
    at, source = _entered_at(book, seen, before, now)
    where = f"(time: {source})"
    if book.last_seq == 0:
        reason = FIRST
        message = (
            f"first seen by hoststate {_state_words(seen.state)}; what came before is not "
            f"in this history {where}"
        )
    elif seen.state in NEXT[before] or seen.state in _ANYWHERE:
        reason = OBSERVED
        message = f"baremetal-operator moved it to {_state_words(seen.state)} {where}"
    else:
        reason = JUMP
        message = (
            f"baremetal-operator moved it from {_state_words(before)} to "
            f"{_state_words(seen.state)} while it was not watched; states in between, "
            f"if any, were not seen {where}"
        )
    book.transition(seen.state, now=at, reason=reason, message=message, always_record=True)


def _state_words(state: S) -> str:
    return repr(state.value) if state.value else "'' (new)"


def _entered_at(book: Book, seen: Shown, before: S, now: float) -> tuple[float, str]:
    """When BMO entered ``seen.state``, and where that time comes from: the start of the
    state's own operation, the end of the operation of the state it left, the latest end
    of an operation that leads into it, BMO's last status update, or the moment it was
    seen. Never before what the book holds, never after now."""
    floor = _floor(book)
    candidates: list[tuple[float | None, str]] = []
    own = OPERATION_OF.get(seen.state)
    if own is not None:
        candidates.append((seen.history.get(own, (None, None))[0], f"operationHistory.{own}.start"))
    left = OPERATION_OF.get(before)
    if left is not None:
        candidates.append((seen.history.get(left, (None, None))[1], f"operationHistory.{left}.end"))
    ends = [
        (end, f"operationHistory.{op}.end")
        for op in ENDS_IN.get(seen.state, ())
        if (end := seen.history.get(op, (None, None))[1]) is not None and floor <= end <= now
    ]
    candidates.extend(sorted(ends, reverse=True))
    candidates.append((seen.last_updated, "status.lastUpdated"))
    for at, source in candidates:
        if at is not None and floor <= at <= now:
            return at, f"BareMetalHost {source}"
    return now, "when hoststate saw it"


def _paused_by(bmh: dict[str, Any]) -> str:
    """Why baremetal-operator leaves the host alone ("" when it does not): the paused
    annotation, with its value (who paused it: clusterctl move, an operator) when it has one."""
    annotations = (bmh.get("metadata") or {}).get("annotations") or {}
    if PAUSED not in annotations:
        return ""
    who = str(annotations[PAUSED] or "")
    return f"baremetal-operator is paused on it by the {PAUSED} annotation" + (
        f" ({who})" if who else ""
    )


def _written_at(book: Book, seen: Shown, now: float) -> float:
    """When BMO wrote what changed: its ``status.lastUpdated`` when that fits the book's
    order, else the moment it was seen."""
    at = seen.last_updated
    return at if at is not None and _floor(book) <= at <= now else now


def _floor(book: Book) -> float:
    """The earliest time a new record may take: not before the book's last record (a
    history reads in order), nor before its state began."""
    if book.last_seq == 0:
        return float("-inf")
    last = book.history[-1].at if book.history else float("-inf")
    return max(book.cursor.entered_at, last, book.facts.last_updated or float("-inf"))


def _observe_status(book: Book, seen: Shown, now: float) -> None:
    cursor = book.cursor
    if seen.status == OperationalStatus.ERROR and seen.error is not None:
        sentence = error_sentence(seen.error)
        if (
            cursor.error_type != seen.error
            or cursor.error_message != sentence
            or cursor.error_count != seen.error_count
        ):
            book.transition(
                now=_written_at(book, seen, now),
                reason=camel(seen.error.value).replace("Error", "Failed"),
                message=sentence,
                error=seen.error,
                error_count=seen.error_count,
            )
        return
    target = OperationalStatus.OK if seen.status == OperationalStatus.ERROR else seen.status
    if target == cursor.operational_status:
        return
    servicing = OperationalStatus.SERVICING in (target, cursor.operational_status)
    book.transition(
        now=_written_at(book, seen, now),
        reason=camel(target.value) if target != OperationalStatus.OK else "Recovered",
        message=f"baremetal-operator reports operationalStatus {target.value}",
        status=target,
        always_record=True,
        chapter=SERVICING_CHAPTER if servicing else None,
    )
