"""Ironic's out-of-band *servicing* of an ``active`` redfish node, at Ironic's API (no
controller): ``PUT /v1/nodes/{id}/states/provision`` ``{"target": "service",
"service_steps": [...]}`` (API >= 1.87) runs BIOS, firmware and RAID steps on the BMC alone,
with no agent, and the node goes ``servicing`` -> (``service wait``) -> ``active``.

The BMC is sushy-emulator with one system (tests/support/redfish_bmc.py), which also makes
Ironic send a SimpleUpdate without ``Targets``; tests/support/sushy_servicing.py gives the
emulator what the steps need (its docstring says why), and ``IronicServer(servicing=True)``
the ``redfish`` BIOS, firmware and RAID interfaces with short polling intervals. Each test
reads the result both from Ironic and from the emulator's own Redfish API. A failed step ends
``service failed`` with the node in maintenance and powered off; Ironic's way back is to
clear maintenance, then ``{"target": "abort"}`` (``service failed`` -> ``active``), after
which Ironic powers the node back on.

The tests share one node, deployed once, and each leaves it ``active`` and powered on.
Every wait polls the API; the bounds allow for the emulator's power delays (1 to 11 s each,
a BIOS change reboots: two of them). ``pytest -s`` prints each step's seconds; measured
(whole module 92 to 110 s): deploy 11 to 15 s, BIOS setting 13 to 22 s, BIOS firmware
update 22 to 33 s, RAID create 4 to 7 s and delete 4 to 8 s, the failed step 7 to 14 s and
the abort back to active and on 7 to 18 s.

Not here, each measured to work the same way: ``bios.factory_reset`` (14 s: the registry's
defaults again), a ``bmc`` firmware update (41 s: the emulator's BMC version never changes,
Ironic waits it out; the emulator raises the system's BIOS version instead, it cannot tell
components apart), a firmware URL the BMC cannot download (``service failed``, "could not
download <url>: HTTP Error 404: File not found"). Power steps (``power.reboot``) inside
``service`` are dropped by Ironic: the request ends ``active`` and nothing reboots.
"""

from __future__ import annotations

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

from state_controller.provisioning.ironic import IronicProvisioner
from tests.conftest import wait_for
from tests.ironic.helpers import POLL, IronicAPI
from tests.ironic.test_redfish import BOOT_ISO, QuietHandler, polled, view
from tests.support.ironic_server import IronicServer
from tests.support.processes import installed
from tests.support.redfish_bmc import FakeSystem, RedfishBMC

pytestmark = pytest.mark.slow

# Two disks, for a RAID 1 volume; alone on its BMC, as many real servers are.
SERVICED = FakeSystem(
    "7d3b0e2c-5a61-4c8e-9f4b-2a1d6c0e9b21",
    "serviced-0",
    "52:54:00:6b:00:21",
    disks_gib=(40, 40),
)
# A step's wait: a BIOS setting reboots (two emulator power delays of up to 11 s each) and a
# BIOS firmware update reboots too, after Ironic's 2 s polls of the BMC's task.
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


@pytest.fixture
def api(ironic: IronicServer, node: str) -> IronicAPI:
    """Ironic, with the node ``active``, on and out of maintenance (as each test leaves it)."""
    client = IronicAPI(ironic.url)
    found = client.node(node)
    assert found is not None
    interfaces = {k: found[f"{k}_interface"] for k in ("bios", "firmware", "raid")}
    assert interfaces == {"bios": "redfish", "firmware": "redfish", "raid": "redfish"}
    assert (found["provision_state"], found["power_state"]) == ("active", "power on"), found
    assert found["maintenance"] is False, found
    return client


def service(api: IronicAPI, uuid: str, *steps: dict[str, Any]) -> dict[str, Any]:
    """Run ``steps`` as one service request; the node once Ironic is done with it (``active``
    or ``service failed``, unlocked). Prints the seconds it took."""
    before = api.node(uuid) or {}
    body = {"target": "service", "service_steps": list(steps)}
    start = time.monotonic()
    status, _, text = api.request("PUT", f"/v1/nodes/{uuid}/states/provision", body)
    assert status == 202, text
    done = settled(api, uuid, since=before["provision_updated_at"])
    names = ", ".join(f"{s['interface']}.{s['step']}" for s in steps)
    print(f"service {names}: {time.monotonic() - start:.1f} s, {done['provision_state']}")
    return done


def settled(
    api: IronicAPI, uuid: str, *, since: str | None = None, power: str | None = None
) -> dict[str, Any]:
    """The node once its provision state moved after ``since`` and rests (``active`` or
    ``service failed``, no lock, no power change under way; ``power`` if given)."""

    def at_rest() -> dict[str, Any] | None:
        found = api.node(uuid) or {}
        resting = (
            found.get("provision_updated_at") != since
            and found.get("provision_state") in ("active", "service failed")
            and not found.get("reservation")
            and found.get("target_power_state") is None
            and power in (None, found.get("power_state"))
        )
        return found if resting else None

    found: dict[str, Any] = wait_for(at_rest, timeout=STEP_WAIT, what=f"node {uuid} at rest")
    return found


def bios(api: IronicAPI, uuid: str) -> dict[str, dict[str, Any]]:
    """Ironic's BIOS settings of the node with their registry fields, by name."""
    status, data, text = api.request("GET", f"/v1/nodes/{uuid}/bios?detail=True")
    assert status == 200, text
    return {s["name"]: s for s in data["bios"]}


