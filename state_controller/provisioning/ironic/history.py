"""Ironic's own history of a node (API 1.78: ``GET /v1/nodes/{id}/history``), read for the
host's history: what Ironic saw and recovered from by itself (a cleaning or deploy error
it retried, a power action the BMC refused, a health change), which its node's state no
longer shows.

Ironic keeps the entries oldest first (``sort_key=created_at``, ``sort_dir=asc`` by
default) and pages them after a ``marker`` entry; each has ``uuid``, ``created_at``,
``severity`` (``ERROR`` for an error, else ``INFO``), ``event_type`` (``deploying``,
``cleaning``, ``monitoring``, ...), ``event``, ``user`` and, from 1.115, ``state``,
``target_provision_state`` and ``duration_seconds`` (Ironic 39.0.0,
``ironic/api/controllers/v1/node.py`` ``NodeHistoryController``). The book keeps the last
entry it took as a mark (``created_at`` and ``uuid``), given back as the marker, so each
entry joins once, across restarts too. A book with no mark yet (a host just registered,
one handed over from baremetal-operator, one driven by a version that did not read it)
starts from the entries Ironic has at its first read: those are another owner's past,
told as its BareMetalHost's, or an earlier version's; what comes after joins. An entry
Ironic pruned since (``[conductor] node_history_max_entries``, 300 by default) is no
marker: then the entries after the mark's time are taken.

At most :data:`PER_READ` entries are taken a read, the oldest first: the host's history
holds 50 records, and a flood of Ironic's entries would push its own out; the rest come
at the next reads. Ironic's words are not shown as they are: an error quotes what a BMC or
an image server answered, at an address a Host's author chose. The record says which
known failure it was (:func:`~.faults.readable`), or that the words are in the log,
where they go scrubbed of the BMC password like every Ironic text.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from ..results import BackendEvent, HistoryRead
from .attempt import Attempt, node_path
from .faults import readable
from .scrubbing import scrub_text

HISTORY_VERSION = (1, 78)
PER_READ = 10
SOURCE = "Ironic"
BEGUN = "0"  # the mark of a node read with no entries yet: every entry to come is after it
WORD_MAX = 40  # a severity or an event type, as shown
_HEALTH = re.compile(r"health status changed: health='(\w+)' \(previously '(\w+)'\)", re.I)
# Ironic's own sentences for a flow of steps (ironic/conductor/utils.py, step flows):
# "Starting deployment with steps=[...]", "Deployment completed successfully with
# steps=[...]", "Cleaning aborted at step 'erase_devices' with steps=[...]"
_STARTED = re.compile(r"^Starting ([a-z ]{1,40}) with steps=")
_COMPLETED = re.compile(r"^([A-Za-z ]{1,40}) completed successfully with steps=")
_ABORTED = re.compile(r"^([A-Za-z ]{1,40}) aborted at step '([\w.-]{1,80})'")


def read_history(at: Attempt, mark: str) -> HistoryRead | None:
    """The node's entries after ``mark`` (``"<created_at> <uuid>"``; "" none), at most
    :data:`PER_READ`; None when Ironic cannot say (no node yet, an API older than 1.78)."""
    uuid = at.host.provider_id
    if not uuid or at.client.version() < HISTORY_VERSION:
        return None
    if not mark:  # the first read: from what Ironic has now on
        return HistoryRead((), _newest(at, uuid), source=SOURCE)
    since, _, last = mark.partition(" ")
    entries = _entries(at, uuid, last)
    if entries is None:  # the marker was pruned (the oldest go first), or its node is
        # gone (the host's node made anew): the entries left that came after its time
        entries = [e for e in _entries(at, uuid, "") or [] if str(e.get("created_at")) > since]
    taken = entries[:PER_READ]
    if not taken:
        return HistoryRead((), mark, source=SOURCE)
    password = at.host.credentials.password
    events, said = [], []
    for entry in taken:
        words = scrub_text(str(entry.get("event") or ""), password)
        events.append(event_of(entry, words))
        said.append(f"{entry.get('created_at')} {entry.get('event_type')}: {words}")
    return HistoryRead(tuple(events), _mark(taken[-1]), "; ".join(said), SOURCE)


def _mark(entry: dict[str, Any]) -> str:
    return f"{str(entry.get('created_at'))[:WORD_MAX]} {str(entry.get('uuid'))[:WORD_MAX]}"


def _newest(at: Attempt, uuid: str) -> str:
    """The mark of the node's newest entry; :data:`BEGUN` when it has none."""
    path = node_path(uuid, "Ironic's node uuid", "/history?sort_dir=desc&limit=1")
    reply = at.request("GET", path, route="node/history", allow=(404,))
    found = reply.data.get("history") if isinstance(reply.data, dict) else None
    return _mark(found[0]) if found and isinstance(found[0], dict) else BEGUN


def _entries(at: Attempt, uuid: str, marker: str) -> list[dict[str, Any]] | None:
    """Entries after ``marker`` (all without one); None when Ironic has no such marker."""
    query = f"?detail=True&limit={PER_READ * 2}"
    if marker:
        query += f"&marker={quote(marker, safe='')}"
    path = node_path(uuid, "Ironic's node uuid", f"/history{query}")
    reply = at.request("GET", path, route="node/history", allow=(400, 404))
    if reply.status != 200 or not isinstance(reply.data, dict):
        return None if marker else []
    return [e for e in reply.data.get("history") or [] if isinstance(e, dict)]


def event_of(entry: dict[str, Any], words: str) -> BackendEvent:
    """One entry as the host's history tells it; ``words``: its event, scrubbed."""
    return BackendEvent(
        at=_time(str(entry.get("created_at") or "")),
        severity=str(entry.get("severity") or "INFO")[:WORD_MAX],
        kind=str(entry.get("event_type") or "unknown")[:WORD_MAX],
        words=_told(words) + _state(entry),
    )


def _told(words: str) -> str:
    """Ironic's own sentences, said again; a failure as :func:`~.faults.readable` says it."""
    if found := _HEALTH.search(words):
        now, was = found.groups()
        if was == "None":
            return f"the BMC's health rollup is {now}, read for the first time"
        if now == "None":
            return f"the BMC gives no health rollup any more (it was {was})"
        return f"the BMC's health rollup went from {was} to {now}"
    if found := _STARTED.match(words):
        return f"{found.group(1)} started"
    if found := _COMPLETED.match(words):
        return f"{found.group(1).lower()} completed"
    if found := _ABORTED.match(words):
        return f"{found.group(1).lower()} aborted at step {found.group(2)}"
    return readable(words)


def _state(entry: dict[str, Any]) -> str:
    """What API 1.115 adds: the node's provision state then, and how long it had been
    since its last provision state change (Ironic's ``duration_seconds``)."""
    state, target = entry.get("state"), entry.get("target_provision_state")
    if not isinstance(state, str) or not state:
        return ""
    said = f"; node {state[:WORD_MAX]}"
    if isinstance(target, str) and target:
        said += f" → {target[:WORD_MAX]}"
    seconds = entry.get("duration_seconds")
    if isinstance(seconds, int) and not isinstance(seconds, bool):
        said += f", {seconds} s in its previous state"
    return said


def _time(created_at: str) -> str:
    """Ironic's time of an entry to the second, in UTC (``2026-11-29T04:21:27Z``); as
    written when it is no time."""
    try:
        when = datetime.fromisoformat(created_at)
    except ValueError:
        return created_at[:WORD_MAX]
    if when.tzinfo is None:  # Ironic writes UTC
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
