"""Whose Ironic node a Host may drive, without a server: a node of the Host's name that
hoststate did not register (baremetal-operator's, in a shared Ironic) is refused before
anything is written to it, never deleted with the Host, and one an earlier version
registered is marked when the Host's own status names it. The same on a real Ironic:
``tests/ironic/test_node_ownership.py``."""

from __future__ import annotations

from dataclasses import replace

import pytest

from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.provisioning.ironic.ownership import OWNER, Claim, claim
from state_controller.provisioning.results import Outcome
from testbed.ironic_wire import host_view, on_wire

UUID = "5b7a3c2e-8f1d-4a6b-9c0e-2d4f6a8b0c1e"
NODE = {"uuid": UUID, "name": "ns~host-0000", "provision_state": "active",
        "power_state": "power on"}  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "provider_id", "expected"),
    [
        ({OWNER: "ns/host-0000"}, "", Claim.OURS),
        ({}, UUID, Claim.UNMARKED_OURS),
        ({}, "", Claim.FOREIGN),
        (None, "", Claim.FOREIGN),
        ({OWNER: "other/host-0000"}, UUID, Claim.FOREIGN),
        ({}, "another-uuid", Claim.FOREIGN),
    ],
)
def test_a_node_is_the_hosts_by_its_mark_or_by_the_id_its_status_records(
    extra: dict[str, str] | None, provider_id: str, expected: Claim
) -> None:
    node = dict(NODE, extra=extra)
    assert claim(node, replace(host_view(), provider_id=provider_id)) is expected


def writes(sent: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(method, url) for method, url in sent if method != "GET"]


def test_an_unmarked_node_of_the_hosts_name_is_refused_and_never_written() -> None:
    prov = IronicProvisioner("http://ironic.example:6385")
    wire = on_wire(prov, {"GET /v1/nodes/": (200, dict(NODE, extra={}))})
    view = host_view()
    for call in (
        lambda: prov.register(view, credentials_changed=True),
        lambda: prov.power(view, on=False),
        lambda: prov.deprovision(view),
        lambda: prov.provision(view),
    ):
        result = call()
        assert result.outcome is Outcome.FAILED, result
        assert "hoststate did not register" in result.message
        assert "state-controller adopt baremetalhosts host-0000 -n ns" in result.message
    for call in (lambda: prov.delete(view), lambda: prov.detach(view)):
        assert call().outcome is Outcome.COMPLETE  # not the Host's: nothing of it to remove
    assert writes(wire.sent) == []


def test_an_earlier_versions_node_is_marked_when_the_hosts_status_names_it() -> None:
    prov = IronicProvisioner("http://ironic.example:6385")
    wire = on_wire(
        prov,
        {
            "GET /v1/nodes/": (200, dict(NODE, extra={})),
            f"PATCH /v1/nodes/{UUID}": (200, NODE),
        },
    )
    result = prov.register(host_view(UUID), credentials_changed=False)
    assert result.outcome is Outcome.COMPLETE and result.provider_id == UUID, result
    assert writes(wire.sent) == [("PATCH", f"{prov.client.url}/v1/nodes/{UUID}")]


def test_a_new_node_carries_the_mark() -> None:
    prov = IronicProvisioner("http://ironic.example:6385", driver="fake-hardware")
    created = dict(NODE, provision_state="enroll", extra={OWNER: "ns/host-0000"})
    wire = on_wire(prov, {"POST /v1/nodes": (201, created), "PUT /v1/nodes/": (202, {})})
    bodies: list[object] = []
    request = wire.request

    def keep(method: str, url: str, **kw: object) -> object:
        if method == "POST":
            bodies.append(kw.get("body"))
        return request(method, url, **kw)

    wire.request = keep  # type: ignore[method-assign,assignment]
    prov.register(host_view(), credentials_changed=True)
    assert bodies and b'"extra": {"hoststate_host": "ns/host-0000"}' in bodies[0]  # type: ignore[operator]
