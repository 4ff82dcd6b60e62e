"""An outage of the kube-apiserver, as a person on call reads it in the log: one line when
it starts, a reminder while it lasts, one line when it ends; no traceback, and nothing
lost (the hosts finish as if nothing happened)."""

from __future__ import annotations

import logging
import time

import pytest

from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.fleet import create_fleet
from state_controller.wiring import observed_controller
from tests.conftest import FAST_BACKOFF, wait_for
from tests.support.control_plane import ControlPlane
from tests.support.kube import HOSTS_NS, host_states

NS = HOSTS_NS
OUTAGE_SECONDS = 15  # the kube-apiserver restart measured before: 529 to 1,611 lines


def test_an_apiserver_outage_is_told_once_without_tracebacks(
    control_plane: ControlPlane, admin: KubeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sim = SimulatedProvisioner(timings=Timings(provision=4.0))
    config = ControllerConfig(namespaces=(NS,), backoff=FAST_BACKOFF)
    observed = observed_controller(admin, sim, config)
    controller = observed.controller
    controller.start()
    try:
        create_fleet(admin, NS, 5)
        wait_for(lambda: set(host_states(admin).values()) == {"provisioning"}, what="provisioning")
        caplog.clear()
        control_plane.stop_apiserver()
        time.sleep(OUTAGE_SECONDS)  # the outage itself, not a wait for an event
        control_plane.start_apiserver()
        wait_for(
            lambda: set(host_states(admin).values()) == {"provisioned"},
            timeout=120,
            what="provisioned",
        )
        ended = lambda: any(getattr(r, "event", "") == "ended" for r in caplog.records)  # noqa: E731
        wait_for(ended, timeout=60, what="the outage's end in the log")
        wait_for(controller.idle)
    finally:
        controller.stop()
    shown = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert [r for r in shown if r.exc_info] == []  # no traceback
    outage = [r for r in shown if str(getattr(r, "outage", "")).startswith("kube-apiserver")]
    events = [r.event for r in outage]  # type: ignore[attr-defined]
    assert events[0] == "started" and events[-1] == "ended"
    assert set(events[1:-1]) <= {"continues", "started", "ended"}
    assert events.count("started") <= 2  # a restart may answer 503 once more while it starts
    noise = [r for r in shown if r.levelno >= logging.WARNING and r not in outage]
    assert noise == [], [r.getMessage() for r in noise]
    print(
        f"\n{OUTAGE_SECONDS}s kube-apiserver outage: {len(shown)} log lines at info and above "
        f"({len(outage)} about the outage), "
        f"{len([r for r in caplog.records if r.levelno == logging.DEBUG])} at debug"
    )
