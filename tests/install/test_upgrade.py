"""Upgrading hoststate in place, and rolling it back, on the real kube-apiserver.

The previous release is installed as a user would have installed it: its source as
the changelog names it (the commit of its ``## [x.y.z]`` entry, taken from this
repository's history with ``git archive``), its ``manifests/`` applied with kubectl, and
its controller run as the install's ServiceAccount with the Deployment's own flags
(``leader-elect`` on its Lease). It provisions hosts on simulated hardware kept in a
file (so every process finds the machines as the last one left them), and one Node's
update is left half-way. Then the current release is applied over it and its controller
started on the same cluster and hardware; then the previous one again (the rollback).

Each time the test checks that nothing is lost or done twice: every HostState's history
is the one before (then continued, not restarted), no machine is registered, inspected
or deployed again (the hardware file counts each operation started), the Node's update
goes on from the step it was at, and the writes the new controller makes on hoststate.io
objects (counted from the API server's audit log, per object) stay within a bound.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from state_controller.cluster.interface import HOSTS, HOSTSTATES
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.hardware_file import HardwareFile
from state_controller.simulation.fleet import create_fleet
from state_controller.simulation.nodes import SimulatedNode
from testbed.control_plane import ControlPlane
from testbed.kube import audit_log, audited, k8s_bin_dir
from testbed.processes import ServerProcess, free_port
from testbed.scenarios import WORKER, host_state, step_of, update_of
from testbed.tools import prometheus_operator_crds
from testbed.waiting import wait_for

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NS = "metal"  # the Hosts' namespace of manifests/
CONTROLLER_NS = "hoststate-system"
SA = "hoststate-controller"
HOSTS_COUNT = 4
OLD, NEW = "rendered-worker-1", "rendered-worker-2"
# The most writes on hoststate.io an upgrade (or a rollback) may cost one host: its
# HostState's status once, should the new release show it otherwise. A write storm
# (every object rewritten each resync, or a history started over) is far above it.
WRITES_PER_HOST = 2

# Only writes on hoststate.io, who made them and on what: the cost of each upgrade.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch", "delete"]
    resources:
      - group: hoststate.io
  - level: None
"""


@dataclass(frozen=True)
class Release:
    version: str
    commit: str


def previous_release() -> Release:
    """The latest release the changelog names with its source commit."""
    text = (ROOT / "CHANGELOG.md").read_text()
    found = re.search(
        r"^## \[(\d+\.\d+\.\d+)\] - \S+\n\n[^\n]*commit `([0-9a-f]{7,40})`", text, re.MULTILINE
    )
    assert found, "CHANGELOG.md: no release whose first line names its commit (`…`)"
    return Release(found.group(1), found.group(2))


@pytest.fixture(scope="module")
def previous(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The previous release's source tree, from this repository's history."""
    release = previous_release()
    archived = subprocess.run(
        ["git", "archive", "--format=tar", release.commit],
        cwd=ROOT, capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    assert archived.returncode == 0, (
        f"git archive {release.commit} (release {release.version}): "
        f"{archived.stderr.decode().strip()}; the test needs the repository's history "
        "(a clone, not a shallow one)"
    )
    tree = tmp_path_factory.mktemp(f"hoststate-{release.version}")
    with tarfile.open(fileobj=BytesIO(archived.stdout)) as tar:
        tar.extractall(tree, filter="data")
    return tree


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A kube-apiserver (no controller manager: nothing is scheduled or collected) that
    audits every write on hoststate.io, with prometheus-operator's CRDs."""
    workdir = tmp_path_factory.mktemp("upgrade")
    audit = audited(workdir, AUDIT_POLICY)
    with ControlPlane(
        k8s_bin_dir(), workdir, controller_manager=False, extra_apiserver_args=audit
    ) as cp:
        kubectl(cp, "apply", "--server-side", f"--filename={prometheus_operator_crds()}")
        cp.wait_established(
            "servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"
        )
        yield cp


def kubectl(plane: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(plane.kubectl_argv(*args), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"kubectl {' '.join(args)}:\n{done.stdout}{done.stderr}"
    return done


def install(plane: ControlPlane, tree: Path) -> None:
    """``kubectl apply -k manifests/ --server-side`` from a release's tree (the Hosts'
    namespace created first, as the current install asks; an earlier one declared it)."""
    if kubectl(plane, "get", "namespace", NS, "--ignore-not-found", "-o", "name").stdout == "":
        kubectl(plane, "create", "namespace", NS)
    kubectl(plane, "apply", "-k", str(tree / "manifests"), "--server-side", "--force-conflicts")
    plane.wait_established("hosts.hoststate.io", "hoststates.hoststate.io")


def service_account_kubeconfig(plane: ControlPlane, path: Path) -> Path:
    """A kubeconfig that speaks as the install's ServiceAccount (a TokenRequest token)."""
    token = kubectl(plane, "create", "token", SA, "-n", CONTROLLER_NS, "--duration=1h").stdout
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "test",
                        "cluster": {
                            "server": plane.url,
                            "certificate-authority": str(plane.ca_file),
                        },
                    }
                ],
                "users": [{"name": SA, "user": {"token": token.strip()}}],
                "contexts": [{"name": "test", "context": {"cluster": "test", "user": SA}}],
                "current-context": "test",
            }
        )
    )
    path.chmod(0o600)
    return path


