"""The demo's update agent: a lost reboot holds its machine for the fault's hold, on a slow
machine as on any (the slow model's restarts are longer; the time until someone brings a
lost one back is not)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.schema import validators
from state_controller.provisioning.simulated_machines import SLOW_MODEL, model_of
from state_controller.simulation.nodes import UpdateFault
from state_controller.simulation.rollout import AgentTimings, Kubelets, Phase, RollingUpdate

TIMINGS = AgentTimings(prepare=0.4, evict_every=0.3, apply=0.8, reboot=1.0, resume=0.4, spread=0)
HOLD = 5.0
STEP = 0.01


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    store = EmbeddedCluster(validators=validators())
    yield store
    store.close()


def rebooting_time(cluster: EmbeddedCluster, host: str, index: int) -> float:
    """How long the host's node was rebooting, its reboot lost, in a rollout of it alone."""
    kubelets = Kubelets(cluster, "fleet", TIMINGS, {host: UpdateFault.REBOOT_LOST}, lambda: 0.0)
    member = kubelets.register(host, index)
    rollout = RollingUpdate(kubelets, max_unavailable=1, hold=HOLD)
    rollout.start()
    entered: dict[Phase, float] = {}
    for tick in range(3000):
        now = tick * STEP
        rollout.tick(now)
        if member.phase is not None:
            entered.setdefault(member.phase, now)
        if member.phase == Phase.DONE:
            return entered[Phase.RESUMING] - entered[Phase.REBOOTING]
    raise AssertionError(f"not done in 30 s: {entered}")


@pytest.mark.parametrize(("host", "index"), [("host-0003", 3), ("host-0001", 1)])
def test_a_lost_reboot_comes_back_after_the_hold_on_either_model(
    cluster: EmbeddedCluster, host: str, index: int
) -> None:
    restart = TIMINGS.reboot * (TIMINGS.slow_reboot if model_of(host) == SLOW_MODEL else 1)
    took = rebooting_time(cluster, host, index)
    assert took == pytest.approx(restart + HOLD, abs=3 * STEP)
