"""What the end-to-end scenarios read and do, in one place (no test module imports
another): a host's state once both its objects say it, its HostState, conditions and
Events, the writes a store counted, and the Node side (a node's update step, a pool's
counts, Pods admitted)."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Sequence
from typing import Any

from state_controller.cluster.interface import (
    CONTROLLERS,
    EVENTS,
    HOSTS,
    HOSTSTATES,
    NODEPOOLS,
    AlreadyExists,
    Cluster,
    NotFound,
    Resource,
)
from testbed.waiting import wait_for

NS = "fleet"  # every scenario's namespace (tests.conftest empties it between tests)
PASSWORD = "Tr0ub4dor-never-printed"  # a BMC password no output may show
# what the hosts' data Secrets hold (user, network, meta data): no output may show it
HOST_DATA = {
    "userData": "#cloud-config\nruncmd: [echo us3r-data-never-printed]\n",
    "networkData": "links: [{id: n3twork-data-never-printed, type: phy}]\n",
    "metaData": "local-hostname: m3ta-data-never-printed\n",
}
# the deploy ramdisk's network (spec.preprovisioningNetworkDataName), key networkData
RAMDISK_NETWORK_DATA = "links: [{id: r4mdisk-network-never-printed, type: phy}]\n"
HOST_DATA_MARKS = (
    "us3r-data-never-printed",
    "n3twork-data-never-printed",
    "m3ta-data-never-printed",
    "r4mdisk-network-never-printed",
)


def host_data_secret(namespace: str, name: str, key: str, text: str = "") -> dict[str, Any]:
    """A Secret labelled as data for a deployed OS, holding ``text`` or ``HOST_DATA[key]``
    under ``key``."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"hoststate.io/host-data": "true"},
        },
        "type": "Opaque",
        "data": {key: base64.b64encode((text or HOST_DATA[key]).encode()).decode()},
    }


WRITES = ("create", "update", "update_status", "patch", "delete")
WORKER = {"node-role.kubernetes.io/worker": ""}
SERVICE_ACCOUNTS = Resource("", "v1", "ServiceAccount", "serviceaccounts", has_status=False)


def host_state(host: dict[str, Any]) -> str:
    """The provisioning state a Host's status says ("" before its first status)."""
    return str(((host.get("status") or {}).get("provisioning") or {}).get("state", ""))


def state_in(cluster: Cluster, namespace: str, name: str) -> str:
    """The host's provisioning state once its HostState reports the same (both writes landed)."""
    try:
        host = cluster.get(HOSTS, namespace, name)
    except NotFound:
        return "<gone>"
    state = host_state(host)
    try:
        reported = cluster.get(HOSTSTATES, namespace, name).get("status") or {}
    except NotFound:
        return "<not reported>"
    return state if reported.get("provisioning", {}).get("state") == state else "<reporting>"


def state_of(cluster: Cluster, name: str) -> str:
    """``state_in`` the scenarios' namespace."""
    return state_in(cluster, NS, name)


def states_in(
    cluster: Cluster, namespace: str, names: Sequence[str] | None = None, *, reported: bool = True
) -> dict[str, str]:
    """Each host's state by name, of those named or of every Host in the namespace: as
    ``state_in`` has it, or, not ``reported``, as its Host.status alone says ("<gone>": no
    such Host)."""
    if reported:
        listed = names if names is not None else _host_names(cluster, namespace)
        return {name: state_in(cluster, namespace, name) for name in listed}
    hosts = {h["metadata"]["name"]: host_state(h) for h in cluster.list(HOSTS, namespace)[0]}
    return hosts if names is None else {name: hosts.get(name, "<gone>") for name in names}


def wait_all_in(
    cluster: Cluster,
    namespace: str,
    state: str,
    names: Sequence[str] | None = None,
    *,
    timeout: float = 15.0,
    reported: bool = True,
) -> None:
    """Until every host named, or every Host in the namespace (at least one), is in
    ``state``: with its HostState reporting the same, or, not ``reported``, as its
    Host.status alone says. On timeout, the error says which host is in which state."""

    def there() -> bool:
        if not reported:
            now = states_in(cluster, namespace, names, reported=False)
            return (names is not None or bool(now)) and all(s == state for s in now.values())
        listed = names if names is not None else _host_names(cluster, namespace)
        return (names is not None or bool(listed)) and all(
            state_in(cluster, namespace, name) == state for name in listed
        )

    which = ", ".join(names) if names is not None else f"every Host in {namespace}"
    alone = "" if reported else " (Host.status alone)"
    try:
        wait_for(there, timeout=timeout, what=f"{which} {state}{alone}")
    except AssertionError as error:
        now = _lagging(cluster, namespace, state, names, reported)
        raise AssertionError(f"{error}; now: {now}") from None


def _host_names(cluster: Cluster, namespace: str) -> list[str]:
    return sorted(h["metadata"]["name"] for h in cluster.list(HOSTS, namespace)[0])


def _lagging(
    cluster: Cluster, namespace: str, state: str, names: Sequence[str] | None, reported: bool
) -> str:
    """Each host's state; with why, for a host not in ``state`` (its Host's error, and the
    provisioning its HostState reports)."""
    try:
        now = states_in(cluster, namespace, names, reported=reported)
        told = []
        for name, seen in now.items():
            if seen != state:
                seen = f"{seen} {_why(cluster, namespace, name, reported)}"
            told.append(f"{name}: {seen}")
    except Exception as error:  # the wait timed out on an unreachable server, say
        return f"unknown ({type(error).__name__}: {error})"
    return "; ".join(told) or f"no Host in {namespace}"


def _why(cluster: Cluster, namespace: str, name: str, reported: bool) -> dict[str, Any]:
    why: dict[str, Any] = {}
    with contextlib.suppress(NotFound):
        status = cluster.get(HOSTS, namespace, name).get("status") or {}
        told = ("provisioning", "errorType", "errorMessage")
        why["host"] = {k: status[k] for k in told if status.get(k)}
    if reported:
        with contextlib.suppress(NotFound):
            said = cluster.get(HOSTSTATES, namespace, name).get("status") or {}
            why["hostState"] = said.get("provisioning")
    return why


def hoststate(cluster: Cluster, name: str) -> dict[str, Any]:
    return cluster.get(HOSTSTATES, NS, name)


def condition(state: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in state["status"]["conditions"] if c["type"] == type_)


def events_for(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    items, _ = cluster.list(EVENTS, NS)
    return [e for e in items if e["involvedObject"]["name"] == name]


def writes(cluster: Cluster) -> dict[str, int]:
    """The writes the store has answered so far, by verb: those about hosts and nodes,
    not the controller's own status (written when a replica starts, and when its
    counts move), which the tests of the controller's status count themselves."""
    stats = cluster.stats  # type: ignore[attr-defined]
    own = cluster.writes  # type: ignore[attr-defined]
    return {k: stats[k] - own.get((k, CONTROLLERS.plural), 0) for k in WRITES}


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
