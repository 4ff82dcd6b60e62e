"""The controller learns how long each step took from the records it makes, for the
machine's pool and hardware class, and a restarted controller learns it again from the
histories its HostStates kept (on the embedded store and a real kube-apiserver)."""

from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest

from state_controller.cluster.interface import Cluster
from state_controller.durations.keys import PROVISIONING, StepKey
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from state_controller.simulation.fleet import create_fleet
from testbed.scenarios import NS, wait_all_in
from tests.conftest import wait_for

SIMULATED = "Simulated SIM-2U"  # the vendor and model every simulated machine reports


def test_step_durations_are_learned_per_class_and_learned_again_after_a_restart(
    cluster: Cluster, run_controller: Any
) -> None:
    sim = SimulatedProvisioner(timings=Timings(provision=0.3))
    key = StepKey(PROVISIONING, "provisioning", "", SIMULATED)
    with run_controller(cluster, sim) as running:
        create_fleet(cluster, NS, 3)
        wait_all_in(cluster, NS, "provisioned", timeout=60)
        wait_for(running.controller.idle)
        learned = running.controller.learned.exact(key)
        assert learned is not None and learned.seen == 3
        assert 0.3 <= learned.median < 30  # the simulated deploy's time, and the poll's
        scraped = generate_latest(running.metrics.registry).decode()
        assert (
            'hoststate_learned_duration_samples{hardware_class="Simulated SIM-2U",'
            'kind="provisioning",pool="unlabeled",step="provisioning"} 3.0'
        ) in scraped
        before = learned.median

    with run_controller(cluster, sim) as running:  # nothing in memory: the histories
        wait_for(running.controller.idle)
        wait_for(lambda: (e := running.controller.learned.exact(key)) is not None and e.seen == 3,
                 what="the durations learned again from the HostStates' histories")  # fmt: skip
        again = running.controller.learned.exact(key)
        assert again is not None and abs(again.median - before) < 0.01  # ms-precision times
