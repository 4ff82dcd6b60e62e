"""Hosts through a real Ironic: the whole life, deprovisioning and deletion, detaching
and pausing; each on the embedded store and on the session's real kube-apiserver, as
the scenarios in tests/scenarios run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from state_controller.api import annotations as ann
from state_controller.cluster.interface import HOSTS, Cluster
from state_controller.cluster.kube import KubeCluster
from state_controller.pivot.target import ensure_namespaces
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.simulation.fleet import IMAGE, create_fleet
from state_controller.wiring import Observed
from testbed.scenarios import writes
from tests.conftest import empty_namespace, wait_reconciled
from tests.ironic.helpers import (
    IronicAPI,
    eventually,
    host_status,
    moves,
    new_cluster,
    one_provisioned_host,
    state_of,
    status,
    wait_all,
)

pytestmark = pytest.mark.slow

NS = "life"
NAMESPACES = (NS, "detach", "paused", "reboots")
NAMES = [f"host-{i:04d}" for i in range(3)]


@pytest.fixture(params=["embedded", "kube"])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """The embedded store, or the session's real control plane (its namespaces emptied
    after the test); this module's scenarios run on both."""
    if request.param == "embedded":
        store = new_cluster()
        yield store
        store.close()
        return
    plane = request.getfixturevalue("control_plane")
    kube = KubeCluster.from_kubeconfig(str(plane.kubeconfig))
    ensure_namespaces(kube, NAMESPACES)
    yield kube
    for namespace in NAMESPACES:
        empty_namespace(kube, namespace)
    kube.close()


def test_hosts_live_and_die_through_ironic(
    api: IronicAPI, prov: IronicProvisioner, cluster: Cluster, observed: Observed
) -> None:
    create_fleet(cluster, NS, len(NAMES))
    wait_all(cluster, NS, NAMES, "provisioned")
    eventually(lambda: all(host_status(cluster, NS, n).get("poweredOn") for n in NAMES))
    assert prov.microversion == "1.115"
    for name in NAMES:
        node = api.node(f"{NS}~{name}")
        assert node is not None
        assert node["provision_state"] == "active"
        assert node["power_state"] == "power on"
        assert node["instance_info"]["image_source"] == IMAGE["url"]
        # a checksum file's URL: Ironic fetches it only from image_checksum
        assert node["instance_info"]["image_checksum"] == IMAGE["checksum"]
        assert "image_os_hash_value" not in node["instance_info"]
        assert node["driver_info"]["redfish_address"].startswith("https://bmc-")
        assert node["properties"]["capabilities"] == "boot_mode:uefi"
        assert host_status(cluster, NS, name)["provisioning"]["id"] == node["uuid"]
        history = status(cluster, NS, name)["history"]
        assert moves(history) == [
            "registering", "inspecting", "preparing", "available", "provisioning",
            "provisioned",
        ]  # fmt: skip
        assert prov.actions[(f"{NS}~{name}", "active")] == 1
    _, ports, _ = api.request("GET", "/v1/ports?fields=address,node_uuid")
    assert len(ports["ports"]) == len(NAMES)

    # removing the image deprovisions (undeploy + cleaning in Ironic)
    cluster.patch(HOSTS, NS, "host-0000", {"spec": {"image": None}})
    eventually(lambda: state_of(cluster, NS, "host-0000") == "available", what="deprovisioned")
    node = api.node(f"{NS}~host-0000")
    assert node is not None and node["provision_state"] == "available"
    assert prov.actions[(f"{NS}~host-0000", "deleted")] == 1

    # deleting every host removes its node from Ironic
    for name in NAMES:
        cluster.delete(HOSTS, NS, name)
    wait_all(cluster, NS, NAMES, "<gone>")
    for name in NAMES:
        assert api.node(f"{NS}~{name}") is None
    assert api.nodes() == []
    assert observed.metrics.registry.get_sample_value(
        "hoststate_errors_total", {"type": "provisioning error"}
    ) in (None, 0.0)


