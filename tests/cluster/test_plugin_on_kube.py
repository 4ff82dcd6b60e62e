"""``kubectl hoststate`` on a real control plane, against what a real controller wrote.

Six Hosts provisioned by the controller (simulated hardware of one model), their Nodes in
the pool ``worker``; the first five updated to a new configuration one after the other,
so that every step of an update is learned five times on machines of that pool and
class. The controller's clock (and the Nodes') runs behind the wall clock and is moved on
by each step's duration, minutes each, so what is learned reads like a real fleet's; it
ends a minute behind, so the plugin's ages are a minute more than the controller saw. On the
first, while nothing is learned yet, ``why`` and ``eta`` say there is no estimate and
give no number; on the sixth, in its first step, ``why`` gives the step's usual and late
durations and ``eta`` the pool's expected end, with the sixth among the machines
updating; then the first, updated again in a step never learned (a CRI-O reload), has no
estimate; ``history`` shows its chapters, provisioning and both updates together. Each
run is the installed ``kubectl-hoststate`` executable, and once the real ``kubectl``
finding it on PATH as ``kubectl hoststate``. The outputs are printed (``-s``):
docs/plugin.md shows them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest

from state_controller.api.updates import UpdateStep as S
from state_controller.cluster.interface import HOSTS, HOSTSTATES, NODEPOOLS, SECRETS
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.provisioning.simulated_machines import MODELS
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.controller import HostController
from state_controller.simulation.fleet import host_manifest, secret_manifest
from state_controller.simulation.nodes import SimulatedNode
from testbed.control_plane import ControlPlane
from testbed.kube import HOSTS_NS
from testbed.scenarios import NS as PODS_NS
from testbed.scenarios import WORKER, allow_pods
from tests.conftest import FAST_BACKOFF, remove_nodes, wait_for

pytestmark = pytest.mark.slow  # six machines provisioned, five updated

NS = HOSTS_NS
MACHINES = 6
LEARNED = 5  # the past durations an estimate needs (durations.learned.MIN_SAMPLES)
WAIT = 60.0  # generous: two shared cores
OLD, NEW, NEWER = "rendered-worker-1", "rendered-worker-2", "rendered-worker-3"
PLUGIN = Path(sys.executable).parent / "kubectl-hoststate"


# seconds each step takes on the n-th machine updated: preparing, draining, applying,
# rebooting, resuming (each under its stuck threshold)
STEPS = (S.PREPARING, S.DRAINING, S.APPLYING, S.REBOOTING, S.RESUMING)
TAKES = [(70 + 9 * n, 190 + 40 * n, 125 + 6 * n, 310 + 25 * n, 40 + 7 * n) for n in range(5)]
BEHIND = 60.0  # the controller's clock at the end, behind the wall clock


def name_of(index: int) -> str:
    """Machines 0, 1, 2, 4, 5, 6: the simulated model of each is the same (every fourth,
    3, 7, …, is another: simulated_machines.model_of), so one class is learned."""
    return f"rack7-node-{(index + (index >= 3)):02d}"


class Clock:
    """The wall clock less ``behind`` seconds, moved on by :meth:`advance`."""

    def __init__(self, behind: float) -> None:
        self.behind = behind

    def __call__(self) -> float:
        return time.time() - self.behind

    def advance(self, seconds: float) -> None:
        self.behind -= seconds


def status(kube: KubeCluster, name: str) -> dict[str, object]:
    return dict(kube.get(HOSTSTATES, NS, name).get("status") or {})


def step_is(kube: KubeCluster, name: str, step: S) -> bool:
    return (status(kube, name).get("update") or {}).get("step") == step.value  # type: ignore[union-attr]


def plugin(plane: ControlPlane, *args: str, code: int = 0) -> str:
    """``kubectl-hoststate ARGS`` as a user runs it; its output (stderr when it fails)."""
    assert PLUGIN.exists(), f"{PLUGIN} is missing: run .venv/bin/pip install -e ."
    done = subprocess.run(
        [str(PLUGIN), *args, "--kubeconfig", str(plane.kubeconfig)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    print(f"$ kubectl hoststate {' '.join(args)}\n{done.stdout}{done.stderr}")
    return done.stdout if code == 0 else done.stderr


@pytest.fixture
def clock() -> Clock:
    """Behind by the five updates to come, and ten minutes for provisioning before them."""
    return Clock(BEHIND + sum(map(sum, TAKES)) + 600)


@pytest.fixture
def fleet(
    control_plane: ControlPlane, admin: KubeCluster, clock: Clock
) -> Iterator[dict[str, SimulatedNode]]:
    """Six provisioned Hosts with their Nodes at ``OLD``, the controller running."""
    allow_pods(admin)
    controller = HostController(
        admin,
        SimulatedProvisioner(),
        config=ControllerConfig(namespaces=(NS,), backoff=FAST_BACKOFF, pool_status_interval=0),
        clock=clock,
    )
    controller.start()
    try:
        nodes: dict[str, SimulatedNode] = {}
        for index in range(MACHINES):
            name = name_of(index)
            manifest = host_manifest(NS, 70 + index)
            manifest["metadata"]["name"] = name
            manifest["spec"]["bmc"]["credentialsName"] = f"{name}-bmc"
            admin.create(SECRETS, secret_manifest(NS, f"{name}-bmc", "admin", "pw"))
            admin.create(HOSTS, manifest)
            nodes[name] = SimulatedNode(
                admin, name, labels=WORKER, provider_id=f"metal3://{NS}/{name}/m", clock=clock
            )
        for name, node in nodes.items():
            wait_for(
                lambda n=name: status(admin, n).get("phase") == "Provisioned",
                WAIT,
                f"{name} provisioned",
            )
            node.register()
            node.annotate({"hoststate.io/current-config": OLD})
            wait_for(partial(step_is, admin, name, S.UPDATED), WAIT, f"{name}'s Node followed")
        clock.advance(600)  # the Nodes ran for ten minutes before the rollout
        yield nodes
    finally:
        controller.stop()
        remove_nodes(admin)


def begin(kube: KubeCluster, node: SimulatedNode) -> None:
    """The node's update begins: it is in its first timed step, preparing."""
    node.annotate({"hoststate.io/desired-config": NEW, "hoststate.io/update-state": "Working"})
    wait_for(partial(step_is, kube, node.name, S.PREPARING), WAIT, f"{node.name} preparing")


