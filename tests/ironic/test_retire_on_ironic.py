"""A handed-over BareMetalHost retired as docs/baremetal-operator.md says: the commands
``adopt --retire`` prints, run by kubectl on a real kube-apiserver (with its garbage
collector) with baremetal-operator's own CRDs, against a real Ironic.

baremetal-operator is played as v0.13.2 leaves a host it has inspected and provisioned
(``internal/controller/metal3.io/baremetalhost_controller.go``: its finalizer
``baremetalhost.metal3.io`` added on first reconcile, a HardwareData of the same name
owned by the host with the finalizer ``baremetalhost.metal3.io/hardwareData``;
``pkg/secretutils/secret_manager.go``, ``claimSecret``: an ownerReference to the host
and the finalizer ``baremetalhost.metal3.io/secret`` on its BMC Secret). Paused, it does
nothing at all (``Reconcile`` returns at the pause check), so it plays no part after
``adopt``. What must hold: the BareMetalHost and its HardwareData go; the Host, its BMC
Secret, its HostState and the history in it stay; Ironic's node is untouched and nothing
is deprovisioned.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from functools import partial
from typing import Any

import pytest

from state_controller.adopt.retire import HARDWAREDATA
from state_controller.cluster.interface import (
    BAREMETALHOSTS,
    HOSTS,
    HOSTSTATES,
    SECRETS,
    Cluster,
    NotFound,
)
from state_controller.cluster.kube import KubeCluster
from state_controller.runtime.config import ControllerConfig
from state_controller.wiring import observed_controller
from testbed import samples
from testbed.control_plane import ControlPlane
from testbed.ironic_server import IronicServer
from testbed.kube import kubectl, metal3_crds
from testbed.processes import CLI
from tests.conftest import FAST_BACKOFF, empty_namespace, wait_for
from tests.ironic.helpers import IronicAPI, provisioner, requests
from tests.ironic.test_adopt_on_ironic import (
    HARDWARE,
    NS,
    adopt,
    bmh_as_bmo_leaves_it,
    handed_over,
    history,
    ironic_node_as_bmo_leaves_it,
    nodes,
)

pytestmark = pytest.mark.slow

BMO_FINALIZER = "baremetalhost.metal3.io"


def claimed_as_bmo_does(kube: KubeCluster, bmh: dict[str, Any]) -> None:
    """What baremetal-operator v0.13.2 adds around a host it reconciled (see above)."""
    meta = bmh["metadata"]
    name, uid = meta["name"], meta["uid"]
    owner = {"apiVersion": BAREMETALHOSTS.api_version, "kind": "BareMetalHost",
             "name": name, "uid": uid}  # fmt: skip
    kube.patch(BAREMETALHOSTS, NS, name, {"metadata": {"finalizers": [BMO_FINALIZER]}})
    kube.patch(SECRETS, NS, f"{name}-bmc", {"metadata": {
        "ownerReferences": [owner], "finalizers": [BMO_FINALIZER + "/secret"],
        "labels": {"environment.metal3.io": "baremetal"}}})  # fmt: skip
    kube.create(HARDWAREDATA, {
        "apiVersion": HARDWAREDATA.api_version, "kind": HARDWAREDATA.kind,
        "metadata": {"name": name, "namespace": NS,
                     "finalizers": [BMO_FINALIZER + "/hardwareData"],
                     "ownerReferences": [{**owner, "controller": True,
                                          "blockOwnerDeletion": True}]},
        "spec": {"hardware": HARDWARE},
    })  # fmt: skip


def retire(control_plane: ControlPlane, *names: str, sample: str = "") -> tuple[int, str, str]:
    """``adopt baremetalhosts NAMES --retire``: its exit code, stdout and stderr; its
    whole output is docs sample ``sample``."""
    argv = ("adopt", "baremetalhosts", *names, "-n", NS, "--retire")
    env = {**os.environ, "KUBECONFIG": str(control_plane.kubeconfig)}
    done = subprocess.run(
        [*CLI, *argv], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    if sample:
        shown = f"$ state-controller {shlex.join(argv)}\n{done.stderr}{done.stdout}"
        assert samples.made_by_a_test(sample, shown) == [], "run scripts/docs-samples --from-tests"
    return done.returncode, done.stdout, done.stderr


def gone(kube: Cluster, resource: Any, name: str) -> bool:
    try:
        kube.get(resource, NS, name)
    except NotFound:
        return True
    return False


def test_a_handed_over_baremetalhost_retired_takes_nothing_of_the_host_with_it(
    control_plane: ControlPlane, ironic: IronicServer
) -> None:
    api = IronicAPI(ironic.url)
    crd = metal3_crds().parent / "metal3.io_hardwaredata.yaml"
    kubectl(control_plane, "apply", "--server-side", f"--filename={crd}")
    control_plane.wait_established("hardwaredata.metal3.io")
    kubectl(control_plane, "create", "namespace", NS, check=False)
    kube = KubeCluster.from_kubeconfig(str(control_plane.kubeconfig))
    uuids = {"worker-0": ironic_node_as_bmo_leaves_it(api, "worker-0", external=False)}
    config = ControllerConfig(
        workers=2, backoff=FAST_BACKOFF, namespaces=(NS,), observe_baremetalhosts=True
    )
    observed = observed_controller(kube, provisioner(ironic.url), config)
    try:
        bmh = bmh_as_bmo_leaves_it(kube, "worker-0", "provisioned", uuids["worker-0"])
        claimed_as_bmo_does(kube, bmh)
        observed.controller.start()
        wait_for(partial(history, kube, "worker-0"), what="worker-0 observed")

        code, _, err = retire(control_plane, "worker-0")
        assert code == 1 and "handover/worker-0: not retired: not handed over" in err, err
        code, lines = adopt(control_plane, ironic, "worker-0")
        assert (code, [line.split(":")[1] for line in lines]) == (0, [" handed over"]), lines
        wait_for(partial(handed_over, kube, "worker-0"), what="the handover recorded")
        wait_for(observed.controller.idle)
        told = history(kube, "worker-0")
        host_before = kube.get(HOSTS, NS, "worker-0")
        before = nodes(api, uuids)

        code, out, err = retire(control_plane, "worker-0", sample="adopt-retire")
        assert code == 0, err
        commands = [line for line in out.splitlines() if line.startswith("kubectl ")]
        assert [shlex.split(c)[1:3] for c in commands] == [
            ["patch", "secret"],
            ["patch", "hardwaredata"],
            ["patch", "bmh"],
            ["delete", "bmh"],
        ], out
        for command in commands:
            done = kubectl(control_plane, *shlex.split(command)[1:], check=False)
            assert done.returncode == 0, (command, done.stderr)
        wait_for(lambda: gone(kube, BAREMETALHOSTS, "worker-0"), what="the BareMetalHost gone")
        wait_for(
            lambda: gone(kube, HARDWAREDATA, "worker-0"),
            timeout=120,  # the garbage collector learns a new CRD within its 30 s resync
            what="its HardwareData collected with it",
        )
        wait_for(observed.controller.idle)

        # the Host, its Secret, its HostState and its history stay
        secret = kube.get(SECRETS, NS, "worker-0-bmc")
        assert not secret["metadata"].get("ownerReferences")
        assert not secret["metadata"].get("finalizers")
        assert secret["metadata"].get("deletionTimestamp") is None
        host = kube.get(HOSTS, NS, "worker-0")
        assert host["spec"] == host_before["spec"]
        assert host["metadata"].get("finalizers") == host_before["metadata"].get("finalizers")
        assert host["status"]["provisioning"] == host_before["status"]["provisioning"]
        assert host["status"]["provisioning"]["state"] == "provisioned"
        state = kube.get(HOSTSTATES, NS, "worker-0")
        assert [o["kind"] for o in state["metadata"]["ownerReferences"]] == ["Host"]
        assert history(kube, "worker-0") == told
        # nothing done to the machine
        assert nodes(api, uuids) == before
        for operation in ("deprovision", "delete", "provision"):
            assert requests(observed, operation, "complete") == 0, operation
    finally:
        observed.controller.stop()
        for name in ("worker-0",):
            kubectl(control_plane, "patch", "hardwaredata", name, "-n", NS, "--type", "merge",
                    "-p", '{"metadata":{"finalizers":null}}', check=False)  # fmt: skip
        empty_namespace(kube, NS)
        kube.close()
