"""Servicing through a real Ironic and a Redfish BMC: the whole controller (in process, on
the embedded store) applies BIOS settings, a BIOS firmware image and a RAID volume to a
deployed host with Ironic's out-of-band service steps (``PUT /v1/nodes/{id}/states/provision``
``{"target": "service", "service_steps": [...]}``, API 1.87), and each change is read back
from the emulated system's own Redfish API.

The BMC is sushy-emulator with one system (testbed/redfish_bmc.py), which also makes
Ironic send a SimpleUpdate without ``Targets``; testbed/sushy_servicing.py gives the
emulator what the steps need (its docstring says why), and ``IronicServer(servicing=True)``
the ``redfish`` BIOS, firmware and RAID interfaces with short polling intervals. A failed
step ends ``service failed`` with the node in maintenance and powered off; the controller's
way back, when the spec changes, is to clear maintenance, then ``{"target": "abort"}``.

Every wait polls; the bounds allow for the emulator's power delays (half a second each,
testbed/redfish_bmc.py, after Ironic's own polls: a BIOS change reboots) on a busy
machine. ``pytest -s`` prints the run's seconds.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from state_controller.api.reach import ALLOW_BMC, ALLOW_IMAGE_HOST, Allowlist, Reach
from state_controller.api.updates import DEFAULT_STEP_THRESHOLDS, UpdateStep
from state_controller.books.stuck import StuckPolicy
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, HOSTSTATES, SECRETS
from state_controller.cluster.schema import validators
from state_controller.provisioning.backoff import Backoff
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.remediation.policy import RemediationPolicy
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.fleet import secret_manifest
from state_controller.simulation.nodes import SimulatedNode
from state_controller.updates.signals import (
    OWN_CURRENT_CONFIG,
    OWN_DESIRED_CONFIG,
    OWN_UPDATE_STATE,
)
from state_controller.wiring import observed_controller
from testbed.ironic_server import IronicServer
from testbed.processes import installed
from testbed.redfish_bmc import FakeSystem, RedfishBMC
from tests.conftest import wait_for
from tests.ironic.helpers import POLL, IronicAPI
from tests.ironic.test_redfish import BOOT_ISO, NS, QuietHandler, polled, view

pytestmark = pytest.mark.slow

# Two disks, for a RAID 1 volume; alone on its BMC, as many real servers are.
SERVICED = FakeSystem(
    "7d3b0e2c-5a61-4c8e-9f4b-2a1d6c0e9b21",
    "serviced-0",
    "52:54:00:6b:00:21",
    disks_gib=(40, 40),
)
# A step's wait: a BIOS setting reboots (two emulator power changes, each waited for by
# Ironic) and a BIOS firmware update reboots too, after Ironic's 2 s polls of the BMC's task.
STEP_WAIT = 120.0
FIRMWARE = b"emulated BIOS firmware image"


@dataclass
class Served:
    """A directory served over HTTP on loopback; ``paths`` are those requested so far."""

    root: Path
    url: str
    paths: list[str]


@contextmanager
def serving(root: Path) -> Iterator[Served]:
    """Serve ``root`` on loopback (a thread), stopped on exit."""
    served = Served(root, "", [])

    class Recording(QuietHandler):
        def do_GET(self) -> None:
            served.paths.append(self.path)
            super().do_GET()

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Recording, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    served.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def boot_iso(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The live ISO the node is deployed with (the BMC only downloads it)."""
    root = tmp_path_factory.mktemp("servicing-images")
    (root / "boot.iso").write_bytes(BOOT_ISO)
    with serving(root) as served:
        yield f"{served.url}/boot.iso"


@pytest.fixture(scope="module")
def bmc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedfishBMC]:
    venv = installed("sushy", timeout=600)
    with RedfishBMC(venv, tmp_path_factory.mktemp("servicing-bmc"), systems=(SERVICED,)) as b:
        yield b


@pytest.fixture(scope="module")
def ironic(ironic_venv: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IronicServer]:
    # One connection attempt per Redfish call, as in test_redfish: the BMC always answers.
    config = {"redfish": {"connection_attempts": 1, "connection_retry_interval": 1}}
    workdir = tmp_path_factory.mktemp("ironic-servicing")
    with IronicServer(ironic_venv, workdir, servicing=True, config=config) as server:
        yield server


@pytest.fixture(scope="module")
def node(ironic: IronicServer, bmc: RedfishBMC, boot_iso: str) -> str:
    """The system registered, deployed (a live ISO: ``ramdisk`` deploy) and powered on by
    the provisioner, as test_redfish does: its node's UUID."""
    prov = IronicProvisioner(ironic.url, poll_delay=POLL)
    host = view(bmc, SERVICED, image=boot_iso)
    done = polled(lambda: prov.register(host, credentials_changed=True), "registration", prov)
    assert done.provider_id, done
    host = replace(host, provider_id=done.provider_id)
    assert polled(lambda: prov.prepare(host), "preparation", prov).done
    deployed = polled(lambda: prov.provision(host), "deploy", prov)
    assert deployed.powered_on is True, deployed
    return done.provider_id