class Controller:
    """One release's ``state-controller run`` in a process: the Deployment's flags of
    manifests/ (namespace, leader election on its Lease), with a kubeconfig, metrics on
    loopback and the shared hardware file in place of the pod's surroundings."""

    def __init__(self, tree: Path, kubeconfig: Path, hardware: Path, log: Path) -> None:
        self.tree, self.kubeconfig, self.hardware = tree, kubeconfig, hardware
        self.process = ServerProcess(f"state-controller ({tree.name})", log, stop_timeout=20)
        self.port = 0

    def start(self) -> None:
        self.port = free_port()
        argv = [
            sys.executable, "-m", "state_controller.cli", "run",
            "--kubeconfig", str(self.kubeconfig), "--namespace", NS,
            "--leader-elect", "--leader-election-namespace", CONTROLLER_NS,
            "--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "1",
            "--metrics-bind-address", f"127.0.0.1:{self.port}",
            "--health-probe-bind-address", "0",
            "--simulated-hardware", str(self.hardware),
        ]  # fmt: skip
        # its own source first on the path: the release's package, not this checkout's
        env = {"PYTHONPATH": str(self.tree), "PATH": "/usr/bin:/bin", "HOME": str(self.tree)}
        imported = subprocess.run(
            [sys.executable, "-c", "import state_controller; print(state_controller.__file__)"],
            cwd=self.tree, env=env, capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        assert Path(imported.stdout.strip()).is_relative_to(self.tree), imported.stdout
        self.process.start(argv, self.tree, env=env)
        self.process.wait_ready(
            lambda: None if self.metrics() else "no metrics yet",
            timeout=60,
            not_ready="served no metrics",
        )

    def metrics(self) -> dict[str, float]:
        """Each sample's value by name and labels (``name{a="b"}``); {} when not serving."""
        try:
            url = f"http://127.0.0.1:{self.port}/metrics"
            with urllib.request.urlopen(url, timeout=5) as answer:
                text = answer.read().decode()
        except OSError:
            return {}
        samples = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                samples[f"{s.name}{{{labels}}}"] = s.value
        return samples

    def sum_of(self, name: str) -> float:
        return sum(v for k, v in self.metrics().items() if k.startswith(name + "{"))

    def settled(self, reconciles: int) -> bool:
        """It leads, has reconciled at least ``reconciles`` keys, and has nothing queued
        and nothing being reconciled."""
        return (
            self.sum_of("controller_runtime_reconcile_total") >= reconciles
            and self.sum_of("workqueue_depth") == 0
            and self.sum_of("workqueue_unfinished_work_seconds") == 0
        )

    def stop(self) -> None:
        self.process.stop()
        assert self.process.last_exit == 0, self.process.log_tail()


def settle(controller: Controller, reconciles: int, what: str) -> None:
    """Until ``controller`` has settled; on timeout, the error ends with its metrics and log."""
    try:
        wait_for(lambda: controller.settled(reconciles), timeout=60, what=f"{what} settled")
    except AssertionError as timed_out:
        wanted = ("controller_runtime_reconcile_total", "workqueue_")
        shown = {k: v for k, v in controller.metrics().items() if k.startswith(wanted)}
        raise AssertionError(f"{timed_out}; {shown}\n{controller.process.log_tail()}") from None


def audit_writes(plane: ControlPlane, since: int) -> tuple[Counter[str], int]:
    """The controller's writes on hoststate.io after line ``since`` of the audit log, by
    ``resource/name`` (a status write counts on its object), and the log's line count."""
    lines = audit_log(plane).read_text().splitlines()
    writes: Counter[str] = Counter()
    for line in lines[since:]:
        event = json.loads(line)
        if event["user"]["username"] != f"system:serviceaccount:{CONTROLLER_NS}:{SA}":
            continue
        ref = event.get("objectRef") or {}
        if event.get("responseStatus", {}).get("code", 200) < 300:
            writes[f"{ref.get('resource')}/{ref.get('name')}"] += 1
    return writes, len(lines)


def machines(hardware: Path) -> dict[str, dict[str, int]]:
    """Each simulated machine's operations started so far, by BMC address."""
    kept = HardwareFile(hardware)
    try:
        return {record.address: dict(record.started) for record in kept.load()}
    finally:
        kept.close()


def histories(admin: KubeCluster) -> dict[str, list[dict[str, Any]]]:
    listed = admin.list(HOSTSTATES, NS)[0]
    return {s["metadata"]["name"]: list(s["status"]["history"]) for s in listed}


def test_an_upgrade_and_a_rollback_keep_every_history_and_redo_nothing(
    plane: ControlPlane, previous: Path, tmp_path: Path
) -> None:
    admin = KubeCluster.from_kubeconfig(str(plane.kubeconfig))
    hardware = tmp_path / "hardware.db"
    try:
        install(plane, previous)
        kubeconfig = service_account_kubeconfig(plane, tmp_path / "kubeconfig")
        old = Controller(previous, kubeconfig, hardware, tmp_path / "previous.log")
        new = Controller(ROOT, kubeconfig, hardware, tmp_path / "current.log")
        names = [key.partition("/")[2] for key in create_fleet(admin, NS, HOSTS_COUNT)]
        nodes = [
            SimulatedNode(admin, name, labels=WORKER, provider_id=f"metal3://{NS}/{name}/m-0")
            for name in names
        ]
        old.start()
        try:
            wait_for(
                lambda: all(host_state(h) == "provisioned" for h in admin.list(HOSTS, NS)[0]),
                timeout=60,
                what=f"the previous release provisioning its hosts; log:\n{old.process.log_tail()}",
            )
            for node in nodes:
                node.register()
                node.annotate({"hoststate.io/current-config": OLD})
            wait_for(lambda: all(step_of(admin, NS, n) == "updated" for n in names), timeout=60)
            # one Node's update left half-way: told, working, cordoned, gone down
            moving = nodes[0]
            moving.annotate({"hoststate.io/desired-config": NEW})
            moving.annotate({"hoststate.io/update-state": "Working"})
            moving.cordon()
            moving.go_down()
            wait_for(lambda: step_of(admin, NS, moving.name) == "rebooting", timeout=60)
            settle(old, HOSTS_COUNT, "the previous release")
        finally:
            old.stop()

        for release, controller, tree in (("current", new, ROOT), ("previous", old, previous)):
            before = histories(admin)
            done_before = machines(hardware)
            began = time.monotonic()
            install(plane, tree)
            applied = time.monotonic() - began
            _, since = audit_writes(plane, 0)
            controller.start()
            try:
                # every Host once (a Node joined to its Host is reconciled with it)
                settle(controller, HOSTS_COUNT, f"the {release} release")
                print(f"{release}: applied in {applied:.1f} s, settled "
                      f"{time.monotonic() - began:.1f} s after the apply began")  # fmt: skip
                after = histories(admin)
                assert after == before, f"{release}: a history changed on taking over"
                assert machines(hardware) == done_before, f"{release}: a machine redone"
                assert step_of(admin, NS, moving.name) == "rebooting"
                writes, _ = audit_writes(plane, since)
                most = max(writes.values(), default=0)
                print(f"{release}: {sum(writes.values())} writes on hoststate.io, {dict(writes)}")
                assert most <= WRITES_PER_HOST, (release, writes)
            finally:
                controller.stop()

        # the update goes on, under the release rolled back to, from where it was
        old.start()
        try:
            moving.come_back()
            moving.cordon(False)
            moving.annotate(
                {"hoststate.io/current-config": NEW, "hoststate.io/update-state": "Done"}
            )
            wait_for(lambda: step_of(admin, NS, moving.name) == "updated", timeout=60)
            history = admin.get(HOSTSTATES, NS, moving.name)["status"]["history"]
            seqs = [h["seq"] for h in history]
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # no gap, nothing twice
            assert update_of(admin.get(HOSTSTATES, NS, moving.name))["currentConfig"] == NEW
        finally:
            old.stop()
    finally:
        admin.close()
