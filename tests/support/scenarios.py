"""What the end-to-end scenarios read and do, in one place (no test module imports
another): a host's state once both its objects say it, its HostState, conditions and
Events, the writes a store counted, and the Node side (a node's update step, a pool's
counts, Pods admitted)."""

from __future__ import annotations

import contextlib
from typing import Any

from state_controller.cluster.interface import (
    EVENTS,
    HOSTS,
    HOSTSTATES,
    NODEPOOLS,
    AlreadyExists,
    Cluster,
    NotFound,
    Resource,
)

NS = "fleet"  # every scenario's namespace (tests.conftest empties it between tests)
PASSWORD = "Tr0ub4dor-never-printed"  # a BMC password no output may show
WRITES = ("create", "update", "update_status", "patch", "delete")
WORKER = {"node-role.kubernetes.io/worker": ""}
SERVICE_ACCOUNTS = Resource("", "v1", "ServiceAccount", "serviceaccounts", has_status=False)


def state_of(cluster: Cluster, name: str) -> str:
    """The host's provisioning state once its HostState reports the same (both writes landed)."""
    try:
        host = cluster.get(HOSTS, NS, name)
    except NotFound:
        return "<gone>"
    state = str((host.get("status") or {}).get("provisioning", {}).get("state", ""))
    try:
        reported = cluster.get(HOSTSTATES, NS, name).get("status") or {}
    except NotFound:
        return "<not reported>"
    return state if reported.get("provisioning", {}).get("state") == state else "<reporting>"


def hoststate(cluster: Cluster, name: str) -> dict[str, Any]:
    return cluster.get(HOSTSTATES, NS, name)


def condition(state: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in state["status"]["conditions"] if c["type"] == type_)


def events_for(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    items, _ = cluster.list(EVENTS, NS)
    return [e for e in items if e["involvedObject"]["name"] == name]


def writes(cluster: Cluster) -> dict[str, int]:
    """The writes the store has answered so far, by verb."""
    stats = cluster.stats  # type: ignore[attr-defined]
    return {k: stats[k] for k in WRITES}


def allow_pods(cluster: Cluster) -> None:
    """A real API server admits a Pod only with its namespace's default ServiceAccount
    (no controller here creates it)."""
    with contextlib.suppress(AlreadyExists):
        cluster.create(
            SERVICE_ACCOUNTS,
            {"apiVersion": "v1", "kind": "ServiceAccount",
             "metadata": {"name": "default", "namespace": NS}},
        )  # fmt: skip


def update_of(state: dict[str, Any]) -> dict[str, Any]:
    return dict((state.get("status") or {}).get("update") or {})


def pool(cluster: Cluster, name: str) -> dict[str, Any] | None:
    try:
        return dict(cluster.get(NODEPOOLS, None, name).get("status") or {})
    except NotFound:
        return None


def step_of(cluster: Cluster, namespace: str, name: str) -> str:
    try:
        return str(update_of(cluster.get(HOSTSTATES, namespace, name)).get("step", ""))
    except NotFound:
        return "<none>"