# -- the controller ------------------------------------------------------------------------


def test_the_controller_services_a_host_through_ironic_and_recovers_a_failed_run(
    ironic: IronicServer, bmc: RedfishBMC, node: str, boot_iso: str, tmp_path: Path
) -> None:
    """The whole controller (in process, embedded store) over this Ironic: it takes over the
    deployed node, applies a BIOS setting, a BIOS image and a RAID volume as one servicing
    run that reaches the emulated system; a firmware image the BMC cannot fetch fails the
    next run (Ironic: ``service failed``, in maintenance), after software RAID is refused
    before anything is sent (the node has no agent RAID interface); a fixed URL recovers the node
    (maintenance cleared, aborted) and runs again, the firmware alone."""
    with taken_over(ironic, bmc, boot_iso, controller_config()) as cluster:
        (tmp_path / "bios-2.bin").write_bytes(FIRMWARE)
        with serving(tmp_path) as served:
            spec = {
                "firmwareSettings": {"ProcTurboMode": "Disabled"},
                "firmwareUpdates": [{"component": "bios", "url": f"{served.url}/bios-2.bin"}],
                "raid": {"hardwareRAIDVolumes": [{"level": "1", "sizeGibibytes": 10}]},
                "servicingPolicy": "rolling",
            }
            started = time.monotonic()
            cluster.patch(HOSTS, NS, SERVICED.name, {"spec": spec})
            wait_for(lambda: serviced(cluster, "serviced", done=3), timeout=3 * STEP_WAIT,
                     what="serviced")  # fmt: skip
            print(f"controller: one run of 3 tasks, {time.monotonic() - started:.1f} s")
            assert bmc.bios_attributes(SERVICED)["ProcTurboMode"] == "Disabled"
            assert bmc.bios_version(SERVICED) == "1.1.0" and served.paths == ["/bios-2.bin"]
            [volume] = bmc.volumes(SERVICED)
            assert volume["RAIDType"] == "RAID1"
            last = history(cluster)[-1]
            assert last["reason"] == "ServicingComplete", last
            assert last["message"].endswith(": bios 1.0.0 -> 1.1.0"), last

            # Software RAID needs the agent RAID interface, which this node has not: refused
            # before anything is sent, the node left active.
            software = {"softwareRAIDVolumes": [{"level": "1"}], "hardwareRAIDVolumes": None}
            cluster.patch(HOSTS, NS, SERVICED.name, {"spec": {"raid": software}})
            wait_for(lambda: serviced(cluster, "service failed"), timeout=STEP_WAIT,
                     what="software RAID refused")  # fmt: skip
            shown = cluster.get(HOSTSTATES, NS, SERVICED.name)["status"]["servicing"]
            assert "needs Ironic's agent RAID interface" in shown["message"], shown
            assert "has 'redfish'; set raid_interface: agent" in shown["message"], shown
            found = IronicAPI(ironic.url).node(node) or {}
            assert (found["provision_state"], found["maintenance"]) == ("active", False)

            missing = [{"component": "bios", "url": f"{served.url}/missing.bin"}]
            hardware = {**spec["raid"], "softwareRAIDVolumes": None}
            patch = {"firmwareUpdates": missing, "raid": hardware}
            cluster.patch(HOSTS, NS, SERVICED.name, {"spec": patch})
            wait_for(
                lambda: (
                    serviced(cluster, "service failed")
                    and (IronicAPI(ironic.url).node(node) or {}).get("provision_state")
                    == "service failed"
                ),
                timeout=STEP_WAIT,
                what="failed",
            )
            status = cluster.get(HOSTS, NS, SERVICED.name)["status"]
            assert status["errorType"] == "servicing error", status
            found = IronicAPI(ironic.url).node(node) or {}
            assert (found["provision_state"], found["maintenance"]) == ("service failed", True)

            # the fix, with the settings and the volume (applied already) no longer asked:
            # the recovery is the same, and the run that follows is the firmware alone
            (tmp_path / "bios-3.bin").write_bytes(FIRMWARE)
            fixed = [{"component": "bios", "url": f"{served.url}/bios-3.bin"}]
            patch = {"firmwareUpdates": fixed, "firmwareSettings": None, "raid": None}
            cluster.patch(HOSTS, NS, SERVICED.name, {"spec": patch})
            wait_for(lambda: serviced(cluster, "serviced", done=1), timeout=STEP_WAIT,
                     what="serviced again")  # fmt: skip
            assert bmc.bios_version(SERVICED) == "1.2.0"
            found = IronicAPI(ironic.url).node(node) or {}
            assert (found["provision_state"], found["maintenance"]) == ("active", False)
            assert cluster.get(HOSTS, NS, SERVICED.name)["status"]["operationalStatus"] == "OK"


