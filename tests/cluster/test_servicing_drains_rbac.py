"""manifests/servicing-drains/ grants what a servicing drain needs, and no more of a Node.

On the session's control plane with manifests/ applied, the controller's own code
(:class:`ServiceDrainer` over a :class:`KubeCluster` holding a token of its ServiceAccount,
``kubectl create token``) cordons a Node, evicts the pod bound to it and uncordons it.
Without the folder the base's RBAC refuses the cordon and the eviction; with it both are
allowed, and the ValidatingAdmissionPolicy refuses any other change of the Node (a label,
a taint, another annotation) by that ServiceAccount, naming what changed. No kubelet: the
pod is bound by ``spec.nodeName`` and evicted pods of a bound node stay terminating. The
folder is deleted again afterwards, so the rest of the session sees the base's RBAC.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from state_controller.cluster.interface import NODES, PODS, ApiError, NotFound
from state_controller.cluster.kube import KubeCluster
from state_controller.runtime.nodes.cordoned_pods import Drains
from state_controller.runtime.servicing.drainer import SERVICING, ServiceDrainer
from state_controller.updates.signals import CORDONED_FOR, node_signals
from testbed.control_plane import ControlPlane
from testbed.tenants import ok, run
from tests.conftest import wait_for

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "manifests" / "servicing-drains"
POLICY = "hoststate-servicing-drain-node-patch"
CONTROLLER_NS = "hoststate-system"
SA = "hoststate-controller"
AS_CONTROLLER = f"--as=system:serviceaccount:{CONTROLLER_NS}:{SA}"
NS = "servicing-drains"  # the drained pod's namespace, this module's alone
NODE = "serviced-0"
POD = "app-0"
TIMEOUT = 60.0  # two shared cores: the API server may answer slowly


def _as_controller(cp: ControlPlane) -> KubeCluster:
    """The cluster as the controller's ServiceAccount sees it (a bearer token)."""
    token = ok(cp, "create", "token", SA, "-n", CONTROLLER_NS, "--duration=10m").strip()
    configuration = client.Configuration(host=cp.url)
    configuration.api_key = {"authorization": token}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    configuration.ssl_ca_cert = str(cp.ca_file)
    return KubeCluster(client.ApiClient(configuration))


def _pod_created(cp: ControlPlane) -> str:
    """The pod, bound to NODE (retried while the API server's ServiceAccount admission
    does not yet see the namespace's default ServiceAccount)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": POD, "namespace": NS},
        "spec": {
            "nodeName": NODE,
            "automountServiceAccountToken": False,
            "containers": [{"name": "app", "image": "registry.invalid/app:1"}],
        },
    }
    done = run(cp, "create", "-f", "-", stdin=json.dumps(pod))
    return "created" if done.returncode == 0 or "AlreadyExists" in done.stderr else ""


@pytest.fixture(scope="module")
def node(control_plane: ControlPlane, manifests: Any) -> Iterator[ControlPlane]:
    """A Node with a label, an annotation of someone else's and one pod bound to it, for
    the module; all removed afterwards."""
    cp = control_plane
    labels = {"pool": "workers"}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": NODE, "labels": labels, "annotations": {"team": "storage"}},
    }
    ok(cp, "create", "-f", "-", stdin=json.dumps(node))
    ok(cp, "create", "namespace", NS)
    # the harness runs no serviceaccount controller: the pod's ServiceAccount made here
    ok(cp, "create", "serviceaccount", "default", "-n", NS)
    try:
        wait_for(lambda: _pod_created(cp), timeout=TIMEOUT, what=f"pod {NS}/{POD} created")
        yield cp
    finally:
        run(cp, "delete", "pod", POD, "-n", NS, "--grace-period=0", "--force")
        run(cp, "delete", "namespace", NS, "--wait=false")
        run(cp, "delete", "node", NODE, "--wait=false")


@pytest.fixture
def granted(node: ControlPlane) -> Iterator[ControlPlane]:
    """manifests/servicing-drains/ applied on top of the base; deleted afterwards."""
    ok(node, "apply", "-k", str(FOLDER), "--server-side")
    try:
        # The API server loads a new policy within a second or so: until then the grant
        # alone would let any node patch through. A server-side dry run as the controller
        # goes through admission and writes nothing.
        wait_for(
            lambda: f"ValidatingAdmissionPolicy '{POLICY}'" in _label_probe(node),
            timeout=TIMEOUT,
            what=f"{POLICY} in force",
        )
        yield node
    finally:
        run(node, "delete", "-k", str(FOLDER), "--ignore-not-found")
        wait_for(
            lambda: run(node, "auth", "can-i", "patch", "nodes", AS_CONTROLLER).returncode,
            timeout=TIMEOUT,
            what="the drain grant taken back",
        )


def _label_probe(cp: ControlPlane) -> str:
    """What the API server answers the controller's labelling of NODE (not written)."""
    args = ("label", "node", NODE, "probe=1", "--dry-run=server", AS_CONTROLLER)
    return run(cp, *args).stderr


