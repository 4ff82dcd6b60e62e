"""The one interface every storage backend implements.

The controller only ever talks to a :class:`Cluster`. The embedded store and the
Kubernetes backend both implement it with the semantics of the Kubernetes API
that the controller relies on: optimistic concurrency through
``metadata.resourceVersion``, a status subresource written separately from
spec, ``metadata.generation`` bumped on spec changes, finalizers with
``deletionTimestamp``, and watches that resume from a resourceVersion (and
fail with :class:`Gone` when that version is too old).

Objects are plain ``dict`` values shaped exactly like their JSON form on the
wire, so that both backends can hand them around without conversion.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ..api.objects import Obj


@dataclass(frozen=True)
class Resource:
    """A kind of object the controller reads or writes."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    has_status: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


HOSTS = Resource("hoststate.io", "v1alpha1", "Host", "hosts")
HOSTSTATES = Resource("hoststate.io", "v1alpha1", "HostState", "hoststates")
NODEPOOLS = Resource("hoststate.io", "v1alpha1", "NodePool", "nodepools", namespaced=False)
CONTROLLERS = Resource(
    "hoststate.io", "v1alpha1", "HostStateController", "hoststatecontrollers", namespaced=False
)
SECRETS = Resource("", "v1", "Secret", "secrets", has_status=False)
EVENTS = Resource("", "v1", "Event", "events", has_status=False)
NODES = Resource("", "v1", "Node", "nodes", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "Lease", "leases", has_status=False)
PODS = Resource("", "v1", "Pod", "pods")
PDBS = Resource("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets")
# metal3's, written by baremetal-operator: observed, never written by this controller
BAREMETALHOSTS = Resource("metal3.io", "v1alpha1", "BareMetalHost", "baremetalhosts")
# OpenShift's, written by the Machine Config Operator: observed, never written here
MACHINECONFIGNODES = Resource(
    "machineconfiguration.openshift.io",
    "v1",
    "MachineConfigNode",
    "machineconfignodes",
    namespaced=False,
)
MACHINECONFIGPOOLS = Resource(
    "machineconfiguration.openshift.io",
    "v1",
    "MachineConfigPool",
    "machineconfigpools",
    namespaced=False,
)
# Cluster API's, written by its Machine controller: observed, never written here. v1beta2
# is the version its Machine CRD stores and serves since v1.11 (v1beta1 is still served).
CAPI_MACHINES = Resource("cluster.x-k8s.io", "v1beta2", "Machine", "machines")


class ApiError(Exception):
    """An error answered by the API server (or the embedded store acting as one)."""

    code: int = 500
    reason: str = "InternalError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(ApiError):
    code = 404
    reason = "NotFound"


class AlreadyExists(ApiError):
    code = 409
    reason = "AlreadyExists"


class Conflict(ApiError):
    """A write carried a resourceVersion that is no longer current."""

    code = 409
    reason = "Conflict"


class Gone(ApiError):
    """A watch asked to resume from a resourceVersion the server no longer keeps."""

    code = 410
    reason = "Expired"


@dataclass(frozen=True)
class FieldCause:
    field: str
    message: str


class Invalid(ApiError):
    """The object failed validation; ``causes`` names every offending field."""

    code = 422
    reason = "Invalid"

    def __init__(self, message: str, causes: list[FieldCause] | None = None) -> None:
        super().__init__(message)
        self.causes = causes or []


def unreachable(err: BaseException) -> bool:
    """The API server did not answer, or answered that it cannot serve now (5xx): an
    outage to report once, not a problem with the request to report each time."""
    if isinstance(err, ApiError):
        return err.code >= 500
    module = type(err).__module__
    return isinstance(err, OSError) or module.startswith(("urllib3", "http.client"))


EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]


@dataclass(frozen=True)
class WatchEvent:
    type: EventType
    object: Obj = field(repr=False)


class Watch(Protocol):
    """A stream of changes; iterating blocks until the next event or ``stop()``."""

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def stop(self) -> None: ...


class Cluster(Protocol):
    """What the controller needs from a Kubernetes-like API."""

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj: ...

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        field_selector: str = "",
        label_selector: str = "",
        metadata_only: bool = False,
    ) -> tuple[list[Obj], str]:
        """All objects (in one namespace, or all when ``None``) and the list's resourceVersion.

        ``field_selector`` is the API's (``spec.nodeName=worker-1``): equality terms
        joined by commas. ``label_selector`` too (``hoststate.io/bmc-credentials=true``):
        ``key=value``, ``key!=value``, ``key`` and ``!key`` terms joined by commas.
        ``metadata_only``: each object's metadata alone (:func:`metadata_of`), as the API
        server answers a list asked for as ``PartialObjectMetadataList``.
        """
        ...

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        resource_version: str = "",
        field_selector: str = "",
        label_selector: str = "",
        metadata_only: bool = False,
    ) -> Watch:
        """Changes after ``resource_version``; iteration raises :class:`Gone` if it is too old.

        With a selector, an object that comes to match is ADDED and one that stops matching
        is DELETED, as the API server tells it. ``metadata_only``: each event's object is
        its metadata alone (:func:`metadata_of`).
        """
        ...

    def create(self, resource: Resource, obj: Obj) -> Obj: ...

    def update(self, resource: Resource, obj: Obj) -> Obj:
        """Replace metadata and spec (not status); checks resourceVersion when it is set."""
        ...

    def update_status(self, resource: Resource, obj: Obj) -> Obj:
        """Replace status only; checks resourceVersion when it is set."""
        ...

    def patch(self, resource: Resource, namespace: str | None, name: str, patch: Obj) -> Obj:
        """JSON merge patch (RFC 7386) of metadata/spec.

        A resourceVersion inside the patch is a precondition.
        """
        ...

    def delete(self, resource: Resource, namespace: str | None, name: str) -> None:
        """Delete, or only mark deleted (``deletionTimestamp``) while finalizers remain."""
        ...

    def evict(self, namespace: str, pod: str) -> bool:
        """Evict a pod (policy/v1 Eviction): True once it is going or gone, False while a
        PodDisruptionBudget allows no disruption (the API server's 429)."""
        ...


PARTIAL_METADATA = "meta.k8s.io/v1", "PartialObjectMetadata"  # apiVersion, kind


def metadata_of(obj: Obj) -> Obj:
    """An object as a metadata-only list or watch gives it: a ``PartialObjectMetadata``
    (its labels, annotations, UID, resourceVersion, …; no spec, no status)."""
    api_version, kind = PARTIAL_METADATA
    return {"apiVersion": api_version, "kind": kind, "metadata": obj.get("metadata") or {}}


def object_key(obj: Obj) -> str:
    """``namespace/name`` (or ``name`` for cluster-scoped objects), as client-go keys them."""
    meta = obj["metadata"]
    return key_of(meta.get("namespace"), meta["name"])


def key_of(namespace: str | None, name: str) -> str:
    """Interned: a host's key is held by each cache, index and book that knows it (3.6
    copies of every key at 2,000 hosts, 65 bytes each), as one string."""
    return sys.intern(f"{namespace}/{name}" if namespace else str(name))


def split_key(key: str) -> tuple[str | None, str]:
    ns, _, name = key.rpartition("/")
    return (ns or None), name
