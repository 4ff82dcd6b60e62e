"""The observe-only installs for baremetal-operator users, installed, observing and
uninstalled as a user would, on a real kube-apiserver with baremetal-operator's own CRDs.

BareMetalHosts, each with its BMC Secret, live in metal3's usual namespaces (``metal3``,
``baremetal-operator-system``, ``openshift-machine-api``). Each install is applied with
``kubectl apply -k --server-side``; the controller runs in process with the install's
ServiceAccount's token (so with its RBAC and nothing more) and the Deployment's own
arguments, and writes a HostState beside each BareMetalHost it is to observe (and an Event
on the one stuck), with no request refused; then
``kubectl delete -k`` takes the install away. Every BareMetalHost, Secret and Namespace of
the user's is still there, unchanged (same uid, same resourceVersion), while everything the
install made is gone.

A control plane of its own, not the session's: uninstalling deletes hoststate's CRDs and
its namespace, which the session's other tests use.
"""

from __future__ import annotations

import json
import logging
import subprocess
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from state_controller.books.journal import STUCK
from state_controller.cluster.interface import BAREMETALHOSTS, EVENTS, HOSTSTATES, SECRETS
from state_controller.cluster.kube import KubeCluster
from state_controller.pivot.target import NAMESPACES
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.baremetal_operator import PlayedBMO
from testbed.control_plane import ControlPlane
from testbed.kube import (
    MONITORING_CRDS,
    as_service_account,
    deployment_config,
    k8s_bin_dir,
    metal3_crds,
)
from tests.conftest import FAST_BACKOFF, wait_for

pytestmark = pytest.mark.slow  # a control plane of its own, two installs and uninstalls

ROOT = Path(__file__).resolve().parents[2]
CONTROLLER_NS = "hoststate-system"
SA = "hoststate-controller"
# metal3's usual namespaces (docs/baremetal-operator.md), two BareMetalHosts in each
USERS = ("metal3", "baremetal-operator-system", "openshift-machine-api")
# in each: one provisioned, one held in inspecting for two hours (stuck at the first look,
# past the 30 minutes allowed: a Warning Event on it)
SHOWN = {"worker-0": "provisioned", "worker-1": "inspecting"}
HOSTS_PER_NAMESPACE = len(SHOWN)
GENEROUS = 120.0  # seconds: an install or an uninstall on 2 busy cores

# (install folder, the namespaces whose BareMetalHosts it observes)
INSTALLS = [
    ("observe", USERS),
    ("observe-namespaces", ("metal3", "baremetal-operator-system")),
]

# what timed() measured, printed at the end of the module (docs/baremetal-operator.md)
MEASURED: dict[str, float] = {}


def run(plane: ControlPlane, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        plane.kubectl_argv(*args), capture_output=True, text=True, timeout=GENEROUS, cwd=ROOT
    )
    if check:
        assert done.returncode == 0, f"kubectl {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def timed(plane: ControlPlane, what: str, *args: str) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    done = run(plane, *args)
    MEASURED[what] = time.monotonic() - started
    return done


def users_objects(admin: KubeCluster) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(kind, namespace, name) -> (uid, resourceVersion) of every Namespace, BareMetalHost
    and Secret of the user's."""
    found: dict[tuple[str, str, str], tuple[str, str]] = {}
    for namespace in USERS:
        meta = admin.get(NAMESPACES, None, namespace)["metadata"]
        found[("Namespace", "", namespace)] = (meta["uid"], meta["resourceVersion"])
        for resource in (BAREMETALHOSTS, SECRETS):
            for obj in admin.list(resource, namespace)[0]:
                m = obj["metadata"]
                found[(resource.kind, namespace, m["name"])] = (m["uid"], m["resourceVersion"])
    return found


def the_controller(plane: ControlPlane) -> KubeCluster:
    """The cluster as the install's ServiceAccount sees it."""
    return KubeCluster(client.ApiClient(as_service_account(plane, SA, CONTROLLER_NS)))


def deployments_config(plane: ControlPlane) -> ControllerConfig:
    """The controller's settings as the installed Deployment's arguments give them."""
    got = run(plane, "get", "deployment", SA, "-n", CONTROLLER_NS, "-o", "json")
    (container,) = json.loads(got.stdout)["spec"]["template"]["spec"]["containers"]
    return deployment_config(container, workers=2, backoff=FAST_BACKOFF)


def can_i(admin: KubeCluster, verb: str, resource: str, namespace: str = "", sub: str = "") -> bool:
    """What the API server's authorizer answers for the controller's ServiceAccount (as
    ``kubectl auth can-i --as`` asks it, without a process per question)."""
    plural, _, group = resource.partition(".")
    review = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=f"system:serviceaccount:{CONTROLLER_NS}:{SA}",
            groups=["system:serviceaccounts", f"system:serviceaccounts:{CONTROLLER_NS}"],
            resource_attributes=client.V1ResourceAttributes(
                verb=verb, group=group, resource=plural, namespace=namespace, subresource=sub
            ),
        )
    )
    answer = client.AuthorizationV1Api(admin.api).create_subject_access_review(review)
    assert answer.status is not None
    return bool(answer.status.allowed)


