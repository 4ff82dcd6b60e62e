"""metal3's own BareMetalHost manifests taken by ``convert`` and ``bootstrap --hosts``.

The samples are metal3's, not written here: baremetal-operator v0.13.2's ``examples/*.yaml``
and ``config/samples/metal3.io_v1alpha1_baremetalhost.yaml``, from its Go module
(tools/metal3/crds.sh keeps them beside its CRDs), and the host examples of metal3's user
guide that a Host can carry (tests/unit/metal3_user_guide/, each file naming its source
and commit). Every BareMetalHost of them becomes a Host that the Host schema takes and the
embedded store keeps; what is left to do is said on stderr, one line each, and a
document of another kind is skipped with a note.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from state_controller.bootstrap.hostsfile import HostsFileError, apply_hosts_file, read_hosts_file
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, Cluster
from state_controller.cluster.schema import validators
from state_controller.provisioning.simulated import SimulatedProvisioner
from testbed import samples
from testbed.kube import metal3_crds
from testbed.processes import CLI, cli
from testbed.scenarios import wait_all_in
from tests.conftest import SCENARIO_NAMESPACE

GUIDE = Path(__file__).parent / "metal3_user_guide"


def bmo_samples() -> list[Path]:
    cache = metal3_crds().parent
    return sorted((cache / "examples").glob("*.yaml")) + sorted((cache / "samples").glob("*.yaml"))


def guide_samples() -> list[Path]:
    return sorted(GUIDE.glob("*.yaml"))


def bare_metal_hosts(path: Path) -> list[dict[str, object]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] == "BareMetalHost"]


def test_the_samples_are_all_there() -> None:
    """The cache holds what baremetal-operator v0.13.2 ships: four examples and the
    BareMetalHost sample; the user guide's files hold 11 hosts."""
    assert [p.name for p in bmo_samples()] == [
        "demo-hosts.yaml",
        "example-host-bad-credentials.yaml",
        "example-host.yaml",
        "worker-0.yaml",
        "metal3.io_v1alpha1_baremetalhost.yaml",
    ]
    assert sum(len(bare_metal_hosts(p)) for p in guide_samples()) == 11


@pytest.mark.parametrize("source", ["bmo", "guide"])
def test_convert_takes_every_baremetalhost_of_metal3s_samples(source: str) -> None:
    paths = bmo_samples() if source == "bmo" else guide_samples()
    for path in paths:
        done = cli("convert", "--hosts", str(path))
        assert done.returncode == 0, f"{path.name}: {done.stderr}"
        assert "Traceback" not in done.stderr
        out = [d for d in yaml.safe_load_all(done.stdout) if d]
        hosts = [d for d in out if d["kind"] == "Host"]
        names = [b["metadata"]["name"] for b in bare_metal_hosts(path)]  # type: ignore[index]
        assert [h["metadata"]["name"] for h in hosts] == names, path.name
        read = read_hosts_file(path, secrets_in_cluster=True)
        with EmbeddedCluster(validators=validators()) as cluster:
            apply_hosts_file(cluster, read)
            for host in hosts:
                meta = host["metadata"]
                assert cluster.get(HOSTS, meta["namespace"], meta["name"])["spec"] == host["spec"]


