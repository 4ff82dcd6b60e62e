"""Rebuild a book from what the API server stores, so a restart loses nothing.

Host.status holds the cursor and the facts, and the transitions not yet
confirmed in HostState (``recentTransitions``); HostState.status holds the
history, the chapters, when each condition last changed, and the last
sequence number it confirmed (``lastSeq``), from which the runtime resumes
its delivery bookkeeping (:func:`confirmed_seq`). Together they
give back the book exactly as it was, with no gap in its history even when
the controller died between writing the two.
"""

from __future__ import annotations

from typing import Any

from ..api.servicing import ServiceStep
from ..api.states import ErrorType, OperationalStatus, ProvisioningState
from ..api.timefmt import parse_rfc3339
from ..api.updates import UpdateStep
from .book import Book, Limits
from .records import (
    BareMetalHostFacts,
    Chapter,
    Cursor,
    Expected,
    ForeignCondition,
    Remediation,
    ServiceCursor,
    Transition,
    UpdateCursor,
)


def _enum(kind: type[Any], value: Any, default: Any) -> Any:
    try:
        return kind(value)
    except ValueError:
        return default


def restore(
    key: str,
    host_status: dict[str, Any] | None,
    hoststate_status: dict[str, Any] | None,
    *,
    now: float,
    limits: Limits | None = None,
    node: str = "",
    node_only: bool = False,
) -> Book:
    """The book as it was; ``node`` is the Node the HostState names (its ``spec.node``)."""
    book = Book(key, now=now, limits=limits or Limits(), node_only=node_only)
    hs = host_status or {}
    state_status = hoststate_status or {}
    _restore_cursor(book, hs, now)
    _restore_facts(book, hs)
    book.facts.node = node
    book.facts.mode = str(state_status.get("mode") or "")
    _restore_observed(book, hs)
    if state_status.get("update"):
        book.update = _update_cursor(state_status["update"], now)
    book.facts.remediation = _remediation(state_status.get("remediation"))
    book.seen.expected = _expected(state_status.get("estimate"))
    if state_status.get("servicing"):
        book.service = _service_cursor(state_status["servicing"], now)
    firmware = state_status.get("firmware")
    book.facts.firmware = firmware if isinstance(firmware, dict) else None
    _restore_history(book, state_status, hs.get("recentTransitions") or [])
    _restore_stamps(book.stamps, state_status.get("conditions"))
    _restore_stamps(book.host_stamps, hs.get("conditions"))
    # Conditions are derived when first read, after the next step has set the
    # host's goal: one whose status did not really change keeps its time.
    return book


def _remediation(shown: Any) -> Remediation | None:
    """The remediation a HostState showed: the attempts made survive a restart."""
    if not isinstance(shown, dict) or not shown.get("trouble"):
        return None
    return Remediation(
        trouble=str(shown["trouble"]),
        since=parse_rfc3339(shown.get("since")) or 0.0,
        attempts=int(shown.get("attempts") or 0),
        last_attempt_at=parse_rfc3339(shown.get("lastAttemptAt")),
        action=str(shown.get("action") or ""),
        message=str(shown.get("message") or ""),
    )


def _expected(shown: Any) -> Expected | None:
    """The estimate a HostState showed, kept while its step lasts: what was said is held
    against what happens, after a restart too."""
    if not isinstance(shown, dict):
        return None
    times = [
        parse_rfc3339(shown.get(name))
        for name in ("enteredAt", "stepEndsAt", "stepLateAt", "endsAt", "lateAt")
    ]
    if any(t is None for t in times):
        return None
    entered, step_ends, step_late, ends, late = (t or 0.0 for t in times)
    return Expected(
        kind=str(shown.get("kind") or ""),
        step=str(shown.get("step") or ""),
        entered_at=entered,
        step_ends_at=step_ends,
        step_late_at=step_late,
        ends_at=ends,
        late_at=late,
        samples=int(shown.get("samples") or 0),
        basis=str(shown.get("basis") or ""),
    )


def _restore_stamps(stamps: dict[str, tuple[str, float]], stored: Any) -> None:
    """When each stored condition's status last changed, so an unchanged one keeps it."""
    for cond in stored or []:
        at = parse_rfc3339(cond.get("lastTransitionTime"))
        if "type" in cond and at is not None:
            stamps[str(cond["type"])] = (str(cond.get("status", "")), at)


def _restore_cursor(book: Book, hs: dict[str, Any], now: float) -> None:
    prov = hs.get("provisioning") or {}
    book.cursor = Cursor(
        state=_enum(ProvisioningState, prov.get("state", ""), ProvisioningState.NONE),
        entered_at=(
            parse_rfc3339(prov.get("enteredAt")) or parse_rfc3339(hs.get("lastUpdated")) or now
        ),
        operational_status=_enum(
            OperationalStatus, hs.get("operationalStatus") or "OK", OperationalStatus.OK
        ),
        error_type=_enum(ErrorType, hs.get("errorType") or "", None),
        error_message=str(hs.get("errorMessage") or ""),
        error_count=int(hs.get("errorCount") or 0),
    )


