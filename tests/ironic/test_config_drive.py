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
from tests.ironic.helpers import IronicAPI, eventually, state_of
from tests.support.ironic_server import IronicServer

pytestmark = pytest.mark.slow

NS = "drive"
USER_DATA = "#cloud-config\nruncmd: [echo configured-by-hoststate]\n"
NETWORK_DATA = {
    "links": [{"id": "eth0", "type": "phy", "ethernet_mac_address": "52:54:00:00:00:01"}],
    "networks": [{"id": "n0", "link": "eth0", "type": "ipv4_dhcp"}],
    "services": [],
}
META_DATA = {"local-hostname": "drive-0"}


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


def test_the_config_drive_holds_the_secrets_contents(
    api: IronicAPI,
    ironic: IronicServer,
    cluster: Cluster,
    observed: Observed,
) -> None:
    cluster.create(SECRETS, _secret("ud", "userData", USER_DATA))
    cluster.create(SECRETS, _secret("nd", "networkData", json.dumps(NETWORK_DATA)))
    cluster.create(SECRETS, _secret("md", "metaData", "local-hostname: drive-0\n"))
    host = host_manifest(NS, 0)
    host["spec"].update(
        userData={"name": "ud"}, networkData={"name": "nd"}, metaData={"name": "md"}
    )
    cluster.create(SECRETS, secret_manifest(NS, "host-0000-bmc", "admin", "pw"))
    cluster.create(HOSTS, host)
    eventually(
        lambda: state_of(cluster, NS, "host-0000") == "provisioned",
        timeout=120,
        what="the host provisioned",
    )
    node = api.node(f"{NS}~host-0000")
    assert node is not None and node["instance_info"]["configdrive"] == "******"  # masked
    assert _stored_drive(ironic, node["name"]) == {
        "user_data": USER_DATA,
        "network_data": NETWORK_DATA,
        "meta_data": META_DATA,
    }
