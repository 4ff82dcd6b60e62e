"""The one way a status is written (a Host's, a HostState's, a NodePool's, the controller's
own): decided against what the object holds, written with the resourceVersion it was read
at, put into the cache, and counted once in ``hoststate_status_writes_total``.

Each decision counts as one outcome: ``unchanged`` (the object already says it: nothing
sent), ``written`` (taken at the first try), or ``conflict`` (someone wrote the object
since it was read). What a conflict leads to is the caller's to say, as it knows whose
the status is: a book's projection is the truth for its object, so it is written again
over the version read anew (:attr:`OnConflict.OVERWRITE`); the controller's own status
holds every replica's entry, so it is decided again from the object as it now is
(:attr:`OnConflict.DECIDE_AGAIN`), and that decision counts on its own. A write to an
object deleted since the cache was read ends quietly (``gone``, not counted): its
deletion event follows and queues whatever forgets it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any

from ...api.objects import Obj
from ...cluster.interface import Cluster, Conflict, NotFound, Resource
from ..machinery.informer import Informer, InformerSet
from ..machinery.reporting import Reporter


class Outcome(StrEnum):
    UNCHANGED = "unchanged"
    WRITTEN = "written"
    CONFLICT = "conflict"
    GONE = "gone"  # deleted since it was read: nothing written, nothing counted


class OnConflict(Enum):
    OVERWRITE = "overwrite"  # read the version again and write the same status once more
    DECIDE_AGAIN = "decide again"  # read the object again; the caller decides anew


@dataclass(frozen=True, slots=True)
class Written:
    obj: Obj  # the object as it now is: the server's answer, or as it was read
    outcome: Outcome


def same_status(new: dict[str, Any], old: Any) -> bool:
    return bool(new == old)


class StatusWriter:
    def __init__(self, cluster: Cluster, reporter: Reporter) -> None:
        self.cluster = cluster
        self.reporter = reporter

    def write(
        self,
        resource: Resource,
        cache: Informer | InformerSet,
        obj: Obj,
        status: dict[str, Any],
        *,
        same: Callable[[dict[str, Any], Any], bool] = same_status,
        on_conflict: OnConflict = OnConflict.OVERWRITE,
    ) -> Written:
        """Write ``status`` onto ``obj`` unless ``same(status, obj's status)``."""
        if same(status, obj.get("status")):
            self.reporter.status_write(resource.plural, Outcome.UNCHANGED)
            return Written(obj, Outcome.UNCHANGED)
        meta = obj["metadata"]
        body: Obj = {
            "apiVersion": obj.get("apiVersion", resource.api_version),
            "kind": obj.get("kind", resource.kind),
            "metadata": {
                "name": meta["name"],
                "namespace": meta.get("namespace"),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "status": status,
        }
        outcome = Outcome.WRITTEN
        try:
            try:
                written = self.cluster.update_status(resource, body)
            except Conflict:
                fresh = self.cluster.get(resource, meta.get("namespace"), meta["name"])
                cache.mutate(fresh)
                if on_conflict is OnConflict.DECIDE_AGAIN:
                    self.reporter.status_write(resource.plural, Outcome.CONFLICT)
                    return Written(fresh, Outcome.CONFLICT)
                body["metadata"]["resourceVersion"] = fresh["metadata"]["resourceVersion"]
                written = self.cluster.update_status(resource, body)
                outcome = Outcome.CONFLICT
        except NotFound:
            # Deleted since the cache was read (seen on a real server: a Host erased while
            # kube-apiserver was down, reconciled from the cache as it came back).
            return Written(obj, Outcome.GONE)
        cache.mutate(written)
        self.reporter.status_write(resource.plural, outcome)
        return Written(written, outcome)
