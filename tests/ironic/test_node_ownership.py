"""Whose Ironic node a Host drives, on a real Ironic shared with baremetal-operator.

baremetal-operator names its nodes ``namespace~name`` as hoststate does, so a Host named
like a BareMetalHost finds that machine's node by name. It takes only a node marked as
its own (``extra.hoststate_host``): what the tenant writes in the ``hoststate.io/status``
annotation (the node's UUID, credentials said to be checked) takes nothing, sends nothing
to the node, and deleting the Host leaves the machine as it was.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from state_controller.api import annotations as ann
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, SECRETS, NotFound
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.provisioning.ironic.ownership import OWNER
from state_controller.provisioning.results import Outcome
from state_controller.simulation.fleet import IMAGE, host_manifest, secret_manifest
from tests.ironic.helpers import (
    IronicAPI,
    eventually,
    host_status,
    provisioner,
    running,
    settled,
    view_of,
)

pytestmark = pytest.mark.slow

NS = "shared"
KEPT = ("uuid", "provision_state", "power_state", "provision_updated_at", "driver_info", "extra")


def _move(api: IronicAPI, uuid: str, target: str, reached: str) -> None:
    status, _, text = api.request("PUT", f"/v1/nodes/{uuid}/states/provision", {"target": target})
    assert status == 202, text
    eventually(
        lambda: (
            (api.node(uuid) or {}).get("provision_state") == reached
            and not (api.node(uuid) or {}).get("reservation")
        ),
        what=f"node {uuid} {reached}",
    )


def node_made_elsewhere(api: IronicAPI, name: str, *, running_os: bool) -> str:
    """A node as baremetal-operator (or an earlier hoststate) leaves it, without hoststate's
    mark: ``manageable``, or running its OS (adopted ``active``) and powered on."""
    body = {
        "name": name,
        "driver": "fake-hardware",
        "driver_info": {"redfish_address": "https://192.0.2.10", "redfish_username": "bmo-admin",
                        "redfish_password": "bmo-pass"},
        "properties": {"capabilities": "boot_mode:uefi"},
        "automated_clean": False,
    }  # fmt: skip
    status, node, text = api.request("POST", "/v1/nodes", body)
    assert status == 201, text
    uuid = str(node["uuid"])
    _move(api, uuid, "manage", "manageable")
    if running_os:
        _move(api, uuid, "adopt", "active")
        status, _, text = api.request(
            "PUT", f"/v1/nodes/{uuid}/states/power", {"target": "power on"}
        )
        assert status == 202, text
        eventually(lambda: (api.node(uuid) or {}).get("power_state") == "power on")
    return uuid


def kept(api: IronicAPI, uuid: str) -> dict[str, Any]:
    node = api.node(uuid) or {}
    return {field: node.get(field) for field in KEPT}


def writes(prov: IronicProvisioner) -> dict[str, int]:
    return {call: n for call, n in prov.calls.items() if not call.startswith("GET")}


def test_a_host_named_like_another_controllers_node_neither_takes_nor_deletes_it(
    api: IronicAPI, prov: IronicProvisioner, cluster: EmbeddedCluster
) -> None:
    """The tenant's Host says, in its status annotation, that it is provisioned on the
    node's UUID with credentials already checked, and asks for the power off: it is
    refused with the way to hand a machine over, and Ironic is sent nothing."""
    uuid = node_made_elsewhere(api, f"{NS}~host-0000", running_os=True)
    before = kept(api, uuid)
    secret = cluster.create(SECRETS, secret_manifest(NS, "host-0000-bmc", "tenant", "guess"))
    forged = {
        "provisioning": {"state": "provisioned", "id": uuid, "image": dict(IMAGE)},
        "poweredOn": True,
        "operationalStatus": "OK",
        "goodCredentials": {
            "name": "host-0000-bmc",
            "version": secret["metadata"]["resourceVersion"],
        },
    }
    host = host_manifest(NS, 0)
    host["spec"]["online"] = False
    host["metadata"]["annotations"] = {
        ann.STATUS: json.dumps(forged),
        ann.ADOPTED_FROM: "4a1f0b8e-0000-4000-8000-000000000000",
    }
    with running(cluster, prov) as observed:
        cluster.create(HOSTS, host)
        eventually(
            lambda: (
                "state-controller adopt"
                in host_status(cluster, NS, "host-0000").get("errorMessage", "")
            ),
            what="the registration refused",
        )
        told = host_status(cluster, NS, "host-0000")
        assert told["errorType"] == "provisioned registration error", told
        assert "hoststate did not register" in told["errorMessage"]
        assert f"adopt baremetalhosts host-0000 -n {NS}" in told["errorMessage"]
        assert not told["provisioning"].get("id")  # the annotation's ID was never taken in
        assert kept(api, uuid) == before  # not powered off, no credentials, no mark
        assert writes(prov) == {}

        cluster.delete(HOSTS, NS, "host-0000")

        def gone() -> bool:
            try:
                cluster.get(HOSTS, NS, "host-0000")
            except NotFound:
                return True
            return False

        eventually(gone, what="the Host deleted")
        eventually(observed.controller.idle)
    assert kept(api, uuid) == before  # neither torn down nor deleted
    assert writes(prov) == {}


def test_an_earlier_versions_node_is_taken_only_by_the_host_whose_status_names_it(
    api: IronicAPI, prov: IronicProvisioner
) -> None:
    """A node an earlier hoststate registered has no mark: the Host whose status (written
    by the controller, never restored from the annotation) records its UUID takes it and
    marks it; a Host that only shares its name does not. A node marked for another Host
    is refused even with its UUID."""
    uuid = node_made_elsewhere(api, "legacy~host-0000", running_os=False)
    view = view_of("legacy", 0)
    refused = prov.register(view, credentials_changed=True)
    assert refused.outcome is Outcome.FAILED, refused
    assert "hoststate did not register" in refused.message
    assert OWNER not in (api.node(uuid) or {}).get("extra", {})

    done = settled(
        lambda: prov.register(replace(view, provider_id=uuid), credentials_changed=True),
        "registered",
    )
    assert done.outcome is Outcome.COMPLETE and done.provider_id == uuid, done
    assert (api.node(uuid) or {})["extra"][OWNER] == "legacy/host-0000"
    again = prov.register(view, credentials_changed=False)  # marked: found by its name now
    assert again.outcome is Outcome.COMPLETE and again.provider_id == uuid, again

    status, _, text = api.request(
        "PATCH", f"/v1/nodes/{uuid}", [{"op": "add", "path": f"/extra/{OWNER}", "value": "x/y"}]
    )
    assert status == 200, text
    later = provisioner(api.url)  # a read is kept for the next call; this one reads anew
    other = later.register(replace(view, provider_id=uuid), credentials_changed=False)
    assert other.outcome is Outcome.FAILED and "marked as Host x/y's" in other.message, other


def test_nodes_hoststate_registers_carry_its_mark(api: IronicAPI, prov: IronicProvisioner) -> None:
    view = view_of("fresh", 0)
    done = settled(lambda: prov.register(view, credentials_changed=True), "registered")
    assert done.outcome is Outcome.COMPLETE, done
    assert (api.node("fresh~host-0000") or {})["extra"] == {OWNER: "fresh/host-0000"}


def test_upgrading_in_place_marks_the_nodes_the_hosts_statuses_record(
    api: IronicAPI, prov: IronicProvisioner, cluster: EmbeddedCluster
) -> None:
    """A Host that an earlier version provisioned: its status (the subresource, which the
    controller writes) records its unmarked node. The new controller takes the node as
    it is, marks it, and redoes nothing."""
    uuid = node_made_elsewhere(api, "upgrade~host-0000", running_os=True)
    secret = cluster.create(SECRETS, secret_manifest("upgrade", "host-0000-bmc", "admin", "pw-0"))
    made = cluster.create(HOSTS, host_manifest("upgrade", 0))
    version = secret["metadata"]["resourceVersion"]
    made["status"] = {
        "provisioning": {"state": "provisioned", "id": uuid, "image": dict(IMAGE)},
        "poweredOn": True,
        "operationalStatus": "OK",
        "goodCredentials": {"name": "host-0000-bmc", "version": version},
    }
    cluster.update_status(HOSTS, made)
    before = kept(api, uuid)
    with running(cluster, prov) as observed:
        eventually(
            lambda: (api.node(uuid) or {}).get("extra", {}).get(OWNER) == "upgrade/host-0000",
            what="the node marked",
        )
        eventually(observed.controller.idle)
        told = host_status(cluster, "upgrade", "host-0000")
        assert told["provisioning"]["state"] == "provisioned" and not told.get("errorType"), told
    after = kept(api, uuid)
    assert after.pop("extra") == {OWNER: "upgrade/host-0000"}
    assert after == {k: v for k, v in before.items() if k != "extra"}  # nothing redone
    assert prov.actions == {}  # no provision or power target asked