def test_what_is_left_to_do_is_said_once_per_secret_with_its_command() -> None:
    cache = metal3_crds().parent
    demo = cli("convert", "--hosts", str(cache / "examples" / "demo-hosts.yaml"))
    notes = demo.stderr.splitlines()
    [skipped] = [n for n in notes if "skipped" in n]
    assert "document 3: Machine openshift-machine-api/demo-ostest-worker skipped" in skipped
    # three hosts name worker-user-data of openshift-machine-api: one note, with the copy
    [copy] = [n for n in notes if "worker-user-data" in n]
    assert copy.startswith("Secret openshift-machine-api/worker-user-data (spec.userData of ")
    assert "they name default/worker-user-data instead" in copy
    assert "kubectl apply -n default -f -" in copy and '"hoststate.io/host-data": "true"' in copy
    hosts = [d for d in yaml.safe_load_all(demo.stdout) if d and d["kind"] == "Host"]
    given = [h["spec"]["userData"] for h in hosts if "userData" in h["spec"]]
    assert given == [{"name": "worker-user-data"}] * 3  # the Host's own namespace
    assert len(notes) == 2

    bad = cli("convert", "--hosts", str(cache / "examples" / "example-host-bad-credentials.yaml"))
    assert bad.stderr.splitlines() == [
        "Secret default/example-baremetalhost-secret-no-username has an empty username: a Host "
        "naming it cannot register with its BMC; fill it in the file, or: kubectl patch secret "
        "example-baremetalhost-secret-no-username -n default --type merge -p "
        '\'{"stringData": {"username": "USERNAME"}}\'',
        "Secret default/example-baremetalhost-secret-no-password has an empty password: a Host "
        "naming it cannot register with its BMC; fill it in the file, or: kubectl patch secret "
        "example-baremetalhost-secret-no-password -n default --type merge -p "
        '\'{"stringData": {"password": "PASSWORD"}}\'',
    ]

    sample = cli(
        "convert", "--hosts", str(cache / "samples" / "metal3.io_v1alpha1_baremetalhost.yaml")
    )
    assert "spec.foo dropped: no field of baremetal-operator v0.13.2's BareMetalHost" in (
        sample.stderr
    )

    guide = cli("convert", "--hosts", str(GUIDE / "provisioning.yaml"))
    assert guide.stderr.splitlines() == [
        "Secret my-cluster/host-0-bmc (spec.bmc.credentialsName of Host my-cluster/host-0) is "
        "not in the file; add it, or label the one in the cluster: kubectl label secret "
        "host-0-bmc -n my-cluster hoststate.io/bmc-credentials=true",
        "Secret my-cluster/host-0-userdata (spec.userData of Host my-cluster/host-1) is not in "
        "the file; add it, or label the one in the cluster: kubectl label secret "
        "host-0-userdata -n my-cluster hoststate.io/host-data=true",
    ]


def test_the_user_guides_images_and_raid_are_carried() -> None:
    """A live ISO and an oci:// image without a checksum, and every spec.raid example,
    as baremetal-operator v0.13.2 takes them."""
    live_iso = read_hosts_file(GUIDE / "live-iso.yaml", secrets_in_cluster=True)
    assert live_iso.hosts[0]["spec"]["image"] == {
        "url": "http://1.2.3.4/image.iso",
        "diskFormat": "live-iso",
    }
    provisioning = read_hosts_file(GUIDE / "provisioning.yaml", secrets_in_cluster=True)
    images = [h["spec"]["image"]["url"] for h in provisioning.hosts]
    assert images[2:] == [
        "oci://registry.example.com/project/myimage:1.2.3",
        "oci://registry.example.com/project/myimage@sha256:<digest>",
    ]
    raid = read_hosts_file(GUIDE / "raid.yaml", secrets_in_cluster=True)
    written = [b["spec"]["raid"] for b in bare_metal_hosts(GUIDE / "raid.yaml")]  # type: ignore[index]
    assert [h["spec"]["raid"] for h in raid.hosts] == written


def test_bootstrap_takes_the_module_examples_that_hold_their_secrets() -> None:
    """``bootstrap --hosts`` keeps only what the file holds: each of baremetal-operator's
    examples (its BMC Secrets beside its hosts) is taken whole; the user guide's hosts,
    whose Secrets the guide does not show, are refused naming the Secret to add."""
    for path in bmo_samples():
        read = read_hosts_file(path)
        assert len(read.hosts) == len(bare_metal_hosts(path)), path.name
    with pytest.raises(HostsFileError) as refused:
        read_hosts_file(GUIDE / "live-iso.yaml")
    assert "spec.bmc.credentialsName 'live-iso-booted-node-secret', which is not a Secret in " in (
        str(refused.value)
    )


def test_the_docs_sample_is_what_convert_says_of_bmos_demo_hosts() -> None:
    """docs/samples/convert-demo-hosts.txt: the notes of a real run on baremetal-operator's
    examples/demo-hosts.yaml, its Hosts written to a file."""
    examples = metal3_crds().parent / "examples"
    args = ("convert", "--hosts", "demo-hosts.yaml")
    done = subprocess.run(
        [*CLI, *args], cwd=examples, capture_output=True, text=True, timeout=120, check=True
    )
    text = f"$ state-controller {' '.join(args)} > hosts.yaml\n{done.stderr}"
    assert samples.made_by_a_test("convert-demo-hosts", text) == []


