"""What ``clusterctl move`` carries of hoststate's objects, between two real kube-apiservers.

clusterctl is Cluster API's own (sigs.k8s.io/cluster-api v1.14.2, built from its Go module
by tools/clusterctl/build.sh), run as a user runs it: ``clusterctl move --kubeconfig SOURCE
--to-kubeconfig TARGET --namespace metal``. Both clusters have Cluster API's Cluster CRD
(without it clusterctl refuses either: cmd/clusterctl/client/cluster/inventory.go,
CheckCAPIContract) and hoststate's CRDs as the generator writes them; no Cluster, no
provider, no controller runs: what moves is what clusterctl's object graph selects
(cmd/clusterctl/client/cluster/objectgraph.go) and nothing else.

- It reads only the CRDs labelled ``clusterctl.cluster.x-k8s.io`` (getCRDList): Hosts and
  HostStates, not NodePools nor the HostStateController.
- A metal3 BareMetalHost moves, its CRD labelled as Cluster API Provider Metal3's own
  pivoting test labels it before its move (metal3-io/cluster-api-provider-metal3
  test/e2e/pivoting.go, labelBMOCRDs: ``clusterctl.cluster.x-k8s.io``, ``/move`` and
  ``/move-hierarchy`` on baremetalhosts.metal3.io), and the HostState hoststate keeps for
  it, owned by it, moves with it.
- A Host the user labelled ``clusterctl.cluster.x-k8s.io/move-hierarchy`` moves with the
  HostState it owns (the owner reference rebuilt onto the new Host's uid) and the BMC
  Secret labelled ``clusterctl.cluster.x-k8s.io/move``; metadata (paused, the status
  annotation the controller kept) comes along, and the source copies go.
- No hoststate kind is moved by force: a Host without the label stays with its HostState,
  and a node-only HostState (owned by its Node, which no move takes) stays.
- What arrives has no status: clusterctl creates each object, and the API server drops a
  created custom resource's status where the status subresource is on. Metadata survives:
  the Host's ``hoststate.io/status`` annotation, and the HostState's, both of which the
  controller keeps while the host is paused (its own code, runtime/writing/saved_status.py,
  run here against the source, the Host paused by its user and the BareMetalHost as
  Cluster API Provider Metal3 pauses it); the same code run against the target, as the
  controller runs it for a paused host, gives each moved HostState its history back, and
  the Host's restore (runtime/hosts/inputs.py, books/restore.py) reads the moved Host's
  status from its annotation.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from state_controller.api import annotations as ann
from state_controller.api import crds
from state_controller.books.projections import host_status
from state_controller.books.restore import restore
from state_controller.cluster.interface import HOSTS, HOSTSTATES
from state_controller.cluster.kube import KubeCluster
from state_controller.runtime.hosts.inputs import status_annotation
from state_controller.runtime.machinery.informer import Informer
from state_controller.runtime.machinery.reporting import NoReporter
from state_controller.runtime.writing.saved_status import SavedStatus
from state_controller.runtime.writing.status_writer import StatusWriter
from testbed.control_plane import ControlPlane
from testbed.kube import k8s_bin_dir, metal3_crds
from testbed.tools import cluster_api_crds, clusterctl

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NS = "metal"
HOSTSTATE_CRDS = ("hosts", "hoststates", "nodepools", "hoststatecontrollers")
AT = "2026-11-28T10:00:00.000Z"


def kubectl(plane: ControlPlane, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        plane.kubectl_argv(*args), input=stdin, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"kubectl {' '.join(args)}:\n{done.stdout}{done.stderr}"
    return done.stdout


def apply(plane: ControlPlane, *objects: dict[str, Any]) -> None:
    kubectl(plane, "apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(objects))


def get(plane: ControlPlane, kind: str, name: str, namespace: str = NS) -> dict[str, Any] | None:
    scope = ("-n", namespace) if namespace else ()
    out = kubectl(plane, "get", kind, name, *scope, "--ignore-not-found", "-o", "json")
    return json.loads(out) if out.strip() else None


def write_status(plane: ControlPlane, kind: str, name: str, status: dict[str, Any]) -> None:
    scope = ("-n", NS) if kind != "nodepools.hoststate.io" else ()
    kubectl(plane, "patch", kind, name, *scope, "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": status}))  # fmt: skip


@pytest.fixture(scope="module")
def planes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ControlPlane, ...]]:
    """Two kube-apiservers, each with Cluster API's Cluster CRD, baremetal-operator's
    BareMetalHost CRD (v0.13.2, tools/metal3/crds.sh) and hoststate's CRDs; the source's
    BareMetalHost CRD labelled as Cluster API Provider Metal3 labels it for a move."""
    with (
        ControlPlane(k8s_bin_dir(), tmp_path_factory.mktemp("source"), controller_manager=False)
        as source,
        ControlPlane(k8s_bin_dir(), tmp_path_factory.mktemp("target"), controller_manager=False)
        as target,
    ):  # fmt: skip
        for plane in (source, target):
            kubectl(plane, "apply", "--server-side", "-f", str(cluster_api_crds()))
            kubectl(plane, "apply", "--server-side", "-f", str(ROOT / "api" / "v1alpha1"))
            kubectl(plane, "apply", "--server-side", "-f", str(metal3_crds()))
            plane.wait_established(
                "clusters.cluster.x-k8s.io",
                "baremetalhosts.metal3.io",
                *(f"{c}.hoststate.io" for c in HOSTSTATE_CRDS),
            )
        labels = (crds.CLUSTERCTL, crds.CLUSTERCTL_MOVE, crds.CLUSTERCTL_MOVE_HIERARCHY)
        kubectl(source, "label", "crd", "baremetalhosts.metal3.io", *(f"{k}=" for k in labels))
        yield source, target


def host(name: str, labels: dict[str, str], annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "hoststate.io/v1alpha1",
        "kind": "Host",
        "metadata": {"name": name, "namespace": NS, "labels": labels,
                     "annotations": annotations},
        "spec": {
            "bmc": {"address": "redfish://10.1.0.11/redfish/v1/Systems/1",
                    "credentialsName": f"{name}-bmc"},
            "bootMACAddress": "52:54:00:10:00:01",
            "online": True,
        },
    }  # fmt: skip


def hoststate(name: str, owner: dict[str, Any], spec: dict[str, str]) -> dict[str, Any]:
    """A HostState as the controller creates it (runtime/writing/book_writer.py)."""
    return {
        "apiVersion": "hoststate.io/v1alpha1",
        "kind": "HostState",
        "metadata": {"name": name, "namespace": NS,
                     "ownerReferences": [{**owner, "blockOwnerDeletion": False}]},
        "spec": spec,
    }  # fmt: skip


HISTORY = {
    "phase": "Provisioned",
    "source": "Host",
    "history": [
        {"seq": 1, "chapter": "registration", "from": "", "to": "registering", "at": AT},
        {"seq": 2, "chapter": "provisioning", "from": "available", "to": "provisioned",
         "at": AT, "reason": "Provisioned"},
    ],
    "lastSeq": 2,
}  # fmt: skip


def keep_paused_hoststates(plane: ControlPlane, *names: str) -> None:
    """What the controller does for each paused host's HostState (SavedStatus.keep, as
    both reconcilers call it while paused): in the source the status is copied into the
    annotation; in the target, one that arrived without status gets it back from there."""
    cluster = KubeCluster.from_kubeconfig(str(plane.kubeconfig))
    try:
        informer = Informer(cluster, HOSTSTATES, namespace=NS)  # primed, not watching
        saved = SavedStatus(cluster, informer, StatusWriter(cluster, NoReporter()))
        for name in names:
            informer.mutate(cluster.get(HOSTSTATES, NS, name))
            saved.keep(f"{NS}/{name}", {})
    finally:
        cluster.close()


def keep_paused_host(plane: ControlPlane, name: str) -> None:
    """What the controller does for a paused Host (SavedStatus.keep_host, as the Host's
    reconciler calls it while paused): its status copied into its own annotation."""
    cluster = KubeCluster.from_kubeconfig(str(plane.kubeconfig))
    try:
        hosts, states = Informer(cluster, HOSTS, namespace=NS), Informer(cluster, HOSTSTATES)
        saved = SavedStatus(cluster, states, StatusWriter(cluster, NoReporter()))
        host = cluster.get(HOSTS, NS, name)
        hosts.mutate(host)
        saved.keep_host(f"{NS}/{name}", host, hosts)
    finally:
        cluster.close()


MOVING = ("rack1-node-01", "rack2-node-01")  # the HostStates that move
HOST_STATUS = {
    "operationalStatus": "OK",
    "poweredOn": True,
    "provisioning": {"state": "provisioned", "id": "6f0c1d2e-3a4b-4c5d-8e9f-0a1b2c3d4e5f",
                     "bootMode": "UEFI"},
    "goodCredentials": {"name": "rack1-node-01-bmc", "version": "1"},
}  # fmt: skip


BMH_HISTORY = {**HISTORY, "source": "BareMetalHost"}


@pytest.fixture(scope="module")
def moved(planes: tuple[ControlPlane, ...], tmp_path_factory: pytest.TempPathFactory) -> str:
    """The source as a user leaves it before a move (one Host paused and labelled to move,
    its status kept in its annotation by the controller's code; one Host not labelled; a
    node-only HostState; a NodePool), then ``clusterctl move``; its output."""
    source, target = planes
    kubectl(source, "create", "namespace", NS)
    apply(
        source,
        host("rack1-node-01", {crds.CLUSTERCTL_MOVE_HIERARCHY: ""}, {ann.PAUSED: ""}),
        host("rack1-node-02", {}, {}),
        *(
            {"apiVersion": "v1", "kind": "Secret",
             "metadata": {"name": f"rack1-node-0{i}-bmc", "namespace": NS,
                          "labels": {ann.BMC_CREDENTIALS: "true", **labels}},
             "stringData": {"username": "admin", "password": "change-me"}}
            for i, labels in ((1, {crds.CLUSTERCTL_MOVE: ""}), (2, {}))
        ),
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-9"}},
        {"apiVersion": "hoststate.io/v1alpha1", "kind": "NodePool",
         "metadata": {"name": "worker"}, "spec": {"label": "node-role.kubernetes.io/*"}},
    )  # fmt: skip
    for name in ("rack1-node-01", "rack1-node-02"):
        uid = get(source, "hosts.hoststate.io", name)["metadata"]["uid"]  # type: ignore[index]
        owner = {"apiVersion": "hoststate.io/v1alpha1", "kind": "Host", "name": name,
                 "uid": uid, "controller": True}  # fmt: skip
        apply(source, hoststate(name, owner, {"host": name, "node": ""}))
        write_status(source, "hoststates.hoststate.io", name, HISTORY)
    bmh = {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": {"name": "rack2-node-01", "namespace": NS,
                     # as Cluster API Provider Metal3 pauses it once its Cluster is paused
                     # (v1.13.2, baremetal/metal3machine_manager.go, SetPauseAnnotation)
                     "annotations": {"baremetalhost.metal3.io/paused": "metal3.io/capm3"}},
        "spec": {"online": True, "bootMACAddress": "52:54:00:20:00:01"},
    }  # fmt: skip
    apply(source, bmh)
    bmh_uid = get(source, "baremetalhosts.metal3.io", "rack2-node-01")["metadata"]["uid"]  # type: ignore[index]
    # as the controller owns it (runtime/baremetalhosts/reconciler.py)
    observed = {"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
                "name": "rack2-node-01", "uid": bmh_uid}  # fmt: skip
    apply(source, hoststate("rack2-node-01", observed, {"bareMetalHost": "rack2-node-01"}))
    write_status(source, "hoststates.hoststate.io", "rack2-node-01", BMH_HISTORY)
    node_uid = get(source, "nodes", "worker-9", "")["metadata"]["uid"]  # type: ignore[index]
    node = {"apiVersion": "v1", "kind": "Node", "name": "worker-9", "uid": node_uid}
    apply(source, hoststate("worker-9", node, {"host": "", "node": "worker-9"}))
    write_status(source, "nodepools.hoststate.io", "worker", {"machineCount": 1})
    write_status(source, "hosts.hoststate.io", "rack1-node-01", HOST_STATUS)
    keep_paused_host(source, "rack1-node-01")
    keep_paused_hoststates(source, *MOVING)  # rack1-node-02 is not paused: nothing kept

    home = tmp_path_factory.mktemp("clusterctl-home")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "CLUSTERCTL_DISABLE_VERSIONCHECK": "true",
    }
    argv = [str(clusterctl()), "move", "--kubeconfig", str(source.kubeconfig),
            "--to-kubeconfig", str(target.kubeconfig), "--namespace", NS, "-v", "3"]  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"clusterctl move:\n{done.stdout}{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def arrived(planes: tuple[ControlPlane, ...], moved: str) -> dict[str, dict[str, Any] | None]:
    """The moved HostStates as clusterctl left them in the target, before the controller."""
    _, target = planes
    return {name: get(target, "hoststates.hoststate.io", name) for name in MOVING}


def test_clusterctl_reads_the_hosts_and_hoststates_crds_only(
    planes: tuple[ControlPlane, ...],
) -> None:
    """The CRDs as clusterctl lists them (a label selector on clusterctl.cluster.x-k8s.io)."""
    source, _ = planes
    listed = kubectl(source, "get", "crd", "-l", crds.CLUSTERCTL, "-o", "name").split()
    ours = sorted(name.split("/")[1] for name in listed if name.endswith(".hoststate.io"))
    assert ours == ["hosts.hoststate.io", "hoststates.hoststate.io"]


def test_a_labelled_host_moves_with_its_hoststate_and_secret(
    planes: tuple[ControlPlane, ...], moved: str
) -> None:
    source, target = planes
    new_host = get(target, "hosts.hoststate.io", "rack1-node-01")
    assert new_host is not None, f"the Host did not move:\n{moved}"
    meta = new_host["metadata"]
    assert ann.PAUSED in meta["annotations"]
    # the Host's status as the controller kept it: less what its restore leaves out
    kept = {**HOST_STATUS, "provisioning": {"state": "provisioned", "bootMode": "UEFI"}}
    del kept["goodCredentials"]
    assert json.loads(meta["annotations"][ann.STATUS]) == kept
    assert "change-me" not in meta["annotations"][ann.STATUS]  # its Secret's data is not
    assert new_host["spec"]["bmc"]["credentialsName"] == "rack1-node-01-bmc"
    state = get(target, "hoststates.hoststate.io", "rack1-node-01")
    assert state is not None, f"the HostState did not move with its Host:\n{moved}"
    (owner,) = state["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Host", "rack1-node-01", meta["uid"])
    assert (state["spec"]["host"], state["spec"]["node"]) == ("rack1-node-01", "")
    secret = get(target, "secrets", "rack1-node-01-bmc")
    assert secret is not None and secret["metadata"]["labels"][ann.BMC_CREDENTIALS] == "true"
    for kind, name in (("hosts.hoststate.io", "rack1-node-01"),
                       ("hoststates.hoststate.io", "rack1-node-01"),
                       ("secrets", "rack1-node-01-bmc")):  # fmt: skip
        assert get(source, kind, name) is None, f"{kind} {name} left in the source"


def test_the_hoststate_of_a_baremetalhost_moves_with_it(
    planes: tuple[ControlPlane, ...], moved: str
) -> None:
    source, target = planes
    bmh = get(target, "baremetalhosts.metal3.io", "rack2-node-01")
    assert bmh is not None, f"the BareMetalHost did not move:\n{moved}"
    state = get(target, "hoststates.hoststate.io", "rack2-node-01")
    assert state is not None, f"its HostState did not move with it:\n{moved}"
    (owner,) = state["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("BareMetalHost", bmh["metadata"]["uid"])
    assert state["spec"]["bareMetalHost"] == "rack2-node-01"
    assert get(source, "hoststates.hoststate.io", "rack2-node-01") is None


def test_what_arrives_has_no_status_but_the_annotations_that_hold_it(
    planes: tuple[ControlPlane, ...], arrived: dict[str, dict[str, Any] | None], moved: str
) -> None:
    """The API server drops a created object's status; the annotations the controller and
    the user wrote in the source are what carries it."""
    _, target = planes
    new_host = get(target, "hosts.hoststate.io", "rack1-node-01")
    assert new_host is not None and not new_host.get("status"), moved
    for name, shown in (("rack1-node-01", HISTORY), ("rack2-node-01", BMH_HISTORY)):
        state = arrived[name]
        assert state is not None and not state.get("status"), f"{name}:\n{moved}"
        assert json.loads(state["metadata"]["annotations"][ann.STATUS]) == shown


def test_a_moved_hoststate_gets_its_history_back(
    planes: tuple[ControlPlane, ...], arrived: dict[str, dict[str, Any] | None]
) -> None:
    """The controller's restore, run against the target as it runs it for a paused host."""
    _, target = planes
    keep_paused_hoststates(target, *MOVING)
    for name, shown in (("rack1-node-01", HISTORY), ("rack2-node-01", BMH_HISTORY)):
        state = get(target, "hoststates.hoststate.io", name)
        assert state is not None and state["status"] == shown, name