def finish(kube: KubeCluster, node: SimulatedNode, clock: Clock, takes: tuple[int, ...]) -> None:
    """The rest of the node's update, step by step (drained, applied, rebooted, resumed),
    each step ``takes`` seconds long on the controller's clock."""
    took = dict(zip(STEPS, takes, strict=True))

    def step(now: S, then: S, act: Callable[[], object]) -> None:
        clock.advance(took[now])
        act()
        wait_for(partial(step_is, kube, node.name, then), WAIT, f"{node.name} {then.value}")

    node.run_pod(PODS_NS, f"{node.name}-web")
    step(S.PREPARING, S.DRAINING, node.cordon)
    step(S.DRAINING, S.APPLYING, lambda: node.evict(PODS_NS, f"{node.name}-web"))
    step(S.APPLYING, S.REBOOTING, node.go_down)
    step(S.REBOOTING, S.RESUMING, node.come_back)
    node.cordon(False)
    step(
        S.RESUMING,
        S.UPDATED,
        lambda: node.annotate(
            {"hoststate.io/current-config": NEW, "hoststate.io/update-state": "Done"}
        ),
    )


def test_history_why_and_eta_on_a_real_rollout(
    control_plane: ControlPlane, admin: KubeCluster, clock: Clock, fleet: dict[str, SimulatedNode]
) -> None:
    nodes = list(fleet.values())
    first, last = nodes[0], nodes[-1]

    # nothing learned yet: no estimate, and no number in its place
    begin(admin, first)
    why = plugin(control_plane, "why", first.name, "-n", NS)
    assert f"HostState {NS}/{first.name}: phase Updating" in why
    assert "update step preparing update, entered" in why
    assert f"no estimate: fewer than {LEARNED} past durations of preparing update" in why
    eta = plugin(control_plane, "eta", "worker")
    assert re.search(rf"^machines: +{MACHINES} in the pool", eta, re.M)
    assert "no estimate: too few whole updates" in eta
    assert "machines updating: 1" in eta and first.name in eta
    finish(admin, first, clock, TAKES[0])
    for node, takes in zip(nodes[1:LEARNED], TAKES[1:], strict=True):
        begin(admin, node)
        finish(admin, node, clock, takes)
    assert clock.behind == pytest.approx(BEHIND)

    # the sixth: its step and the pool's rollout estimated from the five before it
    begin(admin, last)
    wait_for(lambda: status(admin, last.name).get("estimate"), WAIT, "the host's estimate")
    wait_for(
        lambda: any(
            c["type"] == "OnSchedule"
            for c in (admin.get(NODEPOOLS, None, "worker").get("status") or {}).get("conditions")
            or ()
        ),
        WAIT,
        "the pool's estimate and OnSchedule",
    )
    estimate = status(admin, last.name)["estimate"]
    assert isinstance(estimate, dict)
    assert estimate["basis"] == f"pool worker, Simulated {MODELS[0]}"  # one class learned
    why = plugin(control_plane, "why", last.name, "-n", NS)
    assert "update step preparing update, entered" in why
    assert f"on machines like it ({estimate['basis']}) preparing update takes" in why
    assert f"from {estimate['samples']} past durations of it" in why
    assert "the whole update: expected to end" in why
    assert "no estimate" not in why
    eta = plugin(control_plane, "eta", "worker")
    assert f"{LEARNED} updated, 1 updating, 0 degraded" in eta
    assert "late after" in eta and "no estimate" not in eta.split("machines updating")[0]
    assert re.search(r"^on schedule: +yes \(WithinEstimate", eta, re.M)
    (row,) = [line for line in eta.splitlines() if last.name in line]
    assert "preparing update" in row and f"{estimate['samples']} samples" in row

    # the first again, in a step no machine was seen to take: no estimate, and no number
    first.annotate(
        {"hoststate.io/desired-config": NEWER, "hoststate.io/update-state": "ReloadingCRIO"}
    )
    wait_for(partial(step_is, admin, first.name, S.RELOADING_CRIO), WAIT, "reloading CRI-O")
    why = plugin(control_plane, "why", first.name, "-n", NS)
    assert "update step reloading CRI-O, entered" in why
    assert f"no estimate: fewer than {LEARNED} past durations of reloading CRI-O" in why

    history = plugin(control_plane, "history", first.name, "-n", NS)
    headings = [line.split(":")[0] for line in history.splitlines() if line and line[0] != " "]
    assert headings[1:-1] == [
        "registration", "inspection", "preparation", "provisioning", "update", "update",
    ], history  # fmt: skip
    # one history: an update of a provisioned machine leaves it provisioned again
    assert "provisioned -> preparing update" in history
    assert "resuming -> provisioned" in history
    assert "provisioned -> reloading CRI-O" in history
    bounded = plugin(control_plane, "history", first.name, "-n", NS, "--limit", "3")
    assert bounded.count(" -> ") == 3 and "earlier not shown" in bounded

    # the object named, and what to do, when it does not exist
    missing = plugin(control_plane, "why", "no-such-host", "-n", NS, code=1)
    assert f"HostState {NS}/no-such-host not found" in missing
    assert f"kubectl get hoststates -n {NS}" in missing
    missing = plugin(control_plane, "eta", "no-such-pool", code=1)
    assert "NodePool no-such-pool not found" in missing

    # the real kubectl finds the plugin on PATH
    env = {
        **os.environ,
        "PATH": f"{PLUGIN.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "KUBECONFIG": str(control_plane.kubeconfig),
    }
    done = subprocess.run(
        [str(control_plane.kubectl), "hoststate", "why", last.name, "-n", NS],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"HostState {NS}/{last.name}: phase Updating" in done.stdout
