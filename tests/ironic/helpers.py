"""Helpers for the scenarios against a real Ironic: its API as a test sees it, a running
controller, and the host's state as the cluster shows it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from urllib.parse import quote

import urllib3

from state_controller.api.bmc import parse_bmc_address
from state_controller.api.reach import Reach
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import EVENTS, HOSTS, HOSTSTATES, Cluster
from state_controller.cluster.schema import validators
from state_controller.observability.tracing import Exporter
from state_controller.provisioning.backoff import Backoff
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.provisioning.provisioner import Credentials, HostView
from state_controller.provisioning.results import Outcome, Result
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.fleet import create_fleet, host_manifest
from state_controller.wiring import Observed, observed_controller
from testbed import metrics
from testbed.scenarios import state_in, wait_all_in
from tests.conftest import wait_for

BACKOFF = Backoff(base=0.1, cap=1.0, jitter=0.0)
# How often the controller looks at a node Ironic is working on: each look is an API
# call that costs Ironic more CPU than the test's whole side of it; at 0.2 s the
# Ironic servers took more CPU than anything else in a run.
POLL = 0.5
VERSION = {"X-OpenStack-Ironic-API-Version": "1.115"}


class IronicAPI:
    """Ironic as the test looks at it (never through the code under test)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = urllib3.PoolManager(retries=False)

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any, str]:
        headers = dict(VERSION)
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        resp = self.http.request(method, self.url + path, body=payload, headers=headers, timeout=30)
        text = resp.data.decode(errors="replace")
        return resp.status, (json.loads(text) if text else None), text

    def node(self, name: str) -> dict[str, Any] | None:
        status, data, _ = self.request("GET", f"/v1/nodes/{quote(name)}")
        return data if status == 200 else None

    def nodes(self) -> list[dict[str, Any]]:
        _, data, _ = self.request("GET", "/v1/nodes?fields=uuid,name,provision_state,reservation")
        return list(data["nodes"])

    def purge(self, timeout: float = 30.0) -> None:
        """Delete every node (maintenance first), waiting out locks held by fake delays."""
        deadline = time.monotonic() + timeout
        while True:
            left = self.nodes()
            if not left:
                return
            for node in left:
                self.request("PUT", f"/v1/nodes/{node['uuid']}/maintenance", {"reason": "purge"})
                self.request("DELETE", f"/v1/nodes/{node['uuid']}")
            if time.monotonic() > deadline:
                raise AssertionError(f"could not purge Ironic nodes: {left}")
            time.sleep(0.2)


def hold_lock(api: IronicAPI, uuid: str) -> threading.Thread:
    """Another job takes the node's lock for the fake management delay (setting a boot
    device); returns once Ironic shows the reservation.

    It waits for the node to be free first: Ironic releases a lock a moment after it
    records the end of the work (a power action the controller saw finish), and that
    reservation, taken for this job's, made a test go on without the lock held."""
    eventually(lambda: not (api.node(uuid) or {"reservation": 1}).get("reservation"))
    holder = threading.Thread(
        target=api.request,
        args=("PUT", f"/v1/nodes/{uuid}/management/boot_device", {"boot_device": "pxe"}),
    )
    holder.start()
    eventually(lambda: (api.node(uuid) or {}).get("reservation"), what="the node locked")
    return holder


def provisioner(
    url: str, overrides: dict[str, dict[str, Any]] | None = None, **kw: Any
) -> IronicProvisioner:
    """An IronicProvisioner on fake-hardware; ``overrides`` adds node fields per host name."""
    table = overrides or {}

    def per_host(host: HostView) -> dict[str, Any]:
        return dict(table.get(host.name, {}))

    kw.setdefault("poll_delay", POLL)
    return IronicProvisioner(url, driver="fake-hardware", node_overrides=per_host, **kw)


def view_of(ns: str, index: int, *, provider_id: str = "", password: str = "") -> HostView:
    """The HostView the controller hands over for ``demo.host_manifest(ns, index)``."""
    manifest = host_manifest(ns, index)
    spec = manifest["spec"]
    return HostView(
        namespace=ns,
        name=manifest["metadata"]["name"],
        provider_id=provider_id,
        bmc=parse_bmc_address(spec["bmc"]["address"]),
        bmc_address=spec["bmc"]["address"],
        credentials=Credentials("admin", password or f"pw-{index}"),
        boot_mac_address=spec["bootMACAddress"],
        image=dict(spec["image"]),
        online=spec["online"],
    )