# -- the cluster a baremetal-operator user has --------------------------------------------


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver and kube-controller-manager (its namespace and garbage
    collectors), with baremetal-operator's CRDs and prometheus-operator's (stand-ins);
    BareMetalHosts and their BMC Secrets in metal3's usual namespaces, shown provisioned
    as baremetal-operator writes it."""
    with ControlPlane(k8s_bin_dir(), tmp_path_factory.mktemp("observe-install")) as cp:
        run(cp, "apply", "--server-side", f"--filename={metal3_crds()}",
            f"--filename={MONITORING_CRDS}")  # fmt: skip
        cp.wait_established("baremetalhosts.metal3.io", "servicemonitors.monitoring.coreos.com",
                            "prometheusrules.monitoring.coreos.com")  # fmt: skip
        admin = KubeCluster.from_kubeconfig(str(cp.kubeconfig))
        try:
            for namespace in USERS:
                run(cp, "create", "namespace", namespace)
                for name, state in SHOWN.items():
                    admin.create(
                        SECRETS,
                        {
                            "metadata": {"name": f"{name}-bmc", "namespace": namespace},
                            "stringData": {"username": "admin", "password": "secret"},
                        },
                    )
                    since = time.time() - (7200 if state == "inspecting" else 0)
                    operation = "inspect" if state == "inspecting" else "provision"
                    PlayedBMO(admin, namespace, name).show(state, started=(operation,), at=since)
        finally:
            admin.close()
        yield cp
    if MEASURED:
        print("\n" + ", ".join(f"{what} {took:.1f}s" for what, took in MEASURED.items()))


@pytest.fixture(scope="module")
def admin(plane: ControlPlane) -> Iterator[KubeCluster]:
    kube = KubeCluster.from_kubeconfig(str(plane.kubeconfig))
    yield kube
    kube.close()


def observed(admin: KubeCluster, namespace: str) -> bool:
    """Each BareMetalHost of ``namespace`` has a HostState beside it that tells its state,
    and the one stuck has a Warning Event."""
    shown = {
        s["metadata"]["name"]: (s.get("status") or {}).get("provisioning", {}).get("state")
        for s in admin.list(HOSTSTATES, namespace)[0]
    }
    told = {
        (e["involvedObject"]["kind"], e["involvedObject"]["name"], e["reason"])
        for e in admin.list(EVENTS, namespace)[0]
    }
    return shown == SHOWN and ("BareMetalHost", "worker-1", STUCK) in told


@pytest.mark.parametrize(("folder", "watched"), INSTALLS, ids=[f for f, _ in INSTALLS])
def test_installed_it_observes_its_namespaces_and_uninstalled_it_leaves_every_machine(
    plane: ControlPlane,
    admin: KubeCluster,
    run_controller: Any,
    caplog: pytest.LogCaptureFixture,
    folder: str,
    watched: tuple[str, ...],
) -> None:
    install = f"manifests/{folder}/"
    before = users_objects(admin)
    assert len(before) == len(USERS) * (1 + 2 * HOSTS_PER_NAMESPACE)

    timed(plane, f"{folder} install", "apply", "-k", install, "--server-side")
    plane.wait_established("hoststates.hoststate.io", "nodepools.hoststate.io",
                           "hoststatecontrollers.hoststate.io")  # fmt: skip
    # nothing that drives (no Host CRD), no Secret read, nothing of metal3 written
    assert run(plane, "get", "crd/hosts.hoststate.io", check=False).returncode != 0
    for namespace in USERS:
        bmh = "baremetalhosts.metal3.io"
        assert can_i(admin, "watch", bmh, namespace) is (namespace in watched), namespace
        for verb in ("create", "update", "patch", "delete"):
            assert not can_i(admin, verb, bmh, namespace), (verb, namespace)
        assert not can_i(admin, "update", bmh, namespace, "status"), namespace
        assert not can_i(admin, "get", "secrets", namespace), namespace
    assert not can_i(admin, "list", "secrets")  # in any namespace
    assert can_i(admin, "watch", "nodes")  # and what it does read is granted as asked

    identity = the_controller(plane)
    config = deployments_config(plane)
    assert not config.drive_hosts and config.observe_baremetalhosts
    try:
        with run_controller(identity, config=config) as running:
            for namespace in watched:
                wait_for(
                    partial(observed, admin, namespace),
                    timeout=60,
                    what=f"a HostState beside each BareMetalHost of {namespace}, an Event",
                )
            wait_for(running.controller.idle, timeout=60, what="the controller idle")
            for namespace in set(USERS) - set(watched):
                assert admin.list(HOSTSTATES, namespace)[0] == [], namespace
            states = admin.list(HOSTSTATES, watched[0])[0]
            assert {s["metadata"]["ownerReferences"][0]["kind"] for s in states} == {
                "BareMetalHost"
            }
    finally:
        identity.close()
    # every request it made was one the install grants: a refused one is logged as an error
    refused = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert refused == []

    timed(plane, f"{folder} uninstall", "delete", "-k", install, f"--timeout={GENEROUS:.0f}s")
    assert users_objects(admin) == before  # every one there, none written
    # and what the install made is gone: its namespace, its CRDs (the HostStates with
    # them), its cluster-wide RBAC and policies
    crds = ("hoststates", "nodepools", "hoststatecontrollers")
    for gone in ("namespace/hoststate-system", *(f"crd/{c}.hoststate.io" for c in crds)):
        assert run(plane, "get", gone, check=False).returncode != 0, gone
    left = run(
        plane, "get", "clusterroles,clusterrolebindings,rolebindings,validatingadmissionpolicies",
        "-A", "-l", "app.kubernetes.io/part-of=hoststate", "-o", "name",
    )  # fmt: skip
    assert left.stdout.strip() == ""
