"""Nodes without machines: a kubelet's and an update agent's writes, played on Node objects.

The demo and the tests have no kubelet, so :class:`SimulatedNode` writes what
one would: it registers the Node, reports readiness with a boot ID, sends
heartbeats (which must cost the controller nothing), and is cordoned,
rebooted and upgraded the way a drain and an update agent do it. Pods bound
to the node are plain Pod objects with no grace period, so evicting one is
deleting it; :func:`set_budget` writes a PodDisruptionBudget's status as the
disruption controller would, to hold or free an eviction.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..api.objects import Obj
from ..api.timefmt import rfc3339
from ..cluster.interface import NODES, PDBS, PODS, Cluster, Conflict, NotFound

_boots = itertools.count(1)


class UpdateFault(StrEnum):
    """What can go wrong in a simulated update (the demo's ``--fault-kinds``)."""

    DRAIN_BLOCKED = "drain-blocked"  # a PodDisruptionBudget allows no eviction
    REBOOT_LOST = "reboot-lost"  # the machine goes down and does not come back
    APPLY_DEGRADED = "apply-degraded"  # the agent fails to write the new configuration


UPDATE_FAULTS: tuple[UpdateFault, ...] = tuple(UpdateFault)


def _new_boot() -> str:
    return f"boot-{next(_boots):06d}"


@dataclass
class SimulatedNode:
    cluster: Cluster
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    provider_id: str = ""
    kubelet_version: str = "v1.36.2"
    os_image: str = "Debian GNU/Linux 13 (trixie)"
    boot_id: str = field(default_factory=_new_boot)
    ready: bool = True
    clock: Callable[[], float] = time.time
    _last: Obj | None = field(default=None, repr=False)  # the Node as last written

    # -- the kubelet ------------------------------------------------------------------------

    def register(self) -> Obj:
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": {"kubernetes.io/hostname": self.name, **self.labels},
            },
            "spec": {"providerID": self.provider_id} if self.provider_id else {},
        }
        created = self.cluster.create(NODES, body)
        return self.report(created)

    def report(self, node: Obj | None = None) -> Obj:
        """Write the Node's status as a kubelet does (unchanged but for the heartbeat time).

        A Node's status write also replaces its metadata (the API server keeps only its
        spec), so it is written over the Node as last written here — read again only
        when someone else changed it since (a conflict), as a kubelet's cache does.
        """
        node = node or self._last
        for _ in range(10):
            node = node or self.cluster.get(NODES, None, self.name)
            node["status"] = self._status(node)
            try:
                return self._wrote(self.cluster.update_status(NODES, node))
            except Conflict:
                node = None
        raise RuntimeError(f"node {self.name}: status kept conflicting")

    def _wrote(self, node: Obj) -> Obj:
        self._last = node
        return node

    def _status(self, node: Obj) -> dict[str, Any]:
        now = rfc3339(self.clock())
        before = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or ()}
        ready = "True" if self.ready else "False"
        old = before.get("Ready") or {}
        moved = old.get("status") != ready
        condition = {
            "type": "Ready",
            "status": ready,
            "reason": "KubeletReady" if self.ready else "KubeletNotReady",
            "message": "kubelet is posting ready status" if self.ready else "rebooting",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now if moved or not old else old.get("lastTransitionTime", now),
        }
        return {
            "conditions": [condition],
            "nodeInfo": {
                "machineID": self.name,
                "systemUUID": self.name,
                "bootID": self.boot_id,
                "kernelVersion": "6.12.0",
                "osImage": self.os_image,
                "containerRuntimeVersion": "containerd://2.1.4",
                "kubeletVersion": self.kubelet_version,
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        }

    def heartbeat(self) -> Obj:
        return self.report()

    def go_down(self) -> Obj:
        """The machine reboots: the kubelet stops posting Ready."""
        self.ready = False
        return self.report()

    def come_back(self, *, kubelet_version: str | None = None, os_image: str | None = None) -> Obj:
        """Booted again (a new boot ID), maybe into new software, and Ready."""
        self.boot_id = _new_boot()
        self.ready = True
        self.kubelet_version = kubelet_version or self.kubelet_version
        self.os_image = os_image or self.os_image
        return self.report()

    # -- what drains and agents write --------------------------------------------------------

    def cordon(self, unschedulable: bool = True) -> Obj:
        return self._wrote(
            self.cluster.patch(
                NODES, None, self.name, {"spec": {"unschedulable": unschedulable or None}}
            )
        )

    def annotate(self, values: dict[str, str | None]) -> Obj:
        """Set (or with None remove) annotations, as an update agent reports."""
        patch = {"metadata": {"annotations": values}}
        return self._wrote(self.cluster.patch(NODES, None, self.name, patch))

    def run_pod(self, namespace: str, name: str, labels: dict[str, str] | None = None) -> Obj:
        """A pod bound to this node, evicted at once when deleted (no grace period)."""
        return self.cluster.create(
            PODS,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
                "spec": {
                    "nodeName": self.name,
                    "terminationGracePeriodSeconds": 0,
                    "automountServiceAccountToken": False,
                    "containers": [{"name": "app", "image": "registry.invalid/app:1"}],
                },
            },
        )

    def evict(self, namespace: str, name: str) -> None:
        with contextlib.suppress(NotFound):
            self.cluster.delete(PODS, namespace, name)

    def delete(self) -> None:
        with contextlib.suppress(NotFound):
            self.cluster.delete(NODES, None, self.name)


def set_budget(
    cluster: Cluster,
    namespace: str,
    name: str,
    match_labels: dict[str, str],
    *,
    allowed: int,
    since: str = "",
) -> Obj:
    """Create or update a PodDisruptionBudget over the pods with ``match_labels``, with the
    status the disruption controller would write: ``allowed`` disruptions, changed ``since``
    (RFC 3339; default now)."""
    try:
        budget = cluster.get(PDBS, namespace, name)
    except NotFound:
        budget = cluster.create(
            PDBS,
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"maxUnavailable": 0, "selector": {"matchLabels": match_labels}},
            },
        )
    budget["status"] = {
        "disruptionsAllowed": allowed,
        "currentHealthy": 1,
        "desiredHealthy": 1,
        "expectedPods": 1,
        "observedGeneration": budget["metadata"].get("generation", 1),
        "conditions": [
            {
                "type": "DisruptionAllowed",
                "status": "True" if allowed else "False",
                "reason": "SufficientPods" if allowed else "InsufficientPods",
                "message": "",
                "lastTransitionTime": since or rfc3339(time.time()),
            }
        ],
    }
    return cluster.update_status(PDBS, budget)