def _restore_facts(book: Book, hs: dict[str, Any]) -> None:
    prov = hs.get("provisioning") or {}
    facts = book.facts
    facts.provider_id = str(prov.get("id") or "")
    facts.powered_on = bool(hs.get("poweredOn", False))
    facts.hardware = hs.get("hardware")
    facts.image = prov.get("image")
    custom = prov.get("customDeploy")
    facts.custom_deploy = str(custom["method"]) if isinstance(custom, dict) else None
    facts.serviced = str(prov.get("servicedDigest") or "")
    facts.backend_history = str(prov.get("backendHistoryMark") or "")
    digest = prov.get("dataDigest")
    facts.deployed_data = str(digest) if isinstance(digest, str) else None
    facts.root_device_hints = prov.get("rootDeviceHints")
    facts.boot_mode = prov.get("bootMode")
    creds = hs.get("goodCredentials")
    if creds:
        facts.credentials = (str(creds.get("name", "")), str(creds.get("version", "")))
    facts.observed_generation = int(hs.get("observedGeneration") or 0)
    facts.last_updated = parse_rfc3339(hs.get("lastUpdated"))


def _restore_history(book: Book, state: dict[str, Any], recent: list[dict[str, Any]]) -> None:
    for entry in state.get("history") or []:
        book.history.append(Transition.from_wire(entry))
    for chapter in state.get("chapters") or []:
        book.chapters.append(Chapter.from_wire(chapter))
    book.history_dropped = int(state.get("historyDropped") or 0)
    confirmed = confirmed_seq(state)
    book.last_seq = confirmed
    missing = sorted(
        (Transition.from_wire(t) for t in recent if int(t.get("seq", 0)) > confirmed),
        key=lambda t: t.seq,
    )
    for record in missing:
        if record.seq > book.last_seq + 1:
            book.history_dropped += record.seq - book.last_seq - 1  # lost in a crash: count it
        book._file(record, left_in_error=False)
        book.last_seq = record.seq


def _restore_observed(book: Book, state: dict[str, Any]) -> None:
    """What an observed BareMetalHost's HostState shows beyond its cursor (handed on by
    :func:`observed_host_status`; a Host.status has none of it): its consumer,
    spec.online, the detached annotation and its own conditions."""
    book.facts.consumer = str(state.get("consumer") or "")
    shown = state.get("bareMetalHost")
    if not isinstance(shown, dict):
        return
    conditions = []
    for cond in shown.get("conditions") or []:
        at = parse_rfc3339(cond.get("lastTransitionTime"))
        if "type" in cond and at is not None:
            conditions.append(
                ForeignCondition(
                    type=str(cond["type"]),
                    status=str(cond.get("status", "")),
                    reason=str(cond.get("reason") or ""),
                    message=str(cond.get("message") or ""),
                    at=at,
                )
            )
    detached = shown.get("detached")
    book.facts.bare_metal_host = BareMetalHostFacts(
        online=bool(shown.get("online")),
        detached=None if detached is None else str(detached),
        conditions=tuple(conditions),
    )


def observed_host_status(hoststate_status: dict[str, Any] | None) -> dict[str, Any]:
    """What an observed host's HostState holds of its cursor and facts, in the shape of
    Host.status: an observed host (a BareMetalHost) has no Host.status, so its HostState
    is all a restart has. Its power is its ``PoweredOn`` condition; its consumer and
    what else the BareMetalHost showed (``bareMetalHost``) are handed on as stored."""
    state = hoststate_status or {}
    prov = state.get("provisioning") or {}
    powered = any(
        c.get("type") == "PoweredOn" and c.get("status") == "True"
        for c in state.get("conditions") or []
    )
    return {
        "provisioning": {"state": prov.get("state", ""), "enteredAt": prov.get("enteredAt")},
        "operationalStatus": prov.get("operationalStatus") or "OK",
        "errorType": prov.get("errorType") or "",
        "errorMessage": prov.get("errorMessage") or "",
        "errorCount": prov.get("errorCount") or 0,
        "poweredOn": powered,
        "consumer": state.get("consumer") or "",
        "bareMetalHost": state.get("bareMetalHost"),
    }


def confirmed_seq(hoststate_status: dict[str, Any] | None) -> int:
    """The last transition a stored HostState.status holds in its history."""
    return int((hoststate_status or {}).get("lastSeq") or 0)


def _service_cursor(data: dict[str, Any], now: float) -> ServiceCursor:
    return ServiceCursor(
        step=_enum(ServiceStep, data.get("step", ""), ServiceStep.SERVICED),
        entered_at=parse_rfc3339(data.get("enteredAt")) or now,
        started_at=parse_rfc3339(data.get("startedAt")),
        tasks=tuple(str(t) for t in data.get("tasks") or ()),
        done=int(data.get("done") or 0),
        message=str(data.get("message") or ""),
        digest=str(data.get("digest") or ""),
        failed_step=_enum(ServiceStep, data.get("failedStep") or "", None),
    )


def _update_cursor(data: dict[str, Any], now: float) -> UpdateCursor:
    visited = {_enum(UpdateStep, s, None) for s in data.get("visitedSteps") or ()}
    failed = _enum(UpdateStep, data.get("failedStep") or "", None)
    return UpdateCursor(
        step=_enum(UpdateStep, data.get("step", ""), UpdateStep.UPDATED),
        entered_at=parse_rfc3339(data.get("enteredAt")) or now,
        desired=str(data.get("desiredConfig") or ""),
        current=str(data.get("currentConfig") or ""),
        source=str(data.get("source") or ""),
        started_at=parse_rfc3339(data.get("startedAt")),
        boot_id=str(data.get("bootID") or ""),
        failed_step=failed,
        message=str(data.get("message") or ""),
        visited=frozenset(s for s in visited if s is not None),
    )
