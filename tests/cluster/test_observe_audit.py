"""The API server's own audit log shows that the controller, observing BareMetalHosts,
writes nothing of metal3's: its requests on metal3.io are reads only, while the played
baremetal-operator's writes on the same BareMetalHost are there to see."""

from __future__ import annotations

import json
from typing import Any

from state_controller.cluster.interface import HOSTSTATES
from state_controller.cluster.kube import KubeCluster
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.baremetal_operator import PlayedBMO
from testbed.control_plane import ControlPlane
from testbed.kube import HOSTS_NS, audit_log
from tests.conftest import FAST_BACKOFF, wait_for

NAME = "audited-0"
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def events_on_metal3(plane: ControlPlane) -> list[dict[str, Any]]:
    return [json.loads(line) for line in audit_log(plane).read_text().splitlines() if line]


def shown(cluster: KubeCluster) -> str:
    status = cluster.get(HOSTSTATES, HOSTS_NS, NAME).get("status") or {}
    return str(status.get("provisioning", {}).get("state", ""))


def test_the_controller_only_reads_baremetalhosts_as_the_audit_log_shows(
    control_plane: ControlPlane, run_controller: Any
) -> None:
    controller = KubeCluster.from_kubeconfig(str(control_plane.kubeconfig))  # user "admin"
    # baremetal-operator played under another identity, so the log tells them apart
    bmo = KubeCluster.from_kubeconfig(str(control_plane.controller_manager_kubeconfig))
    config = ControllerConfig(
        workers=2, backoff=FAST_BACKOFF, namespaces=(HOSTS_NS,), observe_baremetalhosts=True
    )
    try:
        with run_controller(controller, config=config) as running:
            host = PlayedBMO(bmo, HOSTS_NS, NAME)
            for state, started, ended in (
                ("registering", ("register",), ()),
                ("inspecting", ("inspect",), ("register",)),
                ("available", (), ("inspect",)),
            ):
                host.show(state, started=started, ended=ended)
                wait_for(lambda s=state: shown(controller) == s, what=f"{NAME} shown {state}")
            wait_for(running.controller.idle)

        events = events_on_metal3(control_plane)
        ours = [e for e in events if e["user"]["username"] == "admin"]
        theirs = [
            e
            for e in events
            if e["user"]["username"] == "system:kube-controller-manager"
            and e.get("objectRef", {}).get("name") == NAME
        ]
        assert {e["verb"] for e in theirs} >= {"create", "update"}  # the log sees writes
        assert {"list", "watch"} <= {e["verb"] for e in ours}  # and the controller's reads
        written = [
            (e["verb"], e.get("objectRef"))
            for e in ours
            if e["verb"] in WRITES and e.get("objectRef", {}).get("name") == NAME
        ]
        assert written == []
    finally:
        bmo.close()
        controller.close()
