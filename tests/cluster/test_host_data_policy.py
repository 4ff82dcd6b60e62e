"""manifests/' ValidatingAdmissionPolicy for data Secrets: a Host may name as its user,
network, meta or preprovisioning network data only Secrets its author may read.

On the session's control plane with manifests/ applied, a tenant (``kubectl
--as=tenant``) that may write Hosts and get one data Secret by name: its Host naming
that Secret is admitted, one naming another is refused with the field in the message,
and an update that keeps the names is not judged again.
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

NS = "tenant-data"
POLICY = "hoststate-host-data-readable"


def _host(name: str, **refs: str) -> str:
    host = host_manifest(NS, 0)
    host["metadata"]["name"] = name
    for field_name, secret in refs.items():
        host["spec"][field_name] = {"name": secret}
    return json.dumps(host)


@pytest.fixture
def tenant(control_plane: ControlPlane, manifests: Any) -> Any:
    """A namespace where ``tenant`` may write Hosts and get only the Secret ``tenant-ud``."""
    objects = tenant_namespace(NS, ["tenant-ud", "host-0000-bmc"])
    for name in ("tenant-ud", "platform-ud"):
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": name,
                    "namespace": NS,
                    "labels": {"hoststate.io/host-data": "true"},
                },
                "stringData": {"userData": f"#cloud-config\n# {name}-contents\n"},
            }
        )
    ok(control_plane, "apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    yield control_plane
    run(control_plane, "delete", "namespace", NS, "--wait=false")


def test_a_tenant_may_name_only_data_secrets_it_may_read(tenant: ControlPlane) -> None:
    cp = tenant

    def refused() -> str | None:
        """The refusal of a Host naming platform-ud (None while the policy is not yet in
        force: the API server loads a new policy within a second or so)."""
        done = run(cp, "create", "-f", "-", TENANT, stdin=_host("theirs", userData="platform-ud"))
        if done.returncode == 0:
            ok(cp, "delete", "host.hoststate.io", "theirs", "-n", NS)
            return None
        return done.stderr

    message = wait_for(refused, what="the policy refusing a Host naming an unreadable Secret")
    assert f"ValidatingAdmissionPolicy '{POLICY}'" in message, message
    assert (
        f'spec.userData.name: you may not get the Secret "platform-ud" in namespace "{NS}"'
    ) in message
    assert "platform-ud-contents" not in message

    ok(cp, "create", "-f", "-", TENANT, stdin=_host("mine", userData="tenant-ud"))
    patch = json.dumps({"spec": {"metaData": {"name": "platform-ud"}}})
    changed = run(
        cp, "patch", "host.hoststate.io", "mine", "-n", NS, "--type=merge", "-p", patch, TENANT
    )
    assert changed.returncode != 0 and "spec.metaData.name" in changed.stderr
    # the deploy ramdisk's network data, the deployed OS's too when networkData is unset
    host = json.loads(_host("pre"))
    host["spec"]["preprovisioningNetworkDataName"] = "platform-ud"
    done = run(cp, "create", "-f", "-", TENANT, stdin=json.dumps(host))
    assert done.returncode != 0
    assert (
        f'spec.preprovisioningNetworkDataName: you may not get the Secret "platform-ud" in '
        f'namespace "{NS}"'
    ) in done.stderr, done.stderr
    patch = json.dumps({"spec": {"preprovisioningNetworkDataName": "platform-ud"}})
    changed = run(
        cp, "patch", "host.hoststate.io", "mine", "-n", NS, "--type=merge", "-p", patch, TENANT
    )
    assert changed.returncode != 0 and "spec.preprovisioningNetworkDataName" in changed.stderr
    patch = json.dumps({"spec": {"preprovisioningNetworkDataName": "tenant-ud"}})
    ok(cp, "patch", "host.hoststate.io", "mine", "-n", NS, "--type=merge", "-p", patch, TENANT)
    # an update that keeps the names is not judged again
    ok(cp, "create", "-f", "-", stdin=_host("given", networkData="platform-ud"))
    ok(cp, "label", "host.hoststate.io", "given", "-n", NS, "team=a", TENANT)
