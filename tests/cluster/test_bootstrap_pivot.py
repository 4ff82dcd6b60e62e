"""Bootstrap, a kill -9, pivot into a real cluster, and on to a second one: one story.

Against real kube-apiservers (two on loopback), with the simulated machines kept in the
bootstrap's state dir: the controller in each cluster is given the same machines, as
it would be given the same Ironic.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from state_controller.cluster.interface import HOSTS, HOSTSTATES, SECRETS, Cluster
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.hardware_file import HardwareFile
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.nodes import SimulatedNode
from testbed.bootstrap import (
    arrived,
    assert_continuous,
    bootstrap_process,
    machines,
    provisioned,
    store_objects,
    store_states,
    write_hosts_file,
)
from testbed.control_plane import ControlPlane
from testbed.kube import HOSTS_NS, k8s_bin_dir
from testbed.processes import cli
from testbed.scenarios import step_of
from tests.conftest import FAST_BACKOFF, empty_namespace, wait_for

pytestmark = pytest.mark.slow

OPERATIONS_ONCE = ("register", "inspect", "prepare", "provision")


@pytest.fixture(scope="module")
def second_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """Another cluster on loopback, bare (no CRDs, no namespaces): the pivot sets it up."""
    with ControlPlane(k8s_bin_dir(), tmp_path_factory.mktemp("k8s-second")) as plane:
        yield plane


def _started_operations(state_dir: Path) -> dict[str, dict[str, int]]:
    return {address: dict(m["started"]) for address, m in machines(state_dir).items()}


def _in_cluster(cluster: Cluster, state_dir: Path, run_controller: Any) -> Any:
    """The controller a cluster runs, over the machines the bootstrap drove."""
    sim = SimulatedProvisioner(hardware=HardwareFile(state_dir / "cluster.db"))
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, namespaces=(HOSTS_NS,))
    return run_controller(cluster, sim, config)


def upgrade(cluster: Cluster, node: SimulatedNode) -> None:
    """A plain kubelet upgrade: cordoned, rebooted into a new kubelet, uncordoned."""

    def at(step: str) -> None:
        wait_for(lambda: step_of(cluster, HOSTS_NS, node.name) == step, what=step)

    at("updated")
    node.cordon()
    at("applying update")
    node.go_down()
    at("rebooting")
    node.come_back(kubelet_version="v1.37.1")
    at("resuming")
    node.cordon(False)
    at("updated")


def test_bootstrap_killed_then_pivoted_twice_keeps_one_story(
    control_plane: ControlPlane,
    second_plane: ControlPlane,
    admin: KubeCluster,
    run_controller: Any,
    tmp_path: Path,
) -> None:
    state_dir = tmp_path / "bootstrap"
    hosts_file = tmp_path / "hosts.yaml"
    names = write_hosts_file(hosts_file, HOSTS_NS, 3)

    with bootstrap_process(state_dir, tmp_path / "bootstrap.log") as boot:
        boot.start("--hosts", str(hosts_file))  # demo timings: seconds per step
        try:
            wait_for(lambda: "provisioning" in store_states(state_dir).values(), timeout=90)
        except AssertionError as stalled:  # seen once: the threads say where it stood
            raise AssertionError(f"{stalled}; the bootstrap:\n{boot.stacks()}") from None
        boot.kill9()
        at_kill = store_states(state_dir)
        assert set(at_kill.values()) - {"provisioned"}, at_kill  # killed mid-provisioning
        boot.start("--exit-when-settled")  # the same dir, no hosts file: carries on
        assert boot.wait(timeout=120) == 0, boot.tail()

    after_bootstrap = _started_operations(state_dir)
    assert len(after_bootstrap) == 3
    for address, started in after_bootstrap.items():
        for operation in OPERATIONS_ONCE:
            assert started.get(operation) == 1, (address, started)  # nothing redone
    for state in store_objects(state_dir).values():
        assert state["status"]["mode"] == "Bootstrap"
        assert_continuous(state, pivots=0)

    # the bootstrap's books, read from outside while nothing runs
    listed = cli("get", "hoststates", "--state-dir", str(state_dir), "-o", "wide")
    assert listed.returncode == 0 and "Bootstrap" in listed.stdout, listed.stderr

    # into the first cluster
    kubeconfig = str(control_plane.kubeconfig)
    moved = cli("pivot", "--state-dir", str(state_dir), "--kubeconfig", kubeconfig)
    assert moved.returncode == 0, moved.stderr
    for name in names:
        assert f"{HOSTS_NS}/{name}: paused, secret created, host created" in moved.stdout
    assert "moved 3/3" in moved.stderr and "3 hosts moved" in moved.stderr  # progress, totals
    assert store_objects(state_dir, HOSTS) == {}  # the source let them go
    again = cli("pivot", "--state-dir", str(state_dir), "--kubeconfig", kubeconfig)
    assert again.returncode == 0 and "nothing to move" in again.stderr, again.stderr
    back = cli("bootstrap", "--state-dir", str(state_dir), "--hosts", str(hosts_file))
    assert back.returncode == 2 and "were pivoted into" in back.stderr, back.stderr

    with _in_cluster(admin, state_dir, run_controller) as first:
        wait_for(lambda: arrived(admin, HOSTS_NS, names, 1), timeout=60, what="arrivals")
        wait_for(first.controller.idle)
        assert provisioned(admin, HOSTS_NS, names)
        # this cluster's time-in-state counters include the bootstrap phase, once
        inspecting = {"state": "inspecting"}
        assert first.sample("hoststate_state_duration_seconds_count", inspecting) == 3
        assert first.sample("hoststate_state_duration_seconds_sum", inspecting) > 0
        assert first.sample("hoststate_controller_mode", {"mode": "Cluster"}) == 1
        for state in admin.list(HOSTSTATES, HOSTS_NS)[0]:
            assert_continuous(state, pivots=1)
        for host in admin.list(HOSTS, HOSTS_NS)[0]:
            assert not (host["metadata"].get("annotations") or {})  # paused and status gone
        # the node host-0000 becomes joins its story, and its update is a chapter of it
        node = SimulatedNode(admin, "host-0000", provider_id=f"metal3://{HOSTS_NS}/host-0000/m")
        try:
            node.register()
            upgrade(admin, node)
            story = admin.get(HOSTSTATES, HOSTS_NS, "host-0000")
            assert story["spec"]["node"] == "host-0000"
            assert_continuous(story, pivots=1)
            assert [c["name"] for c in story["status"]["chapters"]][-1] == "update"
        finally:
            node.delete()
    assert _started_operations(state_dir) == after_bootstrap

    # on to a second cluster, as a management cluster hands hosts to another
    second = KubeCluster.from_kubeconfig(str(second_plane.kubeconfig))
    try:
        handed = cli("pivot", "--from", kubeconfig, "--to", str(second_plane.kubeconfig))
        assert handed.returncode == 0, handed.stderr
        assert "CRDs created: hosts.hoststate.io" in handed.stderr, handed.stderr
        assert f"namespaces created: {HOSTS_NS}" in handed.stderr, handed.stderr
        wait_for(lambda: not admin.list(HOSTS, HOSTS_NS)[0], what="the first cluster let go")
        assert not admin.list(SECRETS, HOSTS_NS)[0]
        with _in_cluster(second, state_dir, run_controller) as there:
            wait_for(lambda: arrived(second, HOSTS_NS, names, 2), timeout=60, what="arrivals")
            wait_for(there.controller.idle)
            assert provisioned(second, HOSTS_NS, names)
            for state in second.list(HOSTSTATES, HOSTS_NS)[0]:
                history = assert_continuous(state, pivots=2)
                assert history[-1]["message"].startswith("moved here")
        assert _started_operations(state_dir) == after_bootstrap
    finally:
        empty_namespace(second, HOSTS_NS)
        second.close()