def test_the_moved_host_is_restored_from_its_annotation(
    planes: tuple[ControlPlane, ...], moved: str
) -> None:
    """The Host's restore, as its reconciler opens the book of a Host that arrived with the
    annotation and no status: provisioned, powered on, nothing to register or deploy."""
    _, target = planes
    new_host = get(target, "hosts.hoststate.io", "rack1-node-01")
    assert new_host is not None and not new_host.get("status"), moved
    status, problem = status_annotation(new_host["metadata"]["annotations"])
    assert problem is None and status is not None
    book = restore(f"{NS}/rack1-node-01", status, None, now=0.0)
    shown = host_status(book, 0)
    assert shown["provisioning"]["state"] == "provisioned"
    assert shown["provisioning"]["bootMode"] == "UEFI"
    assert (shown["poweredOn"], shown["operationalStatus"]) == (True, "OK")


def test_nothing_else_moves(planes: tuple[ControlPlane, ...], moved: str) -> None:
    source, target = planes
    staying = (
        ("hosts.hoststate.io", "rack1-node-02", NS),
        ("hoststates.hoststate.io", "rack1-node-02", NS),
        ("secrets", "rack1-node-02-bmc", NS),
        ("hoststates.hoststate.io", "worker-9", NS),  # node-only: its Node never moves
        ("nodepools.hoststate.io", "worker", ""),
    )
    for kind, name, namespace in staying:
        assert get(target, kind, name, namespace) is None, f"{kind} {name} moved:\n{moved}"
        kept = get(source, kind, name, namespace)
        assert kept is not None, f"{kind} {name} gone from the source"
    history = get(source, "hoststates.hoststate.io", "rack1-node-02")["status"]["history"]  # type: ignore[index]
    assert [h["seq"] for h in history] == [1, 2]
