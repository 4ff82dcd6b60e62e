"""A metal3 BareMetalHost document taken as a Host: by ``convert``, and by ``bootstrap
--hosts`` (the same reader); a field a Host cannot carry is refused in one line naming
it, and nothing of the file is taken."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from state_controller.bootstrap.hostsfile import (
    HostsFileError,
    apply_hosts_file,
    read_hosts_file,
)
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, SECRETS
from state_controller.cluster.schema import validators
from state_controller.provisioning.provisioner import HostData
from state_controller.provisioning.simulated import SimulatedProvisioner
from testbed.processes import cli
from testbed.scenarios import wait_all_in

# as metal3's user guide writes one: the BMC Secret, then the BareMetalHost
DOCS = """\
apiVersion: v1
kind: Secret
metadata: {name: worker-0-bmc-secret, namespace: metal}
type: Opaque
data: {username: YWRtaW4=, password: cGFzc3dvcmQ=}
---
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {name: worker-0, namespace: metal, labels: {rack: r1}}
spec:
  online: true
  bootMACAddress: 00:11:22:33:44:55
  bootMode: UEFI
  bmc:
    address: redfish://192.168.111.1:8000/redfish/v1/Systems/1
    credentialsName: worker-0-bmc-secret
  image:
    url: http://192.168.111.1/images/os.qcow2
    checksum: http://192.168.111.1/images/os.qcow2.sha256sum
    checksumType: sha256
    format: qcow2
  rootDeviceHints: {deviceName: /dev/sda}
"""


def written(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bmh.yaml"
    path.write_text(text)
    return path


def test_a_baremetalhost_document_is_taken_as_its_host(tmp_path: Path) -> None:
    read = read_hosts_file(written(tmp_path, DOCS))
    [host] = read.hosts
    assert host["kind"] == "Host" and host["metadata"] == {
        "name": "worker-0", "namespace": "metal", "labels": {"rack": "r1"},
    }  # fmt: skip
    assert host["spec"]["image"]["diskFormat"] == "qcow2"  # BMO's format
    assert host["spec"]["bmc"]["credentialsName"] == "worker-0-bmc-secret"
    [secret] = read.secrets
    assert secret["metadata"]["labels"] == {"hoststate.io/bmc-credentials": "true"}
    with EmbeddedCluster(validators=validators()) as cluster:
        apply_hosts_file(cluster, read)
        assert cluster.get(HOSTS, "metal", "worker-0")["spec"] == host["spec"]
        assert cluster.get(SECRETS, "metal", "worker-0-bmc-secret")["data"]["username"]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (("  rootDeviceHints:", "  hardwareProfile: dell\n  rootDeviceHints:"),
         "spec.hardwareProfile cannot"),
        (("  online: true", "  online: true\n  taints: [{key: a, effect: NoSchedule}]\n"
          "  raid: {}\n  firmware: {sriovEnabled: true}"),
         "spec.taints cannot be carried into a Host: a Host has no Machine to taint; set the "
         "taints on its Node and remove spec.taints; spec.firmware cannot be carried into a "
         "Host: a Host names the BMC's own BIOS settings in spec.firmwareSettings"),
        (("    checksum: http://192.168.111.1/images/os.qcow2.sha256sum\n", ""),
         "spec.image.checksum: give the image's checksum or the URL of a checksum file; only a "
         "live-iso (spec.image.diskFormat) or an oci:// image may go without one"),
        (("deviceName: /dev/sda", "deviceName: /dev/sda, wwnWithExtension: '0x5'"),
         "spec.rootDeviceHints.wwnWithExtension cannot"),
        (("metal3.io/v1alpha1", "metal3.io/v1beta9"), "apiVersion is 'metal3.io/v1beta9'"),
        (("00:11:22:33:44:55", "not-a-mac"), "spec.bootMACAddress"),
    ],
)  # fmt: skip
def test_what_a_host_cannot_carry_is_refused_naming_it(
    tmp_path: Path, change: tuple[str, str], says: str
) -> None:
    with pytest.raises(HostsFileError) as refused:
        read_hosts_file(written(tmp_path, DOCS.replace(*change)))
    message = str(refused.value)
    assert "document 2: BareMetalHost metal/worker-0" in message
    assert says in message and "\n" not in message


def test_the_deployed_os_data_is_carried_and_its_secret_labelled_for_it(tmp_path: Path) -> None:
    user_data = """\
