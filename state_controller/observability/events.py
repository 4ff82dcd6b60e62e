"""Kubernetes Events: what a person reads in ``kubectl describe host``.

An Event is emitted for every notice in a host's journal (a refused
annotation, a stuck host, a warning), and for a transition when the host
starts a new chapter of its life, records something notable that is not a
state (a power change, an adoption, being detached), or fails — not for every
step, so that Events stay readable and cheap. Repeats of the same error are
counted in the status, not re-emitted.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

from ..api.objects import Obj
from ..api.states import ProvisioningState
from ..api.timefmt import rfc3339
from ..api.updates import UPDATE_COMPLETE, UPDATE_DEGRADED
from ..books.chapters import CHAPTER_OF, UPDATE_CHAPTER
from ..books.journal import Entry, Notice
from ..cluster.interface import EVENTS, ApiError, Cluster, unreachable

log = logging.getLogger(__name__)

COMPONENT = "hoststate-controller"
# An update is told by an Event when it ends. Its start is in the history and the
# HostState's conditions; an Event for it would add a write per update (measured: 1.65
# writes per step transition in a zero-delay rolling update with it, 1.1 without).
UPDATE_EVENTS = {UPDATE_COMPLETE: "Normal", UPDATE_DEGRADED: "Warning"}


def event_for(record: Entry) -> tuple[str, str, str] | None:
    """(type, reason, message) for a journal entry worth an Event, else None.

    Every notice is one; a transition is one when it is worth a line in
    ``kubectl describe``.
    """
    if isinstance(record, Notice):
        return record.type, record.reason, record.message
    if not record.recorded:
        return None
    if record.chapter == UPDATE_CHAPTER:  # an update is told when it ends
        kind = UPDATE_EVENTS.get(record.reason)
        return None if kind is None else (kind, record.reason, record.message or record.reason)
    if record.error_type is not None:
        return "Warning", record.reason, record.message
    if record.from_state == record.to_state:
        return "Normal", record.reason, record.message or record.reason
    try:
        before = CHAPTER_OF[ProvisioningState(record.from_state)]
    except ValueError:
        before = ""
    if before == record.chapter:
        return None
    text = f"{record.from_state or 'new'} -> {record.to_state}"
    return "Normal", record.reason, f"{text}: {record.message}" if record.message else text


class EventRecorder:
    def __init__(self, cluster: Cluster, *, instance: str | None = None) -> None:
        self.cluster = cluster
        self.instance = instance or socket.gethostname()

    def emit(self, involved: Obj, type_: str, reason: str, message: str, now: float) -> None:
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
            "message": message[:1024],
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.instance,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            self.cluster.create(EVENTS, body)
        except ApiError as err:  # an Event is never worth failing a reconcile for
            if not unreachable(err):  # an outage is told once, where calls are counted
                log.warning("could not record event %s for %s: %s", reason, meta["name"], err)