def firmware(api: IronicAPI, uuid: str) -> dict[str, dict[str, Any]]:
    """Ironic's firmware components of the node (``bios``, ``bmc``), by component."""
    status, data, text = api.request("GET", f"/v1/nodes/{uuid}/firmware")
    assert status == 200, text
    return {c["component"]: c for c in data["firmware"]}


def test_a_bios_setting_is_applied_by_the_bmc(api: IronicAPI, bmc: RedfishBMC, node: str) -> None:
    before = bios(api, node)
    turbo = before["ProcTurboMode"]
    assert turbo["value"] == "Enabled"
    assert (turbo["attribute_type"], turbo["allowable_values"]) == (
        "Enumeration",
        ["Enabled", "Disabled"],
    )
    assert turbo["read_only"] is False
    cores = before["NumCores"]  # the registry's schema fields, read by Ironic from the BMC
    assert (cores["attribute_type"], cores["read_only"]) == ("Integer", True)
    assert (cores["lower_bound"], cores["upper_bound"]) == (10, 20)

    step = {
        "interface": "bios",
        "step": "apply_configuration",
        "args": {"settings": [{"name": "ProcTurboMode", "value": "Disabled"}]},
    }
    done = service(api, node, step)

    assert (done["provision_state"], done["last_error"]) == ("active", None), done
    assert bios(api, node)["ProcTurboMode"]["value"] == "Disabled"
    assert bmc.bios_attributes(SERVICED)["ProcTurboMode"] == "Disabled"
    assert bmc.power_state(SERVICED) == "On"


def test_a_bios_firmware_update_raises_the_version(
    api: IronicAPI, bmc: RedfishBMC, node: str, tmp_path: Path
) -> None:
    before = firmware(api, node)
    assert before["bios"]["current_version"] == bmc.bios_version(SERVICED) == "1.0.0"
    assert before["bmc"]["current_version"] == bmc.manager_version() == "1.00"
    (tmp_path / "bios.bin").write_bytes(FIRMWARE)

    with serving(tmp_path) as served:
        step = {
            "interface": "firmware",
            "step": "update",
            "args": {"settings": [{"component": "bios", "url": f"{served.url}/bios.bin"}]},
        }
        done = service(api, node, step)

    assert (done["provision_state"], done["last_error"]) == ("active", None), done
    assert served.paths == ["/bios.bin"]  # downloaded by the BMC (Ironic passes the URL on)
    after = firmware(api, node)["bios"]
    assert (after["initial_version"], after["current_version"]) == ("1.0.0", "1.1.0"), after
    assert after["last_version_flashed"] == "1.1.0"
    assert bmc.bios_version(SERVICED) == "1.1.0"
    assert bmc.power_state(SERVICED) == "On"


def test_a_raid_volume_is_created_and_deleted_on_the_bmc(
    api: IronicAPI, bmc: RedfishBMC, node: str
) -> None:
    assert bmc.volumes(SERVICED) == []
    disk = {"size_gb": 10, "raid_level": "1", "is_root_volume": True}
    step = {
        "interface": "raid",
        "step": "apply_configuration",
        "args": {"raid_config": {"logical_disks": [disk]}},
    }
    done = service(api, node, step)

    assert (done["provision_state"], done["last_error"]) == ("active", None), done
    [volume] = bmc.volumes(SERVICED)
    assert (volume["RAIDType"], volume["CapacityBytes"]) == ("RAID1", 10 << 30), volume
    assert len(volume["Links"]["Drives"]) == 2  # Ironic picked both disks for the mirror
    [logical] = done["raid_config"]["logical_disks"]
    assert (logical["raid_level"], logical["size_gb"], logical["id"]) == ("1", 10, volume["Id"])

    done = service(api, node, {"interface": "raid", "step": "delete_configuration"})
    assert (done["provision_state"], done["last_error"]) == ("active", None), done
    assert bmc.volumes(SERVICED) == []
    assert done["raid_config"]["logical_disks"] == []


def test_a_failed_step_is_service_failed_in_maintenance_until_aborted(
    api: IronicAPI, bmc: RedfishBMC, node: str
) -> None:
    step = {
        "interface": "bios",
        "step": "apply_configuration",
        "args": {"settings": [{"name": "NoSuchSetting", "value": "on"}]},
    }
    failed = service(api, node, step)

    # Ironic lets a name its BMC's registry does not list through; the BMC refuses it.
    assert failed["provision_state"] == "service failed", failed
    assert "NoSuchSetting" in failed["last_error"], failed
    assert "unknown or read-only BIOS attribute(s): NoSuchSetting" in failed["last_error"]
    assert (failed["maintenance"], failed["fault"]) == (True, "service failure"), failed
    assert failed["power_state"] == "power off"
    assert "NoSuchSetting" not in bmc.bios_attributes(SERVICED)

    # In maintenance, abort is refused; out of it, abort returns the node to active.
    abort = {"target": "abort"}
    status, _, text = api.request("PUT", f"/v1/nodes/{node}/states/provision", abort)
    assert status == 409 and "maintenance" in text, text
    status, _, text = api.request("DELETE", f"/v1/nodes/{node}/maintenance")
    assert status == 202, text
    start = time.monotonic()
    status, _, text = api.request("PUT", f"/v1/nodes/{node}/states/provision", abort)
    assert status == 202, text
    back = settled(api, node, since=failed["provision_updated_at"], power="power on")
    print(f"abort from service failed, powered on: {time.monotonic() - start:.1f} s")

    assert back["provision_state"] == "active" and back["maintenance"] is False, back
    assert back["last_error"] == "By request, the service operation was aborted"
    assert bmc.power_state(SERVICED) == "On"
