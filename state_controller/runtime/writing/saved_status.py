"""Keep a HostState's status in its annotation while its host is paused; restore it from
there when the HostState arrives without one; remove it once it has done its work.

``clusterctl move`` (Cluster API v1.14.2) pauses what it moves, creates each object in
the target, where the API server drops the status, and deletes the source's copies. The
pause is what a move looks like from here: a Host's ``hoststate.io/paused``, or the
``baremetalhost.metal3.io/paused`` Cluster API Provider Metal3 sets on a BareMetalHost
when its Cluster is paused. So while a host is paused its HostState's status is copied
into ``hoststate.io/status`` on the HostState (written only when it differs), and a
HostState found with that annotation and no status gets the status back, checked first
(:func:`..books.saved_status.read`): one refused is told in one line and left where it
is, nothing overwritten. As baremetal-operator v0.13.2 does with a BareMetalHost's
(``internal/controller/metal3.io/baremetalhost_controller.go``, ``reconcileHostData``),
the annotation is removed once the host is not paused and the status is there; the
module :mod:`..books.saved_status` has the sources and the size bound.

A Host's own status goes the same way into the Host's ``hoststate.io/status`` while it is
paused (:meth:`SavedStatus.keep_host`), in the form its restore reads, written only when
it differs: what Cluster API Provider Metal3 v1.13.2 does for a BareMetalHost
(``SetPauseAnnotation``). The Host's reconciler restores a Host with no status from it
and removes it once the status is there.

A HostState being deleted, or marked by clusterctl for deletion
(``clusterctl.cluster.x-k8s.io/delete-for-move``), is never written: its copy is in the
target already.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ...api import annotations as ann
from ...api.objects import Obj
from ...books.saved_status import fit, has_status, host_text, read, room_for
from ...cluster.interface import HOSTS, HOSTSTATES, Cluster, NotFound, Resource
from ..machinery.informer import Informer, InformerSet
from .status_writer import StatusWriter

log = logging.getLogger(__name__)


def leaving(obj: Obj) -> bool:
    """Being deleted, or marked by ``clusterctl move`` for deletion from this cluster."""
    meta = obj["metadata"]
    return bool(meta.get("deletionTimestamp")) or ann.DELETE_FOR_MOVE in (
        meta.get("annotations") or {}
    )


class SavedStatus:
    """The one place that reads and writes the saved-status annotations (a HostState's,
    and the paused Host's own)."""

    def __init__(
        self, cluster: Cluster, hoststates: Informer | InformerSet, statuses: StatusWriter
    ) -> None:
        self.cluster = cluster
        self.hoststates = hoststates
        self.statuses = statuses
        self._told: dict[str, str] = {}  # key -> the warning last logged for it
        self._lock = threading.Lock()

    def keep(self, key: str, host_notes: dict[str, str]) -> None:
        """While the host is paused: the HostState's status copied into the annotation
        when it differs, or, for one that has no status, restored from it. A HostState
        not there is not created (what a paused host's controller adds is nothing new).
        ``host_notes``: the host's annotations; one that ``state-controller pivot`` is
        moving here (``hoststate.io/moved-from``) is left to it, as it copies the whole
        status itself and writes it over what it created."""
        state = self.hoststates.get(key)
        if state is None or leaving(state) or ann.MOVED_FROM in host_notes:
            return
        status = state.get("status") or {}
        if not has_status(status):
            self.restore(key, state)
            return
        notes: dict[str, str] = state["metadata"].get("annotations") or {}
        saved = fit(status, room_for(notes))
        if saved.value is None:
            self._tell(
                key,
                f"the status of HostState {key} does not fit in an annotation "
                "even without its history: a clusterctl move would not carry it",
            )
            return
        if saved.dropped_transitions or saved.dropped_chapters:
            self._tell(
                key,
                f"the status of HostState {key} is kept in its {ann.STATUS} "
                f"annotation without its {saved.dropped_transitions} oldest "
                f"transitions and {saved.dropped_chapters} oldest chapters, to stay "
                "within the API server's 256 KiB of annotations",
            )
        if notes.get(ann.STATUS) != saved.value:
            self._annotate(HOSTSTATES, self.hoststates, state, saved.value)

    def keep_host(self, key: str, host: Obj, hosts: Informer | InformerSet) -> None:
        """While a Host is paused: its status copied into its own annotation when it
        differs. Not for one leaving this cluster, one ``state-controller pivot`` is
        moving in (pivot writes it), or one with no status yet (one that has just arrived
        by a move carries its status there: it is left as it came)."""
        notes: dict[str, str] = host["metadata"].get("annotations") or {}
        if leaving(host) or ann.MOVED_FROM in notes:
            return
        text = host_text(host.get("status"))
        if text is None or notes.get(ann.STATUS) == text:
            return
        if len(text.encode()) > room_for(notes):
            self._tell(
                key,
                f"the status of Host {key} does not fit in its {ann.STATUS} annotation: "
                "a clusterctl move would not carry it",
            )
            return
        self._annotate(HOSTS, hosts, host, text)

    def status_of(self, key: str, state: Obj | None) -> dict[str, Any] | None:
        """The HostState's status to open a book from: its own, or, for one that arrived
        without one, what its annotation holds (when it is valid)."""
        if state is None:
            return None
        status: dict[str, Any] | None = state.get("status") or None
        if has_status(status):
            return status
        raw = (state["metadata"].get("annotations") or {}).get(ann.STATUS)
        if not raw:
            return status
        saved, problem = read(raw)
        if problem:
            self._tell(key, problem)
        return saved or status

    def restore(self, key: str, state: Obj) -> Obj:
        """Write the status the annotation holds onto a HostState that has none."""
        saved = self.status_of(key, state)
        if not has_status(saved) or has_status(state.get("status")):
            return state
        written = self.statuses.write(HOSTSTATES, self.hoststates, state, saved or {})
        log.info("%s: HostState status restored from its %s annotation", key, ann.STATUS)
        return written.obj

    def drop_spent(self, key: str, state: Obj | None) -> None:
        """Once the host is not paused and the status is written, a valid annotation has
        done its work (kept, it would go stale); a refused one stays for its user."""
        if state is None or leaving(state) or not has_status(state.get("status")):
            return
        raw = (state["metadata"].get("annotations") or {}).get(ann.STATUS)
        if raw is not None and read(raw)[1] is None:
            self._annotate(HOSTSTATES, self.hoststates, state, None)

    def _annotate(
        self, resource: Resource, cache: Informer | InformerSet, obj: Obj, value: str | None
    ) -> None:
        meta = obj["metadata"]
        patch = {"metadata": {"annotations": {ann.STATUS: value}}}
        try:
            patched = self.cluster.patch(resource, meta.get("namespace"), meta["name"], patch)
        except NotFound:
            return
        cache.mutate(patched)

    def _tell(self, key: str, warning: str) -> None:
        """Log a warning once per key and text (every reconcile would repeat it)."""
        with self._lock:
            if self._told.get(key) == warning:
                return
            self._told[key] = warning
        log.warning("%s: %s", key, warning)
