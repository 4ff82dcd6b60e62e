"""manifests/' ValidatingAdmissionPolicy on where a Host's Secrets go: a change of the BMC
address, its certificate check, the boot MAC, the image or the custom deploy is admitted
only from a user who may read every Secret the Host names.

On the session's control plane with manifests/ applied, a tenant (``kubectl
--as=tenant``) that may write Hosts and get only its own Secrets: it may re-point its own
Host, but not one an operator made with the platform's BMC credentials or user data,
though it may still change anything else of that Host.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from state_controller.simulation.fleet import host_manifest
from testbed.control_plane import ControlPlane
from testbed.tenants import TENANT, ok, run, tenant_namespace
from tests.conftest import wait_for

NS = "tenant-dest"
POLICY = "hoststate-secret-destinations"
ELSEWHERE = "redfish://bmc.tenant.example/redfish/v1/Systems/1"


def _host(name: str, bmc: str, user_data: str) -> str:
    host = host_manifest(NS, 0)
    host["metadata"]["name"] = name
    host["spec"]["bmc"]["credentialsName"] = bmc
    host["spec"]["userData"] = {"name": user_data}
    return json.dumps(host)


def _secret(name: str, label: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NS, "labels": {label: "true"}},
        "stringData": {"value": f"{name}-contents"},
    }


@pytest.fixture
def tenant(control_plane: ControlPlane, manifests: Any) -> Any:
    """A namespace where ``tenant`` may write Hosts and get only ``tenant-bmc`` and
    ``tenant-ud``; the platform's Secrets beside them."""
    objects = tenant_namespace(NS, ["tenant-bmc", "tenant-ud"])
    for who in ("tenant", "platform"):
        objects.append(_secret(f"{who}-bmc", "hoststate.io/bmc-credentials"))
        objects.append(_secret(f"{who}-ud", "hoststate.io/host-data"))
    ok(control_plane, "apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    yield control_plane
    run(control_plane, "delete", "namespace", NS, "--wait=false")


def _patch(cp: ControlPlane, host: str, spec: dict[str, Any]) -> Any:
    body = json.dumps({"spec": spec})
    return run(cp, "patch", "host.hoststate.io", host, "-n", NS, "--type=merge", "-p", body, TENANT)


def test_only_a_user_who_may_read_a_hosts_secrets_may_change_where_they_go(
    tenant: ControlPlane,
) -> None:
    cp = tenant
    # made by an operator: the platform's BMC credentials, or the platform's user data
    ok(cp, "create", "-f", "-", stdin=_host("platform-bmc", "platform-bmc", "tenant-ud"))
    ok(cp, "create", "-f", "-", stdin=_host("platform-ud", "tenant-bmc", "platform-ud"))

    def refused() -> str | None:
        """The refusal of a new BMC address (None while the policy is not yet in force)."""
        done = _patch(cp, "platform-bmc", {"bmc": {"address": ELSEWHERE}})
        return done.stderr if done.returncode else None

    message = wait_for(refused, what="the policy refusing a new BMC address")
    assert f"ValidatingAdmissionPolicy '{POLICY}'" in message, message
    assert (
        'spec.bmc.address: you may not get the Secret "platform-bmc" '
        f'(spec.bmc.credentialsName) in namespace "{NS}", so you may not change where it is '
        "sent (spec.bmc.address)"
    ) in message, message
    assert "platform-bmc-contents" not in message

    image = {"url": "https://images.tenant.example/os.qcow2", "checksum": "a" * 64}
    for host, spec, field, secret in (
        ("platform-bmc", {"bmc": {"disableCertificateVerification": True}},
         "spec.bmc.disableCertificateVerification", "spec.bmc.credentialsName"),
        ("platform-ud", {"image": image}, "spec.image", "spec.userData.name"),
        ("platform-ud", {"customDeploy": {"method": "install_mine"}},
         "spec.customDeploy", "spec.userData.name"),
        ("platform-ud", {"bootMACAddress": "52:54:00:aa:bb:cc"},
         "spec.bootMACAddress", "spec.userData.name"),
    ):  # fmt: skip
        done = _patch(cp, host, spec)
        assert done.returncode != 0, (host, spec)
        assert f"{field}: you may not get the Secret" in done.stderr, done.stderr
        assert f"({secret})" in done.stderr, done.stderr

    # anything else of those Hosts is the tenant's to change
    assert _patch(cp, "platform-ud", {"online": False, "description": "mine"}).returncode == 0
    ok(cp, "label", "host.hoststate.io", "platform-bmc", "-n", NS, "team=a", TENANT)
    # and its own Host, whose Secrets it may read, it may point anywhere
    ok(cp, "create", "-f", "-", TENANT, stdin=_host("mine", "tenant-bmc", "tenant-ud"))
    moves: list[dict[str, Any]] = [
        {"bmc": {"address": ELSEWHERE, "disableCertificateVerification": True}},
        {"image": image, "bootMACAddress": "52:54:00:aa:bb:cc"},
        {"image": None, "customDeploy": {"method": "install_mine"}},
    ]
    for move in moves:
        done = _patch(cp, "mine", move)
        assert done.returncode == 0, done.stderr
