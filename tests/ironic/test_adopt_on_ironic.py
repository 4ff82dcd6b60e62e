"""A handover from baremetal-operator on a real kube-apiserver (BMO's own CRDs) and a real
Ironic: the Ironic nodes and BareMetalHosts are left as baremetal-operator leaves them
for a provisioned and an externally provisioned host, then ``adopt`` hands them over.

Ironic itself shows that nothing was redone: the same node UUID, no new
``provision_updated_at`` (a deploy, an adoption or a cleaning would move it), and the
controller asked it for no inspection or deploy.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import subprocess
import time
from functools import partial
from typing import Any

import pytest

from state_controller.api import annotations as ann
from state_controller.cluster.interface import BAREMETALHOSTS, HOSTS, HOSTSTATES, SECRETS
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.ironic.ownership import HANDED_OVER_FROM, OWNER
from state_controller.runtime.config import ControllerConfig
from state_controller.wiring import observed_controller
from testbed import samples
from testbed.control_plane import ControlPlane
from testbed.ironic_server import IronicServer
from testbed.kube import kubectl
from testbed.processes import CLI
from tests.conftest import FAST_BACKOFF, empty_namespace, wait_for
from tests.ironic.helpers import IronicAPI, provisioner, requests

pytestmark = pytest.mark.slow

NS = "handover"
IMAGE = {"url": "http://192.0.2.80/os.qcow2", "checksum": "a" * 64, "checksumType": "sha256",
         "format": "qcow2"}  # fmt: skip
FIELDS = ("uuid", "created_at", "provision_state", "provision_updated_at", "inspection_finished_at")
HARDWARE = {
    "systemVendor": {"manufacturer": "Example", "productName": "R1"},
    "cpu": {"arch": "x86_64", "model": "Example CPU", "count": 16, "clockMegahertz": 2400},
    "ramMebibytes": 65536,
    "nics": [{"name": "eth0", "mac": "52:54:00:00:10:01", "ip": "192.0.2.21", "speedGbps": 25,
              "model": "0x8086 0x1572", "pxe": True}],
    "storage": [{"name": "/dev/sda", "sizeBytes": 480103981056, "rotational": False,
                 "model": "SSD", "hctl": "0:0:0:0"}],
    "hostname": "worker",
}  # fmt: skip


def _stamp(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def _settle(api: IronicAPI, uuid: str, target: str, reached: str) -> None:
    status, _, text = api.request("PUT", f"/v1/nodes/{uuid}/states/provision", {"target": target})
    assert status == 202, text
    wait_for(
        lambda: (
            (api.node(uuid) or {}).get("provision_state") == reached
            and not (api.node(uuid) or {}).get("reservation")
        ),
        timeout=60,
        what=f"node {uuid} {reached}",
    )


def ironic_node_as_bmo_leaves_it(api: IronicAPI, name: str, *, external: bool) -> str:
    """The node baremetal-operator made: named ``namespace~name``, registered, then
    deployed (or, for an externally provisioned host, adopted), powered on."""
    body = {
        "name": f"{NS}~{name}",
        "driver": "fake-hardware",
        "driver_info": {"redfish_address": "https://192.0.2.10", "redfish_username": "admin",
                        "redfish_password": "bmc-pass",
                        "redfish_system_id": "/redfish/v1/Systems/1"},
        "properties": {"capabilities": "boot_mode:uefi"},
        "automated_clean": False,
    }  # fmt: skip
    status, node, text = api.request("POST", "/v1/nodes", body)
    assert status == 201, text
    uuid = str(node["uuid"])
    _settle(api, uuid, "manage", "manageable")
    if external:
        _settle(api, uuid, "adopt", "active")
    else:
        _settle(api, uuid, "provide", "available")
        _settle(api, uuid, "active", "active")
    status, _, text = api.request("PUT", f"/v1/nodes/{uuid}/states/power", {"target": "power on"})
    assert status == 202, text
    wait_for(lambda: (api.node(uuid) or {}).get("power_state") == "power on", what="powered")
    return uuid


def bmh_as_bmo_leaves_it(
    kube: KubeCluster, name: str, state: str, uuid: str, *, secret: bool = True
) -> dict[str, Any]:
    """A BareMetalHost and its BMC Secret, the status as baremetal-operator writes it."""
    credentials = f"{name}-bmc"
    spec: dict[str, Any] = {
        "bmc": {"address": "redfish://192.0.2.10/redfish/v1/Systems/1",
                "credentialsName": credentials},
        "bootMACAddress": "52:54:00:00:10:01",
        "online": True,
        "bootMode": "UEFI",
        "rootDeviceHints": {"deviceName": "/dev/sda"},
        "userData": {"name": f"{name}-user-data"},
    }  # fmt: skip
    external = state == "externally provisioned"
    if external:
        spec["externallyProvisioned"] = True
    elif state == "provisioned":
        spec["image"] = dict(IMAGE)
    version = ""
    if secret:
        made = kube.create(SECRETS, {
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": credentials, "namespace": NS},
            "stringData": {"username": "admin", "password": "bmc-pass"},
        })  # fmt: skip
        version = made["metadata"]["resourceVersion"]
    bmh = kube.create(BAREMETALHOSTS, {
        "apiVersion": BAREMETALHOSTS.api_version, "kind": BAREMETALHOSTS.kind,
        "metadata": {"name": name, "namespace": NS}, "spec": spec,
    })  # fmt: skip
    now = time.time()
    history = {"register": {"start": _stamp(now - 900), "end": _stamp(now - 890)}}
    if not external:
        history["inspect"] = {"start": _stamp(now - 890), "end": _stamp(now - 600)}
        history["provision"] = {"start": _stamp(now - 300), "end": _stamp(now - 60)}
    status: dict[str, Any] = {
        "operationalStatus": "OK",
        "errorMessage": "",
        "errorCount": 0,
        "poweredOn": True,
        "lastUpdated": _stamp(now - 60),
        "provisioning": {"state": state, "ID": uuid, "bootMode": "UEFI",
                         "rootDeviceHints": {"deviceName": "/dev/sda"}},
        "operationHistory": history,
        "hardware": HARDWARE,
        "goodCredentials": {"credentials": {"name": credentials, "namespace": NS},
                            "credentialsVersion": version},
    }  # fmt: skip
    if state == "provisioned":
        status["provisioning"]["image"] = dict(IMAGE)
    bmh["status"] = status
    return kube.update_status(BAREMETALHOSTS, bmh)


def nodes(api: IronicAPI, uuids: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {
        name: {f: (api.node(uuid) or {}).get(f) for f in FIELDS} for name, uuid in uuids.items()
    }


def adopt(
    control_plane: ControlPlane, ironic: IronicServer, *args: str, sample: str = ""
) -> tuple[int, list[str]]:
    """``adopt baremetalhosts ARGS``: its exit code and the lines of its hosts; its whole
    output (stderr among stdout, as a terminal shows them) is docs sample ``sample``."""
    argv = ("adopt", "baremetalhosts", *args, "-n", NS, "--ironic-url", ironic.url)
    env = {**os.environ, "KUBECONFIG": str(control_plane.kubeconfig)}
    done = subprocess.run(
        [*CLI, *argv], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=300,
    )  # fmt: skip
    assert "Traceback" not in done.stdout, done.stdout
    if sample:
        shown = f"$ state-controller {shlex.join(argv)}\n{done.stdout}"
        assert samples.made_by_a_test(sample, shown) == [], "run scripts/docs-samples --from-tests"
    lines = [line for line in done.stdout.splitlines() if line.startswith(f"{NS}/")]
    return done.returncode, lines


def history(kube: KubeCluster, name: str) -> list[dict[str, Any]]:
    return list((kube.get(HOSTSTATES, NS, name).get("status") or {}).get("history") or [])


def reasons(kube: KubeCluster, name: str) -> list[str]:
    return [record["reason"] for record in history(kube, name)]


def back_to_bmo(
    control_plane: ControlPlane, kube: KubeCluster, name: str, api: IronicAPI, uuid: str
) -> None:
    """The way back in docs/baremetal-operator.md, by kubectl (and Ironic's API for the
    node's mark), step by step."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = kubectl(control_plane, *args, check=False)
        assert done.returncode == 0, (args, done.stderr)
        return done

    run("annotate", "host", name, "-n", NS, "hoststate.io/paused=back-to-bmo")
    uid = run("get", "bmh", name, "-n", NS, "-o", "jsonpath={.metadata.uid}").stdout
    owner = {"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost", "name": name,
             "uid": uid}  # fmt: skip
    back = {"metadata": {"ownerReferences": [owner],
                         "labels": {"hoststate.io/host": None, "hoststate.io/baremetalhost": name}},
            "spec": {"host": "", "bareMetalHost": name}}  # fmt: skip
    run("patch", "hoststate", name, "-n", NS, "--type", "merge", "-p", json.dumps(back))
    run("patch", "host", name, "-n", NS, "--type", "merge", "-p",
        '{"metadata":{"finalizers":null}}')  # fmt: skip
    run("delete", "host", name, "-n", NS)
    unmark = [{"op": "remove", "path": f"/extra/{key}"} for key in (OWNER, HANDED_OVER_FROM)]
    status, _, text = api.request("PATCH", f"/v1/nodes/{uuid}", unmark)
    assert status == 200, text
    run("annotate", "bmh", name, "-n", NS, "baremetalhost.metal3.io/paused-",
        "hoststate.io/handed-over-to-")  # fmt: skip
    wait_for(lambda: not kube.list(HOSTS, NS)[0] or len(kube.list(HOSTS, NS)[0]) == 1)


def handed_over(kube: KubeCluster, name: str) -> bool:
    return "HandedOver" in reasons(kube, name)


def test_adopt_hands_hosts_over_from_baremetal_operator_with_nothing_redone(
    control_plane: ControlPlane, ironic: IronicServer
) -> None:
    api = IronicAPI(ironic.url)
    kubectl(control_plane, "create", "namespace", NS, check=False)
    kube = KubeCluster.from_kubeconfig(str(control_plane.kubeconfig))
    uuids = {
        "worker-0": ironic_node_as_bmo_leaves_it(api, "worker-0", external=False),
        "legacy-0": ironic_node_as_bmo_leaves_it(api, "legacy-0", external=True),
    }
    config = ControllerConfig(
        workers=2, backoff=FAST_BACKOFF, namespaces=(NS,), observe_baremetalhosts=True
    )
    observed = observed_controller(kube, provisioner(ironic.url), config)
    try:
        bmh_as_bmo_leaves_it(kube, "worker-0", "provisioned", uuids["worker-0"])
        bmh_as_bmo_leaves_it(kube, "legacy-0", "externally provisioned", uuids["legacy-0"])
        bmh_as_bmo_leaves_it(kube, "busy-0", "provisioning", "")
        bmh_as_bmo_leaves_it(kube, "lost-0", "provisioned", uuids["worker-0"], secret=False)
        # legacy-0's user data Secret does not exist: nothing to label
        kube.create(SECRETS, {
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": "worker-0-user-data", "namespace": NS},
            "stringData": {"userData": "#cloud-config\n"},
        })  # fmt: skip
        observed.controller.start()
        for name in uuids:  # observed first: their story is told as BareMetalHosts
            wait_for(partial(history, kube, name), what=f"{name} observed")
        wait_for(observed.controller.idle, what="the first look at them over")
        told_before = {name: history(kube, name) for name in uuids}
        before = nodes(api, uuids)
        bmh_versions = {
            b["metadata"]["name"]: b["metadata"]["resourceVersion"]
            for b in kube.list(BAREMETALHOSTS, NS)[0]
        }

        code, lines = adopt(control_plane, ironic, "--dry-run", sample="adopt-dry-run")
        assert code == 1  # two are refused
        assert [line.split(":")[:2] for line in lines] == [
            ["handover/busy-0", " refused"],
            ["handover/legacy-0", " would hand over"],
            ["handover/lost-0", " refused"],
            ["handover/worker-0", " would hand over"],
        ]
        assert "working on it (state 'provisioning')" in lines[0]
        assert "Secret handover/lost-0-bmc (spec.bmc.credentialsName) does not exist" in lines[2]
        assert f"Ironic node {uuids['worker-0']} active" in lines[3]
        assert "not carried" not in lines[3]  # user data goes over with the host
        assert kube.list(HOSTS, NS)[0] == []  # a dry run writes nothing
        assert {
            b["metadata"]["name"]: b["metadata"]["resourceVersion"]
            for b in kube.list(BAREMETALHOSTS, NS)[0]
        } == bmh_versions

        code, lines = adopt(control_plane, ironic, "worker-0", "legacy-0", "busy-0", sample="adopt")
        assert code == 1
        assert [line.split(":")[1] for line in lines] == [
            " handed over",
            " handed over",
            " refused",
        ]
        for name in uuids:
            bmh = kube.get(BAREMETALHOSTS, NS, name)
            # the node is hoststate's now, by the mark only hoststate and adopt write
            assert (api.node(uuids[name]) or {})["extra"] == {
                OWNER: f"{NS}/{name}",
                HANDED_OVER_FROM: bmh["metadata"]["uid"],
            }
            assert bmh["metadata"]["annotations"] == {
                "baremetalhost.metal3.io/paused": "hoststate.io/adopt",
                ann.HANDED_OVER_TO: f"Host {NS}/{name}",
            }
            wait_for(partial(handed_over, kube, name), what=f"{name}'s handover recorded")
        wait_for(observed.controller.idle)
        assert "annotations" not in kube.get(BAREMETALHOSTS, NS, "busy-0")["metadata"]

        # the same node, nothing redone: Ironic's own fields, and the controller's requests
        assert nodes(api, uuids) == before
        for operation in ("inspect", "provision", "prepare", "deprovision"):
            assert requests(observed, operation, "complete") == 0, operation
            assert requests(observed, operation, "continuing") == 0, operation
        labels = kube.get(SECRETS, NS, "worker-0-user-data")["metadata"]["labels"]
        assert labels == {ann.HOST_DATA: "true"}  # the controller reads it now
        for name, state in (("worker-0", "provisioned"), ("legacy-0", "externally provisioned")):
            host = kube.get(HOSTS, NS, name)
            assert host["spec"]["userData"]["name"] == f"{name}-user-data"
            status = host["status"]
            assert status["provisioning"]["state"] == state
            assert status["provisioning"]["id"] == uuids[name]
            assert status["operationalStatus"] == "OK" and status["poweredOn"] is True
            assert status["hardware"]["cpu"]["count"] == 16
            assert ann.STATUS not in host["metadata"]["annotations"]
            assert ann.PAUSED not in host["metadata"]["annotations"]
            state_obj = kube.get(HOSTSTATES, NS, name)
            assert [o["kind"] for o in state_obj["metadata"]["ownerReferences"]] == ["Host"]
            assert state_obj["spec"].get("bareMetalHost", "") == ""
            # one story: what was told of the BareMetalHost, then the handover
            told = history(kube, name)
            assert told[: len(told_before[name])] == told_before[name]
            assert reasons(kube, name)[len(told_before[name]) :] == ["HandedOver"]  # and no more
            assert told[0]["reason"] == "FirstObserved"
            assert all(a["to"] == b["from"] for a, b in itertools.pairwise(told))
        assert (
            kube.get(HOSTS, NS, "worker-0")["status"]["provisioning"]["image"]["url"]
            == IMAGE["url"]
        )

        code, lines = adopt(control_plane, ironic, "worker-0", "legacy-0")
        assert code == 0
        assert lines == ["handover/worker-0: already handed over",
                         "handover/legacy-0: already handed over"]  # fmt: skip

        # back to baremetal-operator, as docs/baremetal-operator.md says, step by step
        told = history(kube, "legacy-0")
        back_to_bmo(control_plane, kube, "legacy-0", api, uuids["legacy-0"])
        assert kube.list(HOSTS, NS)[0][0]["metadata"]["name"] == "worker-0"
        left = kube.get(BAREMETALHOSTS, NS, "legacy-0")
        assert not left["metadata"].get("annotations")  # BMO drives it again
        state = kube.get(HOSTSTATES, NS, "legacy-0")
        assert [o["kind"] for o in state["metadata"]["ownerReferences"]] == ["BareMetalHost"]
        wait_for(observed.controller.idle)
        assert history(kube, "legacy-0") == told  # observed again: the same story, no more
        assert nodes(api, uuids) == before  # the machine was not torn down
        assert (api.node(uuids["legacy-0"]) or {})["extra"] == {}  # no Host takes it now
    finally:
        observed.controller.stop()
        empty_namespace(kube, NS)
        kube.close()
