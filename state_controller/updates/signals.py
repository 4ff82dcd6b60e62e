"""What a Node shows that an update is read from — and nothing else.

:func:`node_signals` reduces a Node to the handful of fields the adapters
read: the update agents' annotations, cordon, readiness, the kubelet's
``nodeInfo`` and the links to a Host. Two Nodes with equal signals are the
same to the book, so the runtime drops a watch event whose signals did not
change before it reaches the work queue: a kubelet heartbeat (condition
heartbeat times, every 10 s to 5 min), a Lease renewal (not on the Node at
all), an image list or allocatable change costs one comparison, no reconcile
and no write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..api.timefmt import parse_rfc3339

MCO = "machineconfiguration.openshift.io/"
MCO_DESIRED_CONFIG = MCO + "desiredConfig"
MCO_CURRENT_CONFIG = MCO + "currentConfig"
MCO_STATE = MCO + "state"
MCO_REASON = MCO + "reason"
MCO_DESIRED_DRAIN = MCO + "desiredDrain"
MCO_LAST_APPLIED_DRAIN = MCO + "lastAppliedDrain"
MCO_DESIRED_IMAGE = MCO + "desiredImage"
MCO_CURRENT_IMAGE = MCO + "currentImage"
MCO_POST_CONFIG_ACTION = MCO + "post-config-action"

OWN = "hoststate.io/"
OWN_DESIRED_CONFIG = OWN + "desired-config"
OWN_CURRENT_CONFIG = OWN + "current-config"
OWN_UPDATE_STATE = OWN + "update-state"
OWN_REASON = OWN + "update-reason"

# on a Node the controller cordoned to service its host ("servicing"): the cordon is not
# an update's, so the update adapters do not read it as one
CORDONED_FOR = OWN + "cordoned-for"
HOST_LABEL = OWN + "host"  # names the Host: its name (a label value cannot hold a '/')
HOST_NAMESPACE_LABEL = OWN + "host-namespace"  # ...and its namespace (updates/links.py)
HOSTNAME_LABEL = "kubernetes.io/hostname"
# the BareMetalHost UID cluster-api-provider-metal3 has kubeadm label a Node with (updates/links.py)
METAL3_UUID_LABEL = "metal3.io/uuid"

ANNOTATIONS = (
    MCO_DESIRED_CONFIG,
    MCO_CURRENT_CONFIG,
    MCO_STATE,
    MCO_REASON,
    MCO_DESIRED_DRAIN,
    MCO_LAST_APPLIED_DRAIN,
    MCO_DESIRED_IMAGE,
    MCO_CURRENT_IMAGE,
    MCO_POST_CONFIG_ACTION,
    OWN_DESIRED_CONFIG,
    OWN_CURRENT_CONFIG,
    OWN_UPDATE_STATE,
    CORDONED_FOR,
    OWN_REASON,
)


# the Machine Config Operator's placeholder for a value it does not know yet
# (pkg/upgrademonitor/upgrade_monitor.go, NotYetSet): a pool so named is no pool
NOT_YET_SET = "not-yet-set"


@dataclass(frozen=True, slots=True)
class MachineConfigNodeSignals:
    """What OpenShift's MachineConfigNode (v1) says of its Node's update: its pool
    (``spec.pool.name``), the configuration targeted (``spec.configVersion.desired``) and
    run (``status.configVersion.current``), the image targeted and run in image mode
    (``spec.configImage.desiredImage``, ``status.configImage.currentImage``), each
    condition as (type, status, reason, message), sorted by type, and the errors of the
    pinned image sets that failed (``status.pinnedImageSets``); its heartbeat fields
    (lastTransitionTime, observedGeneration) are left out, so they cost nothing."""

    desired: str = ""
    current: str = ""
    conditions: tuple[tuple[str, str, str, str], ...] = ()
    pool: str = ""
    desired_image: str = ""
    current_image: str = ""
    pinned_failures: tuple[str, ...] = ()  # "<set>: <error>", for each set that failed

    @property
    def reported(self) -> bool:
        """Whether the daemon has written its status yet. The operator creates the object
        before the daemon reports on it: until then it tells only a target, and read as it
        stands it would say an update is pending on a Node at rest."""
        return bool(self.current or self.conditions)

    @property
    def targeted(self) -> bool:
        """Whether the node is told to run another configuration (or image) than its own."""
        return (self.desired or self.current) != self.current or (
            self.desired_image != self.current_image
        )

    def condition(self, type_: str) -> tuple[str, str, str]:
        """(status, reason, message) of a condition; ("", "", "") when it is not there."""
        for name, status, reason, message in self.conditions:
            if name == type_:
                return status, reason, message
        return "", "", ""


def machine_config_node_signals(mcn: Mapping[str, Any]) -> MachineConfigNodeSignals:
    spec = mcn.get("spec") or {}
    status = mcn.get("status") or {}
    conditions = tuple(
        sorted(
            (
                str(c.get("type", "")),
                str(c.get("status", "")),
                str(c.get("reason", "")),
                str(c.get("message", "")),
            )
            for c in status.get("conditions") or ()
            if isinstance(c, Mapping)
        )
    )
    pool = str((spec.get("pool") or {}).get("name", ""))
    return MachineConfigNodeSignals(
        desired=str((spec.get("configVersion") or {}).get("desired", "")),
        current=str((status.get("configVersion") or {}).get("current", "")),
        conditions=conditions,
        pool="" if pool == NOT_YET_SET else pool,
        desired_image=str((spec.get("configImage") or {}).get("desiredImage", "")),
        current_image=str((status.get("configImage") or {}).get("currentImage", "")),
        pinned_failures=tuple(
            f"{s.get('name', '')}: {s['lastFailedGenerationError']}"
            for s in status.get("pinnedImageSets") or ()
            if isinstance(s, Mapping)
            and s.get("lastFailedGenerationError")
            and int(s.get("lastFailedGeneration") or 0) > int(s.get("currentGeneration") or 0)
        ),
    )


# Cluster API's, on a Machine (sigs.k8s.io/cluster-api/api v1.14.2, core/v1beta2/
# machine_types.go: UpdateInProgressAnnotation; runtime/v1beta2/extensionconfig_types.go:
# PendingHooksAnnotation,
# the comma-separated hooks still to be called, which internal/hooks/tracking.go reads)
CAPI_UPDATE_IN_PROGRESS = "in-place-updates.internal.cluster.x-k8s.io/update-in-progress"
CAPI_PENDING_HOOKS = "runtime.cluster.x-k8s.io/pending-hooks"
CAPI_UPDATE_MACHINE_HOOK = "UpdateMachine"


@dataclass(frozen=True, slots=True)
class CapiMachineSignals:
    """What a Cluster API Machine (``cluster.x-k8s.io/v1beta2``) says of its Node's update
    in place: its key (``namespace/name``), ``spec.providerID`` and ``status.nodeRef.name``
    (how it is joined to its Node, and so to a Host), ``spec.version``, its ``Updating``
    and ``UpToDate`` conditions as (status, reason, message), and the two annotations the
    in-place flow keeps on it while it runs (the owner's ``update-in-progress`` mark, the
    ``UpdateMachine`` hook still pending). Heartbeat fields are left out."""

    key: str = ""
    provider_id: str = ""
    node_name: str = ""
    version: str = ""
    updating: tuple[str, str, str] = ("", "", "")
    up_to_date: tuple[str, str, str] = ("", "", "")
    marked: bool = False  # the update-in-progress annotation is there
    hook_pending: bool = False  # UpdateMachine is among the pending hooks
    deleting: bool = False  # metadata.deletionTimestamp is set

    @property
    def reported(self) -> bool:
        """Whether the Machine says anything of an in-place update: its controller has
        written ``Updating`` (v1.12 and later, every Machine), or the flow has begun."""
        return bool(self.updating[0]) or self.marked or self.hook_pending


def _condition(conditions: Any, type_: str) -> tuple[str, str, str]:
    for c in conditions or ():
        if isinstance(c, Mapping) and c.get("type") == type_:
            return str(c.get("status", "")), str(c.get("reason", "")), str(c.get("message", ""))
    return "", "", ""


def capi_machine_signals(machine: Mapping[str, Any]) -> CapiMachineSignals:
    meta = machine.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    spec = machine.get("spec") or {}
    status = machine.get("status") or {}
    conditions = status.get("conditions")
    hooks = str(annotations.get(CAPI_PENDING_HOOKS, ""))
    return CapiMachineSignals(
        key=f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        provider_id=str(spec.get("providerID", "")),
        node_name=str((status.get("nodeRef") or {}).get("name", "")),
        version=str(spec.get("version", "")),
        updating=_condition(conditions, "Updating"),
        up_to_date=_condition(conditions, "UpToDate"),
        marked=CAPI_UPDATE_IN_PROGRESS in annotations,
        hook_pending=CAPI_UPDATE_MACHINE_HOOK in (h.strip() for h in hooks.split(",")),
        deleting=bool(meta.get("deletionTimestamp")),
    )


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """``status.nodeInfo`` as far as an update changes it (and the boot it is in)."""

    kubelet_version: str = ""
    os_image: str = ""
    kernel_version: str = ""
    container_runtime_version: str = ""
    boot_id: str = ""

    def software(self) -> str:
        """What the node runs, in one line: the 'configuration' of a node with no agent."""
        parts = (
            f"kubelet {self.kubelet_version}" if self.kubelet_version else "",
            self.os_image,
            f"kernel {self.kernel_version}" if self.kernel_version else "",
            self.container_runtime_version,
        )
        return ", ".join(p for p in parts if p)


@dataclass(frozen=True, slots=True)
class NodeSignals:
    name: str
    uid: str
    annotations: tuple[tuple[str, str], ...]  # only the keys in ANNOTATIONS, sorted
    role_pool: str  # the node pool its labels name (see pool_of)
    host_label: str
    hostname: str
    provider_id: str
    unschedulable: bool
    ready: str  # the Ready condition's status: "True", "False" or "Unknown"
    info: NodeInfo
    # when the Ready condition last changed status (its lastTransitionTime); None: not said.
    # Changes with ``ready`` only, so a heartbeat still leaves the signals as they were.
    ready_since: float | None = None
    mcn: MachineConfigNodeSignals | None = None  # its MachineConfigNode, where there is one
    capi: CapiMachineSignals | None = None  # its Cluster API Machine, where there is one
    metal3_uuid: str = ""  # its metal3.io/uuid label: a BareMetalHost's UID

    @property
    def pool(self) -> str:
        """The node's pool: the one its MachineConfigNode names (``spec.pool.name``, the
        Machine Config Operator's own choice among the pools that select the node), else
        the one its labels name."""
        return self.mcn.pool if self.mcn is not None and self.mcn.pool else self.role_pool

    def annotation(self, key: str) -> str:
        for name, value in self.annotations:
            if name == key:
                return value
        return ""


DEFAULT_POOL_LABEL = "node-role.kubernetes.io/*"
MASTER = "master"  # OpenShift's control-plane pool


def pool_of(labels: Mapping[str, str], pool_label: str = DEFAULT_POOL_LABEL) -> str:
    """The node's pool: the value of ``pool_label``, or with ``prefix/*`` the role named by
    a ``prefix/<role>`` label (``node-role.kubernetes.io/worker`` → worker). A node in
    none is in the pool ``""``.

    A node with several roles is placed as the Machine Config Operator places it
    (openshift/machine-config-operator, pkg/helpers/helpers.go, GetPoolsForNode):
    ``master`` first (every OpenShift control-plane node is labelled both ``master`` and
    ``control-plane``; its MachineConfigPool is ``master``), then a custom role (``infra``,
    any other), then ``worker``, which custom-pool nodes keep as well."""
    if not pool_label.endswith("/*"):
        return labels.get(pool_label, "")
    prefix = pool_label[:-1]
    roles = sorted(k[len(prefix) :] for k in labels if k.startswith(prefix) and k != prefix)
    if MASTER in roles:
        return MASTER
    chosen = [r for r in roles if r != "worker"] or roles
    return chosen[0] if chosen else ""


def _host_label(labels: Mapping[str, Any]) -> str:
    """The Host the Node's labels name: ``namespace/name`` when ``hoststate.io/host-namespace``
    gives the namespace, else ``hoststate.io/host`` as written (a bare name, or
    ``namespace/name`` where a store takes a '/' in a label)."""
    name = str(labels.get(HOST_LABEL, ""))
    namespace = str(labels.get(HOST_NAMESPACE_LABEL, ""))
    return f"{namespace}/{name}" if name and namespace and "/" not in name else name


def node_signals(node: Mapping[str, Any], pool_label: str = DEFAULT_POOL_LABEL) -> NodeSignals:
    meta = node.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    info = status.get("nodeInfo") or {}
    ready, ready_since = "Unknown", None
    for condition in status.get("conditions") or ():
        if condition.get("type") == "Ready":
            ready = str(condition.get("status", "Unknown"))
            ready_since = parse_rfc3339(condition.get("lastTransitionTime"))
            break
    return NodeSignals(
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        annotations=tuple(sorted((k, str(v)) for k, v in annotations.items() if k in ANNOTATIONS)),
        role_pool=pool_of(labels, pool_label),
        host_label=_host_label(labels),
        hostname=str(labels.get(HOSTNAME_LABEL, "")),
        provider_id=str(spec.get("providerID", "")),
        metal3_uuid=str(labels.get(METAL3_UUID_LABEL, "")),
        unschedulable=bool(spec.get("unschedulable", False)) and CORDONED_FOR not in annotations,
        ready=ready,
        ready_since=ready_since,
        info=NodeInfo(
            kubelet_version=str(info.get("kubeletVersion", "")),
            os_image=str(info.get("osImage", "")),
            kernel_version=str(info.get("kernelVersion", "")),
            container_runtime_version=str(info.get("containerRuntimeVersion", "")),
            boot_id=str(info.get("bootID", "")),
        ),
    )
