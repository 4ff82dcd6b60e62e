"""manifests/' ValidatingAdmissionPolicy for data Secrets: a Host may name as its user,
network or meta data only Secrets its author may read.

On the session's control plane with manifests/ applied, a tenant (``kubectl
--as=tenant``) that may write Hosts and get one data Secret by name: its Host naming
that Secret is admitted, one naming another is refused with the field in the message,
and an update that keeps the names is not judged again.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
import yaml

from state_controller.simulation.fleet import host_manifest
from tests.conftest import wait_for
from tests.support.control_plane import ControlPlane

NS = "tenant-data"
TENANT = "--as=tenant"
POLICY = "hoststate-host-data-readable"


def _run(
    cp: ControlPlane, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cp.kubectl_argv(*args), input=stdin, capture_output=True, text=True, timeout=60
    )


def _ok(cp: ControlPlane, *args: str, stdin: str | None = None) -> str:
    done = _run(cp, *args, stdin=stdin)
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def _host(name: str, **refs: str) -> str:
    host = host_manifest(NS, 0)
    host["metadata"]["name"] = name
    for field_name, secret in refs.items():
        host["spec"][field_name] = {"name": secret}
    return json.dumps(host)


@pytest.fixture
def tenant(control_plane: ControlPlane, manifests: Any) -> Any:
    """A namespace where ``tenant`` may write Hosts and get only the Secret ``tenant-ud``."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "tenant", "namespace": NS},
            "rules": [
                {
                    "apiGroups": ["hoststate.io"],
                    "resources": ["hosts"],
                    "verbs": ["get", "list", "create", "update", "patch", "delete"],
                },
                {
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "resourceNames": ["tenant-ud", "host-0000-bmc"],
                    "verbs": ["get"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "tenant", "namespace": NS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "tenant"},
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "tenant"}
            ],
        },
    ]
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
    _ok(control_plane, "apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    yield control_plane
    _run(control_plane, "delete", "namespace", NS, "--wait=false")


def test_a_tenant_may_name_only_data_secrets_it_may_read(tenant: ControlPlane) -> None:
    cp = tenant

    def refused() -> str | None:
        """The refusal of a Host naming platform-ud (None while the policy is not yet in
        force: the API server loads a new policy within a second or so)."""
        done = _run(cp, "create", "-f", "-", TENANT, stdin=_host("theirs", userData="platform-ud"))
        if done.returncode == 0:
            _ok(cp, "delete", "host.hoststate.io", "theirs", "-n", NS)
            return None
        return done.stderr

    message = wait_for(refused, what="the policy refusing a Host naming an unreadable Secret")
    assert f"ValidatingAdmissionPolicy '{POLICY}'" in message, message
    assert (
        f'spec.userData.name: you may not get the Secret "platform-ud" in namespace "{NS}"'
    ) in message
    assert "platform-ud-contents" not in message

    _ok(cp, "create", "-f", "-", TENANT, stdin=_host("mine", userData="tenant-ud"))
    patch = json.dumps({"spec": {"metaData": {"name": "platform-ud"}}})
    changed = _run(
        cp, "patch", "host.hoststate.io", "mine", "-n", NS, "--type=merge", "-p", patch, TENANT
    )
    assert changed.returncode != 0 and "spec.metaData.name" in changed.stderr
    # an update that keeps the names is not judged again
    _ok(cp, "create", "-f", "-", stdin=_host("given", networkData="platform-ud"))
    _ok(cp, "label", "host.hoststate.io", "given", "-n", NS, "team=a", TENANT)
