"""manifests/' ValidatingAdmissionPolicies on the marks only the controller writes: a
Host's status copy, adoption and move marks and shard labels, and a Node's hoststate.io/
labels.

On the session's control plane with manifests/ applied: a tenant (``kubectl
--as=tenant``) that may write Hosts writes the annotations that ask for something but
none of the controller's marks; the controller's ServiceAccount, with its own Role bound
in the tenant's namespace, and the admin (as pivot and adopt run) write them. A node's
identity (``system:node:<name>``, group ``system:nodes``), allowed by RBAC to write its
Node, may not set, change or remove a hoststate.io/ label on it, by any route.
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

NS = "tenant-marks"
CONTROLLER = "--as=system:serviceaccount:hoststate-system:hoststate-controller"
NODE = "marks-node"
AS_NODE = (f"--as=system:node:{NODE}", "--as-group=system:nodes")
LINK = "hoststate.io/host"


def _host(name: str, annotations: dict[str, str], labels: dict[str, str]) -> str:
    host = host_manifest(NS, 0)
    host["metadata"].update(name=name, annotations=annotations, labels=labels)
    host["spec"]["bmc"]["credentialsName"] = "tenant-bmc"
    return json.dumps(host)


@pytest.fixture
def tenant(control_plane: ControlPlane, manifests: Any) -> Any:
    """A namespace where ``tenant`` may write Hosts, and the controller's ServiceAccount
    has the rules of its own Role in ``metal``."""
    objects = tenant_namespace(NS, ["tenant-bmc"])
    role = json.loads(ok(control_plane, "get", "role/hoststate-controller", "-n", "metal",
                         "-o", "json"))  # fmt: skip
    objects.append({**role, "metadata": {"name": "controller", "namespace": NS}})
    ok(control_plane, "apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    ok(control_plane, "create", "rolebinding", "controller", "--role=controller", "-n", NS,
       "--serviceaccount=hoststate-system:hoststate-controller")  # fmt: skip
    yield control_plane
    run(control_plane, "delete", "namespace", NS, "--wait=false")


def _meta(cp: ControlPlane, host: str, who: str, meta: dict[str, Any]) -> Any:
    body = json.dumps({"metadata": meta})
    return run(cp, "patch", "host.hoststate.io", host, "-n", NS, "--type=merge", "-p", body, who)


def test_only_the_controller_and_operators_write_a_hosts_marks(tenant: ControlPlane) -> None:
    cp = tenant
    status = json.dumps({"provisioning": {"state": "provisioned"}})

    def refused() -> str | None:
        """A tenant's Host carrying a status copy refused (None while the policy is not
        yet in force)."""
        forged = _host("forged", {"hoststate.io/status": status}, {})
        done = run(cp, "create", "-f", "-", TENANT, stdin=forged)
        if done.returncode == 0:
            ok(cp, "delete", "host.hoststate.io", "forged", "-n", NS)
            return None
        return done.stderr

    message = wait_for(refused, what="the policy refusing a tenant's status annotation")
    assert "ValidatingAdmissionPolicy 'hoststate-controller-marks'" in message, message
    assert (
        'metadata.annotations["hoststate.io/status"]: only the controller, and those who may '
        "update hosts/status (pivot, adopt), may set, change or remove it"
    ) in message, message

    # the annotations that ask for something are the tenant's
    ok(cp, "create", "-f", "-", TENANT, stdin=_host("mine", {}, {}))
    asks = {"paused": "", "detached": "", "inspect": "disabled", "reboot": "",
            "hardware-details": "{}"}  # fmt: skip
    asked = {"annotations": {f"hoststate.io/{k}": v for k, v in asks.items()}}
    assert _meta(cp, "mine", TENANT, asked).returncode == 0
    for meta, field in (
        ({"annotations": {"hoststate.io/adopted-from": "uid-1"}},
         'metadata.annotations["hoststate.io/adopted-from"]'),
        ({"annotations": {"hoststate.io/moved-from": "elsewhere"}},
         'metadata.annotations["hoststate.io/moved-from"]'),
        ({"labels": {"hoststate.io/shard": "hoststate-controller-0"}},
         'metadata.labels["hoststate.io/shard"]'),
        ({"labels": {"hoststate.io/drain": "true"}}, 'metadata.labels["hoststate.io/drain"]'),
    ):  # fmt: skip
        done = _meta(cp, "mine", TENANT, meta)
        assert done.returncode != 0 and f"{field}: only the controller" in done.stderr, meta

    # an operator writes them (pivot and adopt create Hosts so); the tenant may not take
    # them away, but may change the rest of that Host
    marks = {"hoststate.io/status": status, "hoststate.io/moved-from": "elsewhere",
             "hoststate.io/adopted-from": "uid-1"}  # fmt: skip
    ok(cp, "create", "-f", "-", stdin=_host("moved", marks, {"hoststate.io/shard": "s-0"}))
    done = _meta(cp, "moved", TENANT, {"annotations": {"hoststate.io/status": None}})
    assert done.returncode != 0 and "hoststate.io/status" in done.stderr
    assert _meta(cp, "moved", TENANT, {"labels": {"team": "a"}}).returncode == 0

    # the controller's own patches, as its ServiceAccount: a finalizer, the status copy
    # removed once restored, the sharder's labels set and taken away
    patches: list[dict[str, Any]] = [
        {"finalizers": ["hoststate.io/host"]},
        {"annotations": {"hoststate.io/status": None, "hoststate.io/reboot": None}},
        {"labels": {"hoststate.io/shard": "s-1", "hoststate.io/drain": "true"}},
        {"labels": {"hoststate.io/shard": None, "hoststate.io/drain": None}},
        {"finalizers": None},
    ]
    for own in patches:
        done = _meta(cp, "moved", CONTROLLER, own)
        assert done.returncode == 0, done.stderr


@pytest.fixture
def node_identity(control_plane: ControlPlane, manifests: Any) -> Any:
    """RBAC that lets ``system:node:marks-node`` write Nodes and their status, as a
    kubelet's rights (the Node authorizer's) let it write its own."""
    verbs, resources = "--verb=get,create,update,patch", "--resource=nodes,nodes/status"
    ok(control_plane, "create", "clusterrole", NODE, verbs, resources)
    ok(control_plane, "create", "clusterrolebinding", NODE, f"--clusterrole={NODE}",
       f"--user=system:node:{NODE}")  # fmt: skip
    yield control_plane
    run(control_plane, "delete", "node", NODE, "--ignore-not-found")
    run(control_plane, "delete", f"clusterrolebinding/{NODE}", f"clusterrole/{NODE}")


def _node(labels: dict[str, str]) -> str:
    return json.dumps(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": labels}}
    )


def test_a_node_may_not_write_its_own_hoststate_labels(node_identity: ControlPlane) -> None:
    cp = node_identity

    def refused() -> str | None:
        """A kubelet registering its Node with a link to a Host refused (None while the
        policy is not yet in force)."""
        done = run(cp, "create", "-f", "-", *AS_NODE, stdin=_node({LINK: "host-0001"}))
        if done.returncode == 0:
            ok(cp, "delete", "node", NODE)
            return None
        return done.stderr

    message = wait_for(refused, what="the policy refusing a kubelet's link label")
    assert "ValidatingAdmissionPolicy 'hoststate-node-links'" in message, message
    assert (
        f'metadata.labels["{LINK}"]: a Node may not set, change or remove its own '
        "hoststate.io/ labels"
    ) in message, message

    ok(cp, "create", "-f", "-", *AS_NODE, stdin=_node({"kubernetes.io/hostname": NODE}))

    def patch(body: dict[str, Any], *how: str) -> Any:
        return run(cp, "patch", "node", NODE, "--type=merge", "-p", json.dumps(body), *how)

    link = {"metadata": {"labels": {LINK: "host-0001"}}}
    heartbeat = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    for how in ((), ("--subresource=status",)):
        done = patch(link, *AS_NODE, *how)
        assert done.returncode != 0 and f'metadata.labels["{LINK}"]' in done.stderr, how
        done = patch({**heartbeat, "metadata": {"labels": {"team": "a"}}}, *AS_NODE, *how)
        assert done.returncode == 0, (how, done.stderr)
    # set by an administrator, it stays: the node may neither change nor remove it
    ok(cp, "label", "node", NODE, f"{LINK}=host-0001")
    for value in ("host-0002", None):
        for how in ((), ("--subresource=status",)):
            done = patch({"metadata": {"labels": {LINK: value}}}, *AS_NODE, *how)
            assert done.returncode != 0 and LINK in done.stderr, (value, how)
    assert patch(heartbeat, *AS_NODE, "--subresource=status").returncode == 0
    labels = json.loads(ok(cp, "get", "node", NODE, "-o", "json"))["metadata"]["labels"]
    assert labels[LINK] == "host-0001"
