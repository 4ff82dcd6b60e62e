"""``state-controller run --provisioner ironic``: the controller as it runs in production,
a real kube-apiserver on one side and a real Ironic on the other."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from state_controller.cluster.interface import HOSTS
from state_controller.cluster.kube import KubeCluster
from state_controller.simulation.fleet import create_fleet
from testbed.control_plane import ControlPlane
from testbed.ironic_server import IronicServer
from testbed.kube import kubectl
from testbed.processes import stop_session
from tests.conftest import empty_namespace, wait_for
from tests.ironic.helpers import IronicAPI

pytestmark = pytest.mark.slow

NS = "ironic-run"


def test_run_provisions_and_deletes_through_ironic(
    control_plane: ControlPlane, ironic: IronicServer, tmp_path: Path
) -> None:
    kubectl(control_plane, "create", "namespace", NS, check=False)
    kube = KubeCluster.from_kubeconfig(str(control_plane.kubeconfig))
    api = IronicAPI(ironic.url)
    log = tmp_path / "run.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "state_controller.cli", "run",
         "--kubeconfig", str(control_plane.kubeconfig), "--namespace", NS,
         "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0",
         "--provisioner", "ironic", "--ironic-url", ironic.url,
         "--ironic-driver", "fake-hardware", "--ironic-poll-delay", "0.3"],
        stdout=subprocess.DEVNULL, stderr=log.open("w"), stdin=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip

    def states() -> dict[str, str]:
        return {
            h["metadata"]["name"]: (h.get("status") or {}).get("provisioning", {}).get("state", "")
            for h in kube.list(HOSTS, NS)[0]
        }

    try:
        wait_for(lambda: "caches synced" in log.read_text(), timeout=30, what="controller up")
        assert f"Ironic at {ironic.url}, API 1.115" in log.read_text()
        create_fleet(kube, NS, 2)
        wait_for(
            lambda: states() == {"host-0000": "provisioned", "host-0001": "provisioned"},
            timeout=90,
            what=f"provisioned through Ironic; log: {log.read_text()[-2000:]}",
        )
        for name in ("host-0000", "host-0001"):
            node = api.node(f"{NS}~{name}")
            assert node is not None and node["provision_state"] == "active"
            host = kube.get(HOSTS, NS, name)
            assert host["status"]["provisioning"]["id"] == node["uuid"]

        for name in ("host-0000", "host-0001"):
            kube.delete(HOSTS, NS, name)
        wait_for(lambda: states() == {}, timeout=90, what="hosts deleted")
        assert api.nodes() == []
        assert "pw-0" not in log.read_text()  # the BMC passwords of create_fleet
    finally:
        stop_session(proc)
        empty_namespace(kube, NS)
        kube.close()
