"""manifests/' ValidatingAdmissionPolicy: a Host may name as its BMC credentials only a
Secret its author may read.

On the session's control plane with manifests/ applied: a tenant (impersonated with
``kubectl --as=tenant``, as the API server's authorizer then sees that user) may create
Hosts in its namespace and get one Secret by name. The API server admits its Host that
names that Secret, refuses one naming another Secret (and a change of the name to it)
with the message naming the field, and leaves updates that keep the name alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from state_controller.simulation.fleet import host_manifest
from testbed.control_plane import ControlPlane
from testbed.tenants import TENANT, ok, run, tenant_namespace
from tests.conftest import wait_for

NS = "tenant-a"
POLICY = "hoststate-bmc-credentials-readable"
POLICIES = (  # every admission policy manifests/ installs
    POLICY,
    "hoststate-host-data-readable",
    "hoststate-secret-destinations",
    "hoststate-controller-marks",
    "hoststate-node-links",
)
ROOT = Path(__file__).resolve().parents[2]


def _host(name: str, secret: str) -> str:
    host = host_manifest(NS, 0)
    host["metadata"]["name"] = name
    host["spec"]["bmc"]["credentialsName"] = secret
    return json.dumps(host)


@pytest.fixture
def tenant(control_plane: ControlPlane, manifests: Any) -> Any:
    """A namespace where ``tenant`` may write Hosts and get only the Secret ``tenant-bmc``."""
    objects = tenant_namespace(NS, ["tenant-bmc"])
    for name in ("tenant-bmc", "platform-bmc"):
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": name,
                    "namespace": NS,
                    "labels": {"hoststate.io/bmc-credentials": "true"},
                },
                "stringData": {"username": "admin", "password": f"{name}-password"},
            }
        )
    ok(control_plane, "apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    yield control_plane
    run(control_plane, "delete", "namespace", NS, "--wait=false")


def test_the_policies_are_installed(control_plane: ControlPlane, manifests: Any) -> None:
    """Every admission policy file of manifests/base/ is in its kustomization, and each
    policy is bound to deny; none on Hosts matches hosts/status (the controller's writes)."""
    base = ROOT / "manifests" / "base"
    listed = yaml.safe_load((base / "kustomization.yaml").read_text())["resources"]
    files = sorted(base.glob("*-policy.yaml"))
    assert {path.name for path in files} <= set(listed), (files, listed)
    docs = [doc for path in files for doc in yaml.safe_load_all(path.read_text()) if doc]
    named = {d["metadata"]["name"] for d in docs if d["kind"] == "ValidatingAdmissionPolicy"}
    assert named == set(POLICIES)
    for name in POLICIES:
        policy = json.loads(
            ok(control_plane, "get", "validatingadmissionpolicy", name, "-o", "json")
        )
        binding = json.loads(
            ok(control_plane, "get", "validatingadmissionpolicybinding", name, "-o", "json")
        )
        assert binding["spec"] == {"policyName": name, "validationActions": ["Deny"]}
        assert policy["spec"]["failurePolicy"] == "Fail", name
        (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
        assert rule["resources"] in (["hosts"], ["nodes", "nodes/status"]), name
        assert not (policy.get("status") or {}).get("typeChecking", {}).get("expressionWarnings")


def test_a_tenant_may_name_only_a_secret_it_may_read(tenant: ControlPlane) -> None:
    cp = tenant
    assert run(cp, "auth", "can-i", "get", "secret/platform-bmc", "-n", NS, TENANT).returncode
    assert not run(cp, "auth", "can-i", "create", "hosts.hoststate.io", "-n", NS, TENANT).returncode

    def refused() -> str | None:
        """The refusal of a Host naming platform-bmc (None while the policy is not yet in
        force: the API server loads a new policy within a second or so)."""
        done = run(cp, "create", "-f", "-", TENANT, stdin=_host("theirs", "platform-bmc"))
        if done.returncode == 0:
            ok(cp, "delete", "host.hoststate.io", "theirs", "-n", NS)
            return None
        return done.stderr

    message = wait_for(refused, what="the policy refusing a Host naming an unreadable Secret")
    assert f"ValidatingAdmissionPolicy '{POLICY}'" in message, message
    assert (
        f'spec.bmc.credentialsName: you may not get the Secret "platform-bmc" in namespace "{NS}"'
    ) in message
    assert "platform-bmc-password" not in message

    ok(cp, "create", "-f", "-", TENANT, stdin=_host("mine", "tenant-bmc"))
    # naming the other Secret in an update is refused too
    patch = json.dumps({"spec": {"bmc": {"credentialsName": "platform-bmc"}}})
    changed = run(
        cp, "patch", "host.hoststate.io", "mine", "-n", NS, "--type=merge", "-p", patch, TENANT
    )
    assert changed.returncode != 0 and "spec.bmc.credentialsName" in changed.stderr
    # an update that keeps the name is not judged again: a Host an operator made for the
    # tenant with platform-bmc, and the tenant labelling it
    ok(cp, "create", "-f", "-", stdin=_host("given", "platform-bmc"))
    ok(cp, "label", "host.hoststate.io", "given", "-n", NS, "team=a", TENANT)