def _drainer(kube: KubeCluster) -> tuple[ServiceDrainer, Drains]:
    drains = Drains(kube, on_change=lambda node: None)
    return ServiceDrainer(kube, drains), drains


def _node(kube: KubeCluster) -> dict[str, Any]:
    return kube.get(NODES, None, NODE)


def test_without_the_folder_the_controller_may_neither_cordon_nor_evict(
    node: ControlPlane,
) -> None:
    cp = node
    for verb, resource in (("patch", "nodes"), ("create", "pods/eviction")):
        assert run(cp, "auth", "can-i", verb, resource, "-A", AS_CONTROLLER).returncode, resource
    with closing(_as_controller(cp)) as kube:
        drainer, drains = _drainer(kube)
        try:
            with pytest.raises(ApiError) as refused:
                drainer.drain(node_signals(_node(kube)))
            assert refused.value.code == 403, refused.value.message
            with pytest.raises(ApiError) as refused:
                kube.evict(NS, POD)
            assert refused.value.code == 403, refused.value.message
        finally:
            drains.stop()
    assert CORDONED_FOR not in (_node_as_admin(cp)["metadata"].get("annotations") or {})


def _node_as_admin(cp: ControlPlane) -> dict[str, Any]:
    return json.loads(ok(cp, "get", "node", NODE, "-o", "json"))  # type: ignore[no-any-return]


def _pod_going(admin: KubeCluster) -> bool:
    """The pod evicted: terminating (no kubelet confirms it) or gone."""
    try:
        return bool(admin.get(PODS, NS, POD)["metadata"].get("deletionTimestamp"))
    except NotFound:
        return True


def test_with_the_folder_the_controller_drains_and_changes_nothing_else_of_the_node(
    granted: ControlPlane,
) -> None:
    cp = granted
    policy = json.loads(ok(cp, "get", "validatingadmissionpolicy", POLICY, "-o", "json"))
    assert not (policy.get("status") or {}).get("typeChecking", {}).get("expressionWarnings")
    admin = KubeCluster.from_kubeconfig(str(cp.kubeconfig))
    with closing(admin), closing(_as_controller(cp)) as kube:
        drainer, drains = _drainer(kube)
        try:
            # The cordon and the eviction, as runtime/servicing/drainer.py makes them. The
            # first calls may come before the pod watch has listed the pod: drain again.
            def drained() -> bool:
                drainer.drain(node_signals(_node(kube)))
                return _pod_going(admin)

            wait_for(drained, timeout=TIMEOUT, what=f"{NODE} cordoned and {POD} evicted")
            cordoned = _node(kube)
            assert cordoned["spec"].get("unschedulable") is True
            annotations = cordoned["metadata"]["annotations"]
            assert annotations[CORDONED_FOR] == SERVICING and annotations["team"] == "storage"

            # Anything else of the Node is refused, with the policy's message naming it.
            taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
            for patch, changed in (
                ({"metadata": {"labels": {"pool": "gpu"}}}, 'metadata.labels["pool"]'),
                ({"spec": {"taints": [taint]}}, "spec.taints"),
                ({"metadata": {"annotations": {"team": None}}}, 'metadata.annotations["team"]'),
                (
                    {"metadata": {"annotations": {CORDONED_FOR: "upgrade"}}},
                    f'metadata.annotations["{CORDONED_FOR}"]',
                ),
            ):
                with pytest.raises(ApiError) as refused:
                    kube.patch(NODES, None, NODE, patch)
                message = refused.value.message
                assert refused.value.code == 403, message
                assert f"ValidatingAdmissionPolicy '{POLICY}'" in message, message
                assert message.split("denied request: ")[1].startswith(changed), message
                if changed == "spec.taints":
                    assert (
                        "may change only spec.unschedulable and the annotation "
                        f"{CORDONED_FOR} of a Node"
                    ) in message, message
                    assert f"(kubectl label, annotate or taint node {NODE})" in message

            # The uncordon takes back exactly the cordon.
            drainer.uncordon(node_signals(_node(kube)))
            after = _node(kube)
            assert not after["spec"].get("unschedulable")
            assert CORDONED_FOR not in after["metadata"]["annotations"]
            assert after["metadata"]["annotations"]["team"] == "storage"
            assert after["metadata"]["labels"] == {"pool": "workers"}
            assert taint not in (after["spec"].get("taints") or [])
        finally:
            drains.stop()
    # An administrator's change of the same Node is not the policy's to judge.
    ok(cp, "label", "node", NODE, "pool=gpu", "--overwrite")
