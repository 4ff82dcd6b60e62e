"""A BareMetalHost handed over to a Host loses its pause: baremetal-operator would act on
the machine again beside hoststate. The controller that observes BareMetalHosts tells it
once per unpause, as a Warning Event on both objects and a log line naming the fix."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from state_controller.api import annotations as ann
from state_controller.api.baremetalhost import PAUSED
from state_controller.cluster.interface import BAREMETALHOSTS, HOSTS, SECRETS, Cluster
from state_controller.runtime.baremetalhosts.handed_over import UNPAUSED
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.baremetal_operator import PlayedBMO
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.scenarios import NS, events_for
from tests.conftest import FAST_BACKOFF, wait_for


def unpaused_events(cluster: Cluster, name: str, kind: str) -> list[dict[str, Any]]:
    return [
        e
        for e in events_for(cluster, name)
        if e["reason"] == UNPAUSED and e["involvedObject"]["kind"] == kind
    ]


def test_a_handed_over_baremetalhost_unpaused_is_told_once_per_unpause(
    cluster: Cluster, run_controller: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, observe_baremetalhosts=True)
    bmo = PlayedBMO(cluster, NS, "worker-0")
    bmo.show("provisioned", poweredOn=True)
    uid = cluster.get(BAREMETALHOSTS, NS, "worker-0")["metadata"]["uid"]
    handed = {PAUSED: "hoststate.io/adopt", ann.HANDED_OVER_TO: f"Host {NS}/worker-0"}
    cluster.patch(BAREMETALHOSTS, NS, "worker-0", {"metadata": {"annotations": handed}})
    host = host_manifest(NS, 0)
    host["metadata"]["name"] = "worker-0"
    host["spec"]["bmc"]["credentialsName"] = "worker-0-bmc"
    host["metadata"]["annotations"] = {ann.PAUSED: "test", ann.ADOPTED_FROM: uid}
    cluster.create(SECRETS, secret_manifest(NS, "worker-0-bmc", "admin", "pw"))
    cluster.create(HOSTS, host)  # paused: the test is about the BareMetalHost
    with run_controller(cluster, config=config) as running:
        wait_for(running.controller.idle, what="the first look over")
        assert unpaused_events(cluster, "worker-0", "BareMetalHost") == []  # paused: quiet

        cluster.patch(BAREMETALHOSTS, NS, "worker-0", {"metadata": {"annotations": {PAUSED: None}}})
        wait_for(
            lambda: (
                unpaused_events(cluster, "worker-0", "BareMetalHost")
                and unpaused_events(cluster, "worker-0", "Host")
            ),
            what="the unpause told on both",
        )
        [event] = unpaused_events(cluster, "worker-0", "BareMetalHost")
        assert event["type"] == "Warning"
        assert (
            f"kubectl annotate bmh worker-0 -n {NS} {PAUSED}=hoststate.io/adopt" in event["message"]
        )
        logged = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any("was handed over to the Host" in line for line in logged), logged

        # another change while unpaused: not told again
        cluster.patch(BAREMETALHOSTS, NS, "worker-0", {"metadata": {"labels": {"x": "y"}}})
        wait_for(running.controller.idle)
        [event] = unpaused_events(cluster, "worker-0", "BareMetalHost")
        assert int(event.get("count") or 1) == 1

        # paused again, then unpaused again: told again
        cluster.patch(BAREMETALHOSTS, NS, "worker-0", {"metadata": {"annotations": handed}})
        time.sleep(1.0)  # the pause seen (it shows nowhere): else the two may be one change
        wait_for(running.controller.idle)
        cluster.patch(BAREMETALHOSTS, NS, "worker-0", {"metadata": {"annotations": {PAUSED: None}}})
        wait_for(
            lambda: (
                sum(
                    int(e.get("count") or 1)
                    for e in unpaused_events(cluster, "worker-0", "BareMetalHost")
                )
                == 2
            ),
            what="the second unpause told",
        )
