"""Kubernetes Events: what a person reads in ``kubectl describe host``.

An Event is emitted for every notice in a host's journal (a refused
annotation, a stuck host, a warning), and for a transition when the host
starts a new chapter of its life, records something notable that is not a
state (a power change, an adoption, being detached), or fails — not for every
step, so that Events stay readable and cheap; reaching provisioned is one too.
Repeats of the same error are counted in the status, not re-emitted, and an Event
that repeats one (the same host, reason and message within 10 minutes) is counted
on it instead of creating another.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections import OrderedDict
from typing import Any

from ..api.objects import Obj
from ..api.servicing import SERVICING_COMPLETE, SERVICING_FAILED, SERVICING_STARTED
from ..api.states import ProvisioningState
from ..api.timefmt import rfc3339
from ..api.updates import UPDATE_COMPLETE, UPDATE_DEGRADED
from ..books.chapters import CHAPTER_OF, SERVICING_CHAPTER, UPDATE_CHAPTER
from ..books.journal import Entry, Notice
from ..books.records import POWER_CYCLED, REMEDIATED
from ..cluster.interface import EVENTS, ApiError, Cluster, NotFound, unreachable

log = logging.getLogger(__name__)

COMPONENT = "hoststate-controller"
PROVISIONED = ProvisioningState.PROVISIONED.value
REPEAT_WINDOW = 600.0  # seconds within which a repeat counts on the Event it repeats
REMEMBERED = 4096  # Events remembered for counting repeats (oldest forgotten first)
# An update is told by an Event when it ends. Its start is in the history and the
# HostState's conditions; an Event for it would add a write per update (measured: 1.65
# writes per step transition in a zero-delay rolling update with it, 1.1 without).
UPDATE_EVENTS = {UPDATE_COMPLETE: "Normal", UPDATE_DEGRADED: "Warning"}
# a remediation's records are told wherever they fall (in an update too): a power-cycle
# is a Warning, as the Node it answers is in trouble
REMEDIATION_EVENTS = {POWER_CYCLED: "Warning", REMEDIATED: "Normal"}
# a servicing run is told when it starts and when it ends; its steps are in the history
SERVICING_EVENTS = {
    SERVICING_STARTED: "Normal",
    SERVICING_COMPLETE: "Normal",
    SERVICING_FAILED: "Warning",
}


# an entry of the backend's own history (provisioning/backend_history.py): an error or a
# warning it recorded is a Warning, even one it recovered from
BACKEND_EVENTS = {"BackendError": "Warning", "BackendWarning": "Warning"}


def event_for(record: Entry) -> tuple[str, str, str] | None:
    """(type, reason, message) for a journal entry worth an Event, else None.

    Every notice is one; a transition is one when it is worth a line in
    ``kubectl describe``.
    """
    if isinstance(record, Notice):
        return record.type, record.reason, record.message
    if not record.recorded:
        return None
    if record.reason in REMEDIATION_EVENTS:
        return REMEDIATION_EVENTS[record.reason], record.reason, record.message
    if record.chapter == SERVICING_CHAPTER:
        kind = SERVICING_EVENTS.get(record.reason)
        return None if kind is None else (kind, record.reason, record.message or record.reason)
    if record.chapter == UPDATE_CHAPTER:  # an update is told when it ends
        kind = UPDATE_EVENTS.get(record.reason)
        return None if kind is None else (kind, record.reason, record.message or record.reason)
    if record.error_type is not None:
        return "Warning", record.reason, record.message
    if record.from_state == record.to_state:
        kind = BACKEND_EVENTS.get(record.reason, "Normal")
        return kind, record.reason, record.message or record.reason
    try:
        before = CHAPTER_OF[ProvisioningState(record.from_state)]
    except ValueError:
        before = ""
    if before == record.chapter and record.to_state != PROVISIONED:
        return None  # a step within a chapter; reaching provisioned is news of its own
    text = f"{record.from_state or 'new'} -> {record.to_state}"
    return "Normal", record.reason, f"{text}: {record.message}" if record.message else text


class EventRecorder:
    """Creates Events, and counts a repeat on the Event it repeats (``count``,
    ``lastTimestamp``) as client-go's correlator does, rather than creating another."""

    def __init__(self, cluster: Cluster, *, instance: str | None = None) -> None:
        self.cluster = cluster
        self.instance = instance or socket.gethostname()
        self._recent: OrderedDict[tuple[str, ...], tuple[str, str, int, float]] = OrderedDict()
        self._lock = threading.Lock()

    def emit(self, involved: Obj, type_: str, reason: str, message: str, now: float) -> None:
        meta = involved["metadata"]
        message = message[:1024]
        key = (meta.get("uid") or meta["name"], meta.get("namespace") or "", type_, reason, message)
        try:
            if not self._count_repeat(key, now):
                self._create(involved, type_, reason, message, now, key)
        except ApiError as err:  # an Event is never worth failing a reconcile for
            if not unreachable(err):  # an outage is told once, where calls are counted
                log.warning("could not record event %s for %s: %s", reason, meta["name"], err)

    def _count_repeat(self, key: tuple[str, ...], now: float) -> bool:
        with self._lock:
            seen = self._recent.get(key)
        if seen is None or now - seen[3] > REPEAT_WINDOW:
            return False
        namespace, name, count, _ = seen
        try:
            self.cluster.patch(
                EVENTS,
                namespace or None,
                name,
                {"count": count + 1, "lastTimestamp": rfc3339(now)},
            )
        except NotFound:  # expired on the server (its TTL): a new one
            return False
        with self._lock:
            self._recent[key] = (namespace, name, count + 1, now)
            self._recent.move_to_end(key)
        return True

    def _create(
        self,
        involved: Obj,
        type_: str,
        reason: str,
        message: str,
        now: float,
        key: tuple[str, ...],
    ) -> None:
        meta = involved["metadata"]
        stamp = rfc3339(now)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta.get("namespace")},
            "involvedObject": {
                "apiVersion": involved.get("apiVersion", ""),
                "kind": involved.get("kind", ""),
                "name": meta["name"],
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "type": type_,
            "reason": reason,
            "message": message,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.instance,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        created = self.cluster.create(EVENTS, body)
        made = created.get("metadata", {})
        with self._lock:
            self._recent[key] = (made.get("namespace") or "", made.get("name", ""), 1, now)
            while len(self._recent) > REMEMBERED:
                self._recent.popitem(last=False)
