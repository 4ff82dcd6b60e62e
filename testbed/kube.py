"""A real control plane for the tests: built once, started once per session, CRDs installed."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testbed.control_plane import ControlPlane
from testbed.tools import cluster_api_crds

if TYPE_CHECKING:
    from kubernetes.client import Configuration

    from state_controller.cluster.interface import Cluster
    from state_controller.runtime.config import ControllerConfig

ROOT = Path(__file__).resolve().parents[1]
HOSTS_NS = "metal"  # the Hosts of the cluster tests (as in manifests/)
NAMESPACES = ("fleet", HOSTS_NS, "hoststate-system")


BUILD = ROOT / "tools" / "k8s" / "build.sh"
METAL3_CRDS = ROOT / "tools" / "metal3" / "crds.sh"
BUILD_TIMEOUT = 1800.0  # cached: instant; cold: ~10 min on 2 cores (scripts/test builds first)
MONITORING_CRDS = ROOT / "testbed" / "monitoring-crds.yaml"
OPENSHIFT_CRDS = ROOT / "tools" / "openshift" / "crds.sh"
MANIFESTS = ROOT / "manifests"


def k8s_bin_dir() -> Path:
    """The cached Kubernetes binaries, built by tools/k8s/build.sh on first use."""
    how = "run scripts/test (or tools/k8s/build.sh) to build etcd, kube-apiserver and kubectl"
    proc = subprocess.Popen(
        [str(BUILD)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=BUILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # build.sh and its go builds
        proc.communicate()
        raise RuntimeError(
            f"tools/k8s/build.sh did not finish in {BUILD_TIMEOUT:.0f}s: {how}"
        ) from None
    lines = out.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = "\n".join(err.strip().splitlines()[-10:])
        raise RuntimeError(f"tools/k8s/build.sh failed ({proc.returncode}): {how}\n{tail}")
    return Path(lines[-1])


def metal3_crds() -> Path:
    """The BareMetalHost CRD of baremetal-operator, from its Go module (cached)."""
    done = subprocess.run(
        [str(METAL3_CRDS)], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"tools/metal3/crds.sh failed ({done.returncode}): {done.stderr}")
    return Path(lines[-1]) / "metal3.io_baremetalhosts.yaml"


def openshift_crds() -> list[Path]:
    """OpenShift's MachineConfigNode and MachineConfigPool CRDs, from openshift/api's Go
    module (cached)."""
    done = subprocess.run(
        [str(OPENSHIFT_CRDS)], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"tools/openshift/crds.sh failed ({done.returncode}): {done.stderr}")
    return sorted(Path(lines[-1]).glob("*.crd.yaml"))


def kubectl(
    plane: ControlPlane, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        plane.kubectl_argv(*args), capture_output=True, text=True, check=check, timeout=120
    )


def as_service_account(plane: ControlPlane, name: str, namespace: str) -> Configuration:
    """A client configuration that speaks as the ServiceAccount ``namespace/name`` (a
    token from the TokenRequest API, for 10 minutes): what its RBAC grants, and only
    that, is what a test run with it may do."""
    from kubernetes import client

    token = kubectl(plane, "create", "token", name, "-n", namespace, "--duration=10m").stdout
    configuration = client.Configuration(host=plane.url)
    configuration.api_key = {"authorization": token.strip()}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    configuration.ssl_ca_cert = str(plane.ca_file)
    return configuration


# Every request on metal3.io (who, which verb, which object), and nothing else: the proof
# that the controller never writes a BareMetalHost (tests/cluster/test_observe_audit.py).
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    resources:
      - group: metal3.io
  - level: None
"""


def audit_log(plane: ControlPlane) -> Path:
    """The API server's audit log: one JSON event per line (the session plane's: requests
    on metal3.io)."""
    return plane.workdir / "audit.log"