def driven_host(bmc: RedfishBMC, boot_iso: str) -> dict[str, Any]:
    """The Host of the deployed system, named as its node (so it is taken over, not
    deployed again)."""
    return {
        "apiVersion": "hoststate.io/v1alpha1",
        "kind": "Host",
        "metadata": {"name": SERVICED.name, "namespace": NS},
        "spec": {
            "bmc": {"address": bmc.address(SERVICED), "credentialsName": "serviced-bmc"},
            "bootMACAddress": SERVICED.mac,
            "online": True,
            "automatedCleaningMode": "disabled",
            "image": {
                "url": boot_iso,
                "checksum": hashlib.sha256(BOOT_ISO).hexdigest(),
                "diskFormat": "live-iso",
            },
        },
    }


def host_state(cluster: EmbeddedCluster) -> str:
    status = cluster.get(HOSTS, NS, SERVICED.name).get("status") or {}
    return str((status.get("provisioning") or {}).get("state", ""))


def history(cluster: EmbeddedCluster) -> list[dict[str, Any]]:
    return list(cluster.get(HOSTSTATES, NS, SERVICED.name)["status"]["history"])


def serviced(cluster: EmbeddedCluster, step: str, *, done: int | None = None) -> bool:
    status = cluster.get(HOSTSTATES, NS, SERVICED.name).get("status") or {}
    shown = status.get("servicing") or {}
    return shown.get("step") == step and (done is None or shown.get("done") == done)


def test_a_lost_reboot_is_power_cycled_through_ironic_and_the_bmc(
    ironic: IronicServer, bmc: RedfishBMC, node: str, boot_iso: str
) -> None:
    """Remediation over this Ironic: the host's Node loses its update's reboot, the
    controller power-cycles the system (Ironic's ``rebooting``, the BMC's Reset actions),
    and once the Node is back the return is recorded."""
    steps = {**DEFAULT_STEP_THRESHOLDS, UpdateStep.REBOOTING: 1.0}
    config = replace(
        controller_config(),
        stuck=StuckPolicy(step_thresholds=steps),
        remediation=RemediationPolicy(max_attempts=1, max_unhealthy=1.0),
    )
    with taken_over(ironic, bmc, boot_iso, config) as cluster:
        kubelet = SimulatedNode(
            cluster,
            "serviced-node",
            labels={"node-role.kubernetes.io/worker": ""},
            provider_id=f"metal3://{NS}/{SERVICED.name}/m-0",
        )
        kubelet.register()
        kubelet.annotate(
            {OWN_DESIRED_CONFIG: "a", OWN_CURRENT_CONFIG: "a", OWN_UPDATE_STATE: "Done"}
        )
        wait_for(lambda: hoststate(cluster)["spec"].get("node") == kubelet.name, what="linked")
        before = bmc.resets(SERVICED)
        kubelet.annotate({OWN_DESIRED_CONFIG: "b", OWN_UPDATE_STATE: "Working"})
        kubelet.go_down()  # and it does not come back by itself
        wait_for(lambda: "PowerCycled" in reasons(cluster), timeout=STEP_WAIT,
                 what="a power-cycle")  # fmt: skip
        wait_for(lambda: bmc.resets(SERVICED) > before, timeout=STEP_WAIT,
                 what="the BMC asked to reset the system")  # fmt: skip
        wait_for(lambda: bmc.power_state(SERVICED) == "On", timeout=STEP_WAIT, what="on")
        kubelet.come_back()
        wait_for(lambda: "Remediated" in reasons(cluster), timeout=STEP_WAIT, what="back")
        found = IronicAPI(ironic.url).node(node) or {}
        assert (found["provision_state"], found["power_state"]) == ("active", "power on")


@contextmanager
def taken_over(
    ironic: IronicServer, bmc: RedfishBMC, boot_iso: str, config: ControllerConfig
) -> Iterator[EmbeddedCluster]:
    """The controller (in process, on an embedded store) with the deployed system's Host,
    once it took the node over; stopped on exit."""
    cluster = EmbeddedCluster(validators=validators())
    running = observed_controller(cluster, IronicProvisioner(ironic.url, poll_delay=POLL), config)
    running.controller.start()
    try:
        cluster.create(SECRETS, secret_manifest(NS, "serviced-bmc", bmc.username, bmc.password))
        cluster.create(HOSTS, driven_host(bmc, boot_iso))
        wait_for(lambda: host_state(cluster) == "provisioned", timeout=STEP_WAIT, what="taken over")
        yield cluster
    finally:
        running.controller.stop()
        cluster.close()


def controller_config() -> ControllerConfig:
    """Two workers, a short backoff, loopback allowed for the BMC and the image server."""
    loopback = Reach(  # the emulator's and the image server's address, as --allow-* give
        bmc=Allowlist.parse(["127.0.0.1"], ALLOW_BMC),
        images=Allowlist.parse(["127.0.0.1"], ALLOW_IMAGE_HOST),
    )
    return ControllerConfig(
        workers=2, backoff=Backoff(base=0.5, cap=4.0, jitter=0.0), reach=loopback
    )


def hoststate(cluster: EmbeddedCluster) -> dict[str, Any]:
    return dict(cluster.get(HOSTSTATES, NS, SERVICED.name))


def reasons(cluster: EmbeddedCluster) -> list[str]:
    return [h["reason"] for h in history(cluster)]
