"""A backend ID is checked before it goes into a URL: a tenant can write one in the
hoststate.io/status annotation, and ``/../`` or ``?`` in a path would reach another
endpoint of Ironic (urllib3 resolves dot segments before sending)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from state_controller.api import annotations as ann
from state_controller.books.journal import INVALID_ANNOTATION, Notice
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.provisioning.results import Outcome
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.hand_driven import HandDriven
from testbed.ironic_wire import host_view, on_wire

KEY = "ns/host-0000"
EVIL = ("../../v1/ports?address=x", "u-1/../../v1/drivers", "..", "u-1?fields=driver_info")
UUID = "5b7a3c2e-8f1d-4a6b-9c0e-2d4f6a8b0c1e"


@pytest.mark.parametrize("provider_id", EVIL)
def test_an_id_that_is_no_node_id_is_refused_before_any_request(provider_id: str) -> None:
    prov = IronicProvisioner("http://ironic.example:6385")
    wire = on_wire(prov)
    result = prov.register(host_view(provider_id), credentials_changed=False)
    assert result.outcome is Outcome.FAILED, result
    assert "status.provisioning.id" in result.message and ann.STATUS in result.message
    assert "a UUID or an Ironic node name" in result.message
    assert [url for _, url in wire.sent if "/nodes/" in url] == []


def test_a_node_id_and_name_go_in_the_path_as_one_segment() -> None:
    prov = IronicProvisioner("http://ironic.example:6385")
    node = {"uuid": UUID, "name": "ns~host-0000", "provision_state": "manageable",
            "extra": {"hoststate_host": KEY}}  # fmt: skip
    wire = on_wire(prov, {f"GET /v1/nodes/{UUID}?": (200, node)})
    result = prov.register(host_view(UUID), credentials_changed=False)
    assert result.provider_id == UUID, result
    assert ("GET", f"{prov.client.url}/v1/nodes/{UUID}?fields=") in [
        (m, u.split("fields=")[0] + "fields=") for m, u in wire.sent
    ]
    # a uuid read back from Ironic with a character out of its own charset
    prov = IronicProvisioner("http://ironic.example:6385")
    wire = on_wire(prov, {"GET /v1/nodes/": (200, dict(node, uuid="x/../../v1/chassis"))})
    result = prov.register(replace(host_view(UUID), provider_id=""), credentials_changed=True)
    assert result.outcome is Outcome.FAILED and "Ironic's node uuid" in result.message
    assert [url for _, url in wire.sent if "chassis" in url] == []


@pytest.mark.parametrize("provider_id", EVIL)
def test_the_status_annotation_with_such_an_id_is_refused_naming_the_field(
    provider_id: str,
) -> None:
    s = HandDriven()
    s.add_secret(secret_manifest("ns", "host-0000-bmc", "admin", "pw"))
    manifest = host_manifest("ns", 0)
    saved = {"provisioning": {"state": "provisioned", "id": provider_id}}
    manifest["metadata"]["annotations"] = {ann.STATUS: json.dumps(saved)}
    s.create(manifest)
    s.reconcile(KEY)
    book = s.reconciler.books[KEY]
    assert book.facts.provider_id != provider_id  # never taken in
    entries, _ = book.journal.since(0)
    [notice] = [e for e in entries if isinstance(e, Notice) and e.reason == INVALID_ANNOTATION]
    assert ann.STATUS in notice.message and "status.provisioning.id" in notice.message
    assert "a UUID or an Ironic node name" in notice.message