BMC_SECRETS = """
---
apiVersion: v1
kind: Secret
metadata: {{name: {name}, namespace: default}}
stringData: {{username: admin, password: s3cret}}
"""


def test_the_user_guides_live_iso_and_oci_hosts_provision_on_simulated_hardware(
    tmp_path: Path, run_controller: Any
) -> None:
    """Taken as ``bootstrap --hosts`` takes them (their BMC Secrets added: the guide does
    not show them), a live ISO and an oci:// image without a checksum reach
    ``provisioned``, and the Host's status records the image as given."""
    live = (GUIDE / "live-iso.yaml").read_text()
    live += BMC_SECRETS.format(name="live-iso-booted-node-secret")
    [oci] = [d for d in (GUIDE / "provisioning.yaml").read_text().split("---\n") if "host-2" in d]
    oci = oci.replace("  userData:\n    name: host-0-userdata\n", "")
    path = tmp_path / "hosts.yaml"
    path.write_text(
        live + "---\n" + oci.replace("my-cluster", "default")
        + BMC_SECRETS.format(name="host-0-bmc")
    )  # fmt: skip
    read = read_hosts_file(path)
    with EmbeddedCluster(validators=validators()) as cluster:
        apply_hosts_file(cluster, read)
        with run_controller(cluster, SimulatedProvisioner()):
            wait_all_in(cluster, "default", "provisioned", ["live-iso-booted-node", "host-2"])
        images = {
            name: cluster.get(HOSTS, "default", name)["status"]["provisioning"]["image"]
            for name in ("live-iso-booted-node", "host-2")
        }
    assert images["live-iso-booted-node"]["url"] == "http://1.2.3.4/image.iso"
    assert images["host-2"]["url"] == "oci://registry.example.com/project/myimage:1.2.3"
    assert not images["host-2"].get("checksum")


def test_every_converted_host_is_taken_by_the_api_server(cluster: Cluster) -> None:
    """The Hosts of every sample, created on the embedded store and on a real
    kube-apiserver with hoststate's CRD (its CEL rules included), come back as converted.
    Moved into the test namespace, each name led by its file's number (two of
    baremetal-operator's examples name the same host)."""
    for number, path in enumerate([*bmo_samples(), *guide_samples()]):
        for host in read_hosts_file(path, secrets_in_cluster=True).hosts:
            meta = {
                "name": f"f{number}-{host['metadata']['name']}",
                "namespace": SCENARIO_NAMESPACE,
            }
            cluster.create(HOSTS, {**host, "metadata": meta})
            stored = cluster.get(HOSTS, SCENARIO_NAMESPACE, meta["name"])["spec"]
            assert holds(stored, host["spec"]), (path.name, stored, host["spec"])


def holds(stored: object, given: object) -> bool:
    """Whether ``stored`` says all that ``given`` says (the server adds its defaults)."""
    if isinstance(given, dict):
        return isinstance(stored, dict) and all(holds(stored.get(k), v) for k, v in given.items())
    if isinstance(given, list):
        return (
            isinstance(stored, list)
            and len(stored) == len(given)
            and all(holds(a, b) for a, b in zip(stored, given, strict=True))
        )
    return stored == given


def test_bootstrap_says_the_same_notes_before_it_starts(tmp_path: Path) -> None:
    """``bootstrap --hosts`` on baremetal-operator's demo-hosts.yaml: the notes convert
    prints, on stderr, before the bootstrap runs (here until its --timeout: three of the
    hosts wait for a user data Secret the file does not hold)."""
    examples = metal3_crds().parent / "examples"
    args = ("bootstrap", "--hosts", str(examples / "demo-hosts.yaml"), "--state-dir",
            str(tmp_path / "boot"), "--no-table", "--exit-when-settled", "--timeout", "20",
            "--metrics-bind-address", "127.0.0.1:0")  # fmt: skip
    done = cli(*args, timeout=120)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    converted = cli("convert", "--hosts", str(examples / "demo-hosts.yaml"))
    for note in converted.stderr.splitlines():
        assert note in done.stderr.splitlines()
