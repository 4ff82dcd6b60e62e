"""Addresses no Host may send Ironic to are refused before Ironic hears of them.

A Host names the BMC, the image and the checksum file Ironic's conductor then contacts
from inside the cluster; by default none of them may be loopback, link-local (the cloud's
metadata service) or a ``file://`` path, and an operator's allowlist narrows the rest.
"""

from __future__ import annotations

from typing import Any

import pytest

from state_controller.api.reach import ALLOW_BMC, Allowlist, Reach
from state_controller.cluster.interface import HOSTS, SECRETS, Cluster
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.ironic_server import IronicServer
from tests.ironic.helpers import (
    IronicAPI,
    eventually,
    host_status,
    new_cluster,
    provisioner,
    running,
)

pytestmark = pytest.mark.slow

NS = "reach"
IMAGE = {"url": "http://images.example/os.img", "checksum": "0" * 64, "checksumType": "sha256"}


def create_host(cluster: Cluster, index: int, **spec: Any) -> str:
    host = host_manifest(NS, index, image=False)
    name = host["metadata"]["name"]
    if "bmc_address" in spec:
        host["spec"]["bmc"]["address"] = spec.pop("bmc_address")
    host["spec"].update(spec)
    cluster.create(SECRETS, secret_manifest(NS, f"{name}-bmc", "admin", "pw"))
    cluster.create(HOSTS, host)
    return name


def refused_with(cluster: Cluster, name: str, words: str) -> str:
    def refused() -> str | None:
        status = host_status(cluster, NS, name)
        message = str(status.get("errorMessage", ""))
        if status.get("errorType") == "registration error" and words in message:
            return message
        return None

    message: str = eventually(refused, what=f"{name} refused for {words!r}")
    return message


def test_metadata_loopback_and_file_addresses_never_reach_ironic(
    ironic: IronicServer, api: IronicAPI
) -> None:
    prov = provisioner(ironic.url, {})
    cluster = new_cluster()
    with running(cluster, prov):
        metadata = create_host(
            cluster, 0, bmc_address="redfish+http://169.254.169.254/redfish/v1/Systems/1"
        )
        conductor = create_host(cluster, 1, bmc_address="ipmi://2130706433")  # 127.0.0.1
        local_file = create_host(cluster, 2, image=dict(IMAGE, url="file:///etc/ironic/x.img"))
        checksum = create_host(
            cluster, 3, image=dict(IMAGE, checksum=f"{ironic.url}/v1/nodes?sha256")
        )
        allowed = create_host(cluster, 4)  # a BMC name of the demo's zone: let through

        message = refused_with(cluster, metadata, "spec.bmc.address: 169.254.169.254")
        assert "link-local" in message and ALLOW_BMC in message
        assert "loopback" in refused_with(cluster, conductor, "spec.bmc.address: 2130706433")
        assert "--allow-file-images" in refused_with(cluster, local_file, "spec.image.url")
        assert "loopback" in refused_with(cluster, checksum, "spec.image.checksum: 127.0.0.1")
        eventually(lambda: api.node(f"{NS}~{allowed}") is not None, what="the allowed host")

    names = {node["name"] for node in api.nodes()}
    assert f"{NS}~{allowed}" in names
    for refused in (metadata, conductor, local_file, checksum):
        assert f"{NS}~{refused}" not in names  # nothing was sent to Ironic for it


def test_an_allowlist_refuses_every_other_bmc(ironic: IronicServer, api: IronicAPI) -> None:
    prov = provisioner(ironic.url, {})
    cluster = new_cluster()
    only_zone = Reach(bmc=Allowlist.parse(["*.bmc.example", "192.0.2.0/24"], ALLOW_BMC))
    with running(cluster, prov, reach=only_zone):
        outside = create_host(cluster, 0)  # bmc-0000.demo.example: not in the zone
        inside = create_host(
            cluster, 1, bmc_address="redfish://rack-1.bmc.example/redfish/v1/Systems/1"
        )
        by_address = create_host(cluster, 2, bmc_address="ipmi://192.0.2.10:623")
        message = refused_with(cluster, outside, "spec.bmc.address: bmc-0000.demo.example")
        assert "*.bmc.example, 192.0.2.0/24" in message
        for name in (inside, by_address):
            eventually(lambda name=name: api.node(f"{NS}~{name}") is not None, what=name)
    assert api.node(f"{NS}~{outside}") is None
