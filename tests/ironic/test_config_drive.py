"""User, network and meta data reach a real Ironic as the config drive of the deploy
request: read back from Ironic's own record of the node (its API masks the drive), it
holds exactly what the Host's Secrets hold. (fake-hardware keeps the drive as it was
sent; a real deploy interface builds the ISO from it.)"""

from __future__ import annotations

import base64
import json
import sqlite3
from typing import Any

import pytest

from state_controller.cluster.interface import HOSTS, SECRETS, Cluster
from state_controller.simulation.fleet import host_manifest, secret_manifest
from state_controller.wiring import Observed
from testbed.ironic_server import IronicServer
from tests.ironic.helpers import IronicAPI, eventually, state_of

pytestmark = pytest.mark.slow

NS = "drive"
USER_DATA = "#cloud-config\nruncmd: [echo configured-by-hoststate]\n"
NETWORK_DATA = {
    "links": [{"id": "eth0", "type": "phy", "ethernet_mac_address": "52:54:00:00:00:01"}],
    "networks": [{"id": "n0", "link": "eth0", "type": "ipv4_dhcp"}],
    "services": [],
}
META_DATA = {"local-hostname": "drive-0"}
# as Ironic's node.network_data schema wants it (a network needs its network_id)
RAMDISK_NETWORK = {
    "links": [{"id": "eth0", "type": "phy", "ethernet_mac_address": "52:54:00:00:00:01"}],
    "networks": [{"id": "n0", "link": "eth0", "network_id": "prov", "type": "ipv4_dhcp"}],
    "services": [],
}


def _secret(name: str, key: str, text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NS, "labels": {"hoststate.io/host-data": "true"}},
        "data": {key: base64.b64encode(text.encode()).decode()},
    }


def _stored_drive(ironic: IronicServer, node: str) -> Any:
    """The config drive Ironic keeps in the node's instance_info, as Ironic stored it."""
    with sqlite3.connect(f"file:{ironic.db_path}?mode=ro", uri=True) as db:
        (raw,) = db.execute("SELECT instance_info FROM nodes WHERE name = ?", (node,)).fetchone()
    return json.loads(raw)["configdrive"]


def _provisioned(cluster: Cluster, api: IronicAPI, **spec: Any) -> dict[str, Any]:
    """host-0000 with ``spec`` laid over the demo's, provisioned: its Ironic node."""
    host = host_manifest(NS, 0)
    host["spec"].update(spec)
    cluster.create(SECRETS, secret_manifest(NS, "host-0000-bmc", "admin", "pw"))
    cluster.create(HOSTS, host)
    eventually(
        lambda: state_of(cluster, NS, "host-0000") == "provisioned",
        timeout=120,
        what="the host provisioned",
    )
    node = api.node(f"{NS}~host-0000")
    assert node is not None
    return node


def test_the_config_drive_holds_the_secrets_contents(
    api: IronicAPI,
    ironic: IronicServer,
    cluster: Cluster,
    observed: Observed,
) -> None:
    cluster.create(SECRETS, _secret("ud", "userData", USER_DATA))
    cluster.create(SECRETS, _secret("nd", "networkData", json.dumps(NETWORK_DATA)))
    cluster.create(SECRETS, _secret("md", "metaData", "local-hostname: drive-0\n"))
    node = _provisioned(
        cluster, api, userData={"name": "ud"}, networkData={"name": "nd"}, metaData={"name": "md"}
    )
    assert node["instance_info"]["configdrive"] == "******"  # masked
    assert _stored_drive(ironic, node["name"]) == {
        "user_data": USER_DATA,
        "network_data": NETWORK_DATA,
        "meta_data": META_DATA,
    }


def test_the_ramdisks_network_architecture_and_default_meta_data_reach_ironic(
    api: IronicAPI,
    ironic: IronicServer,
    cluster: Cluster,
    observed: Observed,
) -> None:
    """No metaData: the drive names the host as baremetal-operator's does. The
    preprovisioning network data is the node's network_data (for the deploy ramdisk) and
    the drive's; architecture and disablePowerOff are node fields."""
    cluster.create(SECRETS, _secret("ramdisk-net", "networkData", json.dumps(RAMDISK_NETWORK)))
    node = _provisioned(
        cluster,
        api,
        preprovisioningNetworkDataName="ramdisk-net",
        architecture="aarch64",
        disablePowerOff=True,
    )
    assert node["network_data"] == RAMDISK_NETWORK
    assert node["properties"]["cpu_arch"] == "aarch64"
    assert node["disable_power_off"] is True
    drive = _stored_drive(ironic, node["name"])
    assert drive["network_data"] == RAMDISK_NETWORK
    assert drive["meta_data"] == {
        "uuid": node["uuid"],
        "local-hostname": "host-0000",
        "local_hostname": "host-0000",
        "name": "host-0000",
        "hoststate-name": "host-0000",
        "hoststate-namespace": NS,
        "metal3-name": "host-0000",
        "metal3-namespace": NS,
    }


def test_network_data_ironic_refuses_is_named_by_its_field(
    api: IronicAPI, cluster: Cluster, observed: Observed
) -> None:
    cluster.create(SECRETS, _secret("ramdisk-net", "networkData", json.dumps(NETWORK_DATA)))
    host = host_manifest(NS, 0)
    host["spec"]["preprovisioningNetworkDataName"] = "ramdisk-net"
    cluster.create(SECRETS, secret_manifest(NS, "host-0000-bmc", "admin", "pw"))
    cluster.create(HOSTS, host)
    message = eventually(
        lambda: (cluster.get(HOSTS, NS, "host-0000").get("status") or {}).get("errorMessage"),
        timeout=60,
        what="the registration error",
    )
    assert message.startswith("spec.preprovisioningNetworkDataName: Ironic refused the network")
    assert api.node(f"{NS}~host-0000") is None  # nothing created