def audited(workdir: Path, policy: str) -> list[str]:
    """kube-apiserver's flags for an audit log of what ``policy`` (an audit Policy's
    YAML) names, one JSON event per line in ``workdir/audit.log`` (:func:`audit_log`),
    each written before the request is answered."""
    policy_file = workdir / "audit-policy.yaml"
    policy_file.write_text(policy)
    return [
        f"--audit-policy-file={policy_file}",
        f"--audit-log-path={workdir / 'audit.log'}",
        "--audit-log-format=json",
        "--audit-log-mode=blocking",
    ]


@contextmanager
def started_control_plane(workdir: Path) -> Iterator[ControlPlane]:
    workdir.mkdir(parents=True, exist_ok=True)
    audit = audited(workdir, AUDIT_POLICY)
    with ControlPlane(k8s_bin_dir(), workdir, extra_apiserver_args=audit) as plane:
        crds = sorted((ROOT / "api" / "v1alpha1").glob("hoststate.io_*.yaml"))
        crds.append(MONITORING_CRDS)  # stand-ins for the Prometheus operator's, for manifests/
        crds.append(metal3_crds())  # baremetal-operator's own, for the observe mode
        crds.extend(openshift_crds())  # MachineConfigNode and -Pool: openshift/api's own
        crds.append(cluster_api_crds() / "cluster.x-k8s.io_machines.yaml")  # Cluster API's own
        kubectl(plane, "apply", "--server-side", *(f"--filename={path}" for path in crds))
        plane.wait_established(
            "hosts.hoststate.io", "hoststates.hoststate.io", "nodepools.hoststate.io",
            "servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com",
            "baremetalhosts.metal3.io", "machineconfignodes.machineconfiguration.openshift.io",
            "machineconfigpools.machineconfiguration.openshift.io",
            "machines.cluster.x-k8s.io",
        )  # fmt: skip
        for namespace in NAMESPACES:
            kubectl(plane, "create", "namespace", namespace)
        wait_for_garbage_collection(plane)
        yield plane


def wait_for_garbage_collection(plane: ControlPlane, timeout: float = 90.0) -> None:
    """kube-controller-manager discovers new CRDs every 30 s; until then a HostState
    outlives its Host. Wait until it collects one, so scenarios see a settled cluster."""
    from state_controller.cluster.interface import HOSTS, HOSTSTATES, NotFound
    from state_controller.cluster.kube import KubeCluster

    kube = KubeCluster.from_kubeconfig(str(plane.kubeconfig))
    try:
        owner = kube.create(
            HOSTS, {"metadata": {"name": "gc-probe", "namespace": HOSTS_NS}, "spec": {}}
        )
        kube.create(
            HOSTSTATES,
            {
                "metadata": {
                    "name": "gc-probe",
                    "namespace": HOSTS_NS,
                    "ownerReferences": [
                        {"apiVersion": owner["apiVersion"], "kind": "Host", "name": "gc-probe",
                         "uid": owner["metadata"]["uid"]}
                    ],
                },
                "spec": {},
            },
        )  # fmt: skip
        kube.delete(HOSTS, HOSTS_NS, "gc-probe")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                kube.get(HOSTSTATES, HOSTS_NS, "gc-probe")
            except NotFound:
                return
            time.sleep(0.5)
        raise RuntimeError(f"garbage collector did not collect a HostState in {timeout}s")
    finally:
        kube.close()


def apply_manifests(plane: ControlPlane) -> subprocess.CompletedProcess[str]:
    return kubectl(plane, "apply", "-k", str(MANIFESTS), "--server-side")


def host_states(kube: Cluster, namespace: str = HOSTS_NS) -> dict[str, str]:
    """Each Host's provisioning state as written in its status ("" before the first)."""
    from testbed.scenarios import states_in

    return states_in(kube, namespace, reported=False)


def deployment_config(container: dict[str, Any], **overrides: Any) -> ControllerConfig:
    """The controller as an installed Deployment's container arguments configure it,
    through the command's own parsing and translation (so a test runs the controller
    those arguments describe), with ``overrides`` (a test's workers and backoff)."""
    from state_controller.cli import build_parser
    from state_controller.commands.run import run_options
    from state_controller.manager import controller_config

    config = controller_config(run_options(build_parser().parse_args(container["args"])))
    return replace(config, **overrides)