def test_detach_forgets_the_node_and_reattach_adopts_it(
    api: IronicAPI, prov: IronicProvisioner, cluster: Cluster, observed: Observed
) -> None:
    ns, name = "detach", "host-0000"
    first = one_provisioned_host(cluster, observed, api, ns)
    cluster.patch(HOSTS, ns, name, {"metadata": {"annotations": {ann.DETACHED: ""}}})
    eventually(lambda: api.node(f"{ns}~{name}") is None, what="node removed from Ironic")
    eventually(lambda: host_status(cluster, ns, name).get("operationalStatus") == "detached")
    assert prov.actions[(f"{ns}~{name}", "deleted")] == 0  # not deprovisioned

    cluster.patch(HOSTS, ns, name, {"metadata": {"annotations": {ann.DETACHED: None}}})
    eventually(
        lambda: any(h["reason"] == "Adopted" for h in status(cluster, ns, name)["history"]),
        what="re-registered and adopted",
    )
    node = api.node(f"{ns}~{name}")
    assert node is not None and node["provision_state"] == "active"
    assert node["uuid"] != first["uuid"]
    assert prov.actions[(f"{ns}~{name}", "active")] == 1  # deployed once, ever
    assert state_of(cluster, ns, name) == "provisioned"

    # a detached host is deleted without deprovisioning: Ironic is not asked anything
    cluster.patch(HOSTS, ns, name, {"metadata": {"annotations": {ann.DETACHED: ""}}})
    eventually(lambda: api.node(f"{ns}~{name}") is None, what="detached again")
    eventually(observed.controller.idle)
    calls = sum(prov.calls.values())
    cluster.delete(HOSTS, ns, name)
    eventually(lambda: state_of(cluster, ns, name) == "<gone>", what="deleted")
    assert sum(prov.calls.values()) == calls
    assert api.nodes() == []
    assert prov.actions[(f"{ns}~{name}", "deleted")] == 0


def test_paused_host_gets_no_ironic_call_and_no_write(
    api: IronicAPI, prov: IronicProvisioner, cluster: Cluster, observed: Observed
) -> None:
    ns, name = "paused", "host-0000"
    one_provisioned_host(cluster, observed, api, ns)
    paused = cluster.patch(HOSTS, ns, name, {"metadata": {"annotations": {ann.PAUSED: ""}}})
    # the pause seen, by the reconcile that kept the Host's status in its annotation (the
    # controller's own write, which nothing may reconcile again: not waited for)
    version = paused["metadata"]["resourceVersion"]
    eventually(lambda: observed.controller.reconciled(f"{ns}/{name}", version), what="paused")
    calls, written = sum(prov.calls.values()), writes(cluster)
    cluster.patch(HOSTS, ns, name, {"spec": {"online": False}})
    # a reconcile read the change and, the host being paused, did nothing with it
    seen = wait_reconciled(observed.controller, cluster, ns, name, timeout=60)
    assert sum(prov.calls.values()) == calls  # Ironic was not asked anything
    assert writes(cluster) == {**written, "patch": written["patch"] + 1}  # but the test's
    now = cluster.get(HOSTS, ns, name)["metadata"]["resourceVersion"]
    assert now == seen["metadata"]["resourceVersion"]
    assert (api.node(f"{ns}~{name}") or {}).get("power_state") == "power on"

    cluster.patch(HOSTS, ns, name, {"metadata": {"annotations": {ann.PAUSED: None}}})
    eventually(lambda: host_status(cluster, ns, name).get("poweredOn") is False)
    assert (api.node(f"{ns}~{name}") or {}).get("power_state") == "power off"


def test_reboot_modes_and_a_keyed_hold_off_reach_ironic(
    api: IronicAPI, prov: IronicProvisioner, cluster: Cluster, observed: Observed
) -> None:
    """baremetal-operator's reboot annotations on a Host: a soft reboot is Ironic's
    ``soft rebooting``, a hard one ``rebooting``; a keyed one holds the node off (a soft
    power-off) until it is removed."""
    ns, name = "reboots", "host-0000"
    one_provisioned_host(cluster, observed, api, ns)
    node_name = f"{ns}~{name}"

    def annotate(**values: str | None) -> None:
        cluster.patch(HOSTS, ns, name, {"metadata": {"annotations": values}})

    def annotations() -> dict[str, str]:
        return dict(cluster.get(HOSTS, ns, name)["metadata"].get("annotations") or {})

    annotate(**{"reboot.metal3.io": ""})  # soft, as baremetal-operator's default
    eventually(lambda: "reboot.metal3.io" not in annotations(), what="the soft reboot done")
    annotate(**{ann.REBOOT: ""})  # hard, as this annotation always was
    eventually(lambda: ann.REBOOT not in annotations(), what="the hard reboot done")
    assert prov.actions[(node_name, "soft rebooting")] == 1
    assert prov.actions[(node_name, "rebooting")] == 1

    annotate(**{"reboot.metal3.io/remediation": ""})
    eventually(lambda: (api.node(node_name) or {}).get("power_state") == "power off")
    # counted once Ironic has answered, which may be after the node is already off
    eventually(lambda: prov.actions[(node_name, "soft power off")] >= 1, what="a soft power off")
    assert prov.actions[(node_name, "soft power off")] == 1
    annotate(**{"reboot.metal3.io/remediation": None})
    eventually(lambda: (api.node(node_name) or {}).get("power_state") == "power on")
    eventually(lambda: host_status(cluster, ns, name).get("poweredOn") is True)