def settled(call: Callable[[], Result], what: str) -> Result:
    """The first answer of a provisioner call that is not "not yet" (continuing, retry after):
    the call made again, as the controller would, until Ironic is done with the step."""

    def answer() -> Result | None:
        result = call()
        return None if result.outcome in (Outcome.CONTINUING, Outcome.RETRY_AFTER) else result

    result: Result = eventually(answer, what=what)
    return result


def registered(prov: IronicProvisioner, view: HostView) -> HostView:
    """``view`` registered by ``prov`` (its Ironic node ``manageable``), with its node's ID."""
    done = settled(lambda: prov.register(view, credentials_changed=True), "registered")
    assert done.outcome is Outcome.COMPLETE and done.provider_id, done
    return replace(view, provider_id=done.provider_id)


def new_cluster() -> EmbeddedCluster:
    return EmbeddedCluster(validators=validators())


@contextmanager
def running(
    cluster: Cluster,
    prov: IronicProvisioner,
    *,
    trace: Exporter = "none",
    workers: int = 2,
    reach: Reach | None = None,
) -> Iterator[Observed]:
    config = ControllerConfig(
        workers=workers, backoff=BACKOFF, reach=reach or Reach(), controller_status_interval=0.5
    )
    observed = observed_controller(cluster, prov, config, trace=trace)
    observed.controller.start()
    try:
        yield observed
    finally:
        observed.controller.stop()


def sample(observed: Observed, name: str, labels: dict[str, str]) -> float:
    """The series' value; a series that does not exist fails (testbed.metrics)."""
    return metrics.sample(observed.metrics.registry, name, labels)


def requests(observed: Observed, operation: str, result: str) -> float:
    """How many Ironic provisioner calls of ``operation`` answered ``result``."""
    labels = {"backend": "ironic", "operation": operation, "result": result}
    return sample(observed, "hoststate_provisioner_requests_total", labels)


def one_available_host(
    cluster: Cluster, observed: Observed, api: IronicAPI, ns: str
) -> dict[str, Any]:
    """host-0000 with no image, taken to ``available`` and left there: its Ironic node."""
    create_fleet(cluster, ns, 1, image=False)
    wait_all(cluster, ns, ["host-0000"], "available")
    eventually(observed.controller.idle)
    node = api.node(f"{ns}~host-0000")
    assert node is not None
    return node


def one_provisioned_host(
    cluster: Cluster, observed: Observed, api: IronicAPI, ns: str
) -> dict[str, Any]:
    """host-0000 with the demo image, provisioned, powered on and left so: its Ironic node."""
    create_fleet(cluster, ns, 1)
    wait_all(cluster, ns, ["host-0000"], "provisioned")
    eventually(lambda: host_status(cluster, ns, "host-0000").get("poweredOn") is True)
    eventually(observed.controller.idle)
    node = api.node(f"{ns}~host-0000")
    assert node is not None
    return node


def state_of(cluster: Cluster, ns: str, name: str) -> str:
    """The host's provisioning state once its HostState reports the same (``state_in``)."""
    return state_in(cluster, ns, name)


def status(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    return dict(cluster.get(HOSTSTATES, ns, name).get("status") or {})


def host_status(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    return dict(cluster.get(HOSTS, ns, name).get("status") or {})


def condition(cluster: Cluster, ns: str, name: str, type_: str) -> dict[str, Any]:
    conditions = status(cluster, ns, name).get("conditions") or []
    return next((c for c in conditions if c["type"] == type_), {})


def degraded(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    """The HostState's Degraded condition once it is True, else {}: the HostState is
    written just after the Host, so a Host's error can be read while the HostState still
    says AsExpected."""
    found = condition(cluster, ns, name, "Degraded")
    return found if found.get("status") == "True" else {}


def events(cluster: Cluster, ns: str) -> list[dict[str, Any]]:
    return list(cluster.list(EVENTS, ns)[0])


def wait_all(
    cluster: Cluster, ns: str, names: list[str], state: str, timeout: float = 60.0
) -> None:
    """``wait_all_in`` the hosts named, with a real Ironic's minute."""
    wait_all_in(cluster, ns, state, names, timeout=timeout)


def eventually(predicate: Callable[[], Any], timeout: float = 60.0, what: str = "") -> Any:
    return wait_for(predicate, timeout=timeout, what=what or "condition")


def moves(history: list[dict[str, Any]]) -> list[str]:
    """The states a host moved to (records that did not move are left out)."""
    return [h["to"] for h in history if h["from"] != h["to"]]