---
apiVersion: v1
kind: Secret
metadata: {name: worker-0-user-data, namespace: metal}
stringData: {userData: "#cloud-config\\nhostname: worker-0\\n"}
"""
    docs = DOCS.replace("  rootDeviceHints:", "  userData: {name: worker-0-user-data}\n"
                        "  rootDeviceHints:") + user_data  # fmt: skip
    read = read_hosts_file(written(tmp_path, docs))
    [host] = read.hosts
    assert host["spec"]["userData"] == {"name": "worker-0-user-data"}
    labels = {s["metadata"]["name"]: s["metadata"]["labels"] for s in read.secrets}
    assert labels == {
        "worker-0-bmc-secret": {"hoststate.io/bmc-credentials": "true"},
        "worker-0-user-data": {"hoststate.io/host-data": "true"},
    }


def test_the_fields_deployments_rely_on_are_carried(tmp_path: Path) -> None:
    ramdisk = """\
---
apiVersion: v1
kind: Secret
metadata: {name: worker-0-ramdisk-net, namespace: metal}
stringData: {networkData: "links: []"}
"""
    fields = (
        "  preprovisioningNetworkDataName: worker-0-ramdisk-net\n"
        "  consumerRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, "
        "kind: Metal3Machine, name: m, namespace: metal}\n"
        "  inspectionMode: disabled\n  architecture: x86_64\n  hardwareProfile: unknown\n"
        "  rootDeviceHints:"
    )
    read = read_hosts_file(written(tmp_path, DOCS.replace("  rootDeviceHints:", fields) + ramdisk))
    [host] = read.hosts
    spec = host["spec"]
    assert spec["preprovisioningNetworkDataName"] == "worker-0-ramdisk-net"
    assert spec["consumerRef"]["kind"] == "Metal3Machine"
    assert (spec["inspectionMode"], spec["architecture"]) == ("disabled", "x86_64")
    assert "hardwareProfile" not in spec  # BMO's "ask for nothing" value, dropped
    labels = {s["metadata"]["name"]: s["metadata"]["labels"] for s in read.secrets}
    assert labels["worker-0-ramdisk-net"] == {"hoststate.io/host-data": "true"}


def test_convert_prints_a_hosts_file_that_reads_back_the_same(tmp_path: Path) -> None:
    done = cli("convert", "--hosts", str(written(tmp_path, DOCS)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# 1 Host and 1 Secret from ")
    kinds = [d["kind"] for d in yaml.safe_load_all(done.stdout) if d]
    assert kinds == ["Host", "Secret"]
    again = tmp_path / "hosts.yaml"
    again.write_text(done.stdout)
    assert read_hosts_file(again).hosts == read_hosts_file(written(tmp_path, DOCS)).hosts
    # a field no BareMetalHost has is dropped, as baremetal-operator's API server drops it
    typo = cli("convert", "--hosts", str(written(tmp_path, DOCS.replace("online", "onlin"))))
    assert typo.returncode == 0
    assert "spec.onlin (did you mean spec.online?) dropped: no field of baremetal-operator " in (
        typo.stderr
    )
    [host] = [d for d in yaml.safe_load_all(typo.stdout) if d and d["kind"] == "Host"]
    assert "onlin" not in host["spec"] and "online" not in host["spec"]


def test_a_baremetalhost_with_user_data_provisions_on_the_embedded_cluster(
    tmp_path: Path, run_controller: Any
) -> None:
    """metal3's example host with cloud-config user data, taken from the file as bootstrap
    takes it, is deployed by the simulated provisioner with exactly that user data."""
    cloud_config = "#cloud-config\nhostname: worker-0\n"
    docs = DOCS.replace("  rootDeviceHints:", "  userData: {name: worker-0-user-data}\n"
                        "  rootDeviceHints:") + (
        "---\napiVersion: v1\nkind: Secret\n"
        "metadata: {name: worker-0-user-data, namespace: metal}\n"
        f"stringData: {{userData: {json.dumps(cloud_config)}}}\n"
    )  # fmt: skip
    read = read_hosts_file(written(tmp_path, docs))
    sim = SimulatedProvisioner()
    with EmbeddedCluster(validators=validators()) as cluster:
        apply_hosts_file(cluster, read)
        with run_controller(cluster, sim):
            wait_all_in(cluster, "metal", "provisioned", ["worker-0"], reported=False)
        machine = sim.machine("redfish://192.168.111.1:8000/redfish/v1/Systems/1")
        given = HostData(user_data=cloud_config)
        assert machine.config_drive == {"digest": given.digest(), "sizes": given.sizes()}
