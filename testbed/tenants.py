"""A tenant on the session's control plane, as the admission policy tests need one: a
namespace where the user ``tenant`` (``kubectl --as=tenant``) may write Hosts and get
only the Secrets named, and kubectl run as the admin or as that tenant."""

from __future__ import annotations

import subprocess
from typing import Any

from testbed.control_plane import ControlPlane

TENANT = "--as=tenant"


def run(cp: ControlPlane, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cp.kubectl_argv(*args), input=stdin, capture_output=True, text=True, timeout=60
    )


def ok(cp: ControlPlane, *args: str, stdin: str | None = None) -> str:
    done = run(cp, *args, stdin=stdin)
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def tenant_namespace(namespace: str, readable: list[str]) -> list[dict[str, Any]]:
    """The namespace, and the Role and RoleBinding that let ``tenant`` write its Hosts
    and get only the Secrets ``readable``."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "tenant", "namespace": namespace},
            "rules": [
                {
                    "apiGroups": ["hoststate.io"],
                    "resources": ["hosts"],
                    "verbs": ["get", "list", "create", "update", "patch", "delete"],
                },
                {
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "resourceNames": readable,
                    "verbs": ["get"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "tenant", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "tenant"},
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "tenant"}
            ],
        },
    ]
