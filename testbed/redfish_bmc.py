"""A Redfish BMC on loopback for tests: ``sushy-emulator`` (sushy-tools) with its fake driver.

Usage::

    venv = subprocess.check_output(["tools/sushy/install.sh"], text=True).splitlines()[-1]
    with RedfishBMC(venv, tmp_path, password="s3cret") as bmc:
        address = bmc.address(bmc.systems[0])   # redfish+http://127.0.0.1:PORT/redfish/v1/Systems/UUID
        bmc.power_state(bmc.systems[0])         # "Off", read from the emulator's Redfish API
        bmc.bios_attributes(system)             # {"ProcTurboMode": "Enabled", ...}
        bmc.bios_version(system)                # "1.0.0"; a firmware update makes it "1.1.0"
        bmc.volumes(system)                     # RAID volumes: [{"RAIDType": "RAID1", ...}]
        bmc.set_health(system, "Critical")      # its Status.Health (testbed/sushy_health.py)
        bmc.stop(); bmc.start()                 # a BMC that stops answering, and comes back

One ``sushy-emulator`` process (Flask's threaded server) in its own process group, with
a Python config file (``SUSHY_EMULATOR_*`` keys, read by ``--config``) that selects the
fake systems driver (``SUSHY_EMULATOR_FAKE_DRIVER``: systems kept in a small SQLite file
under ``SUSHY_EMULATOR_STATE_DIR``, no libvirt) and defines the systems
(``SUSHY_EMULATOR_FAKE_SYSTEMS``). HTTP basic authentication is on
(``SUSHY_EMULATOR_AUTH_FILE``: an htpasswd file of bcrypt digests, the only kind the
emulator accepts); only the service roots ``/`` and ``/redfish/v1`` answer without it,
as on a real BMC. The digest uses bcrypt's fewest rounds (4): the emulator checks it on
every request, and Ironic polls.

The process is sushy-tools' own ``main`` started by testbed/sushy_hardware.py, which
gives the fake systems processors and memory (``FakeSystem.cpus``, ``cpu_model``,
``memory_gib``): sushy-tools' fake driver has none, and Ironic's ``redfish`` inspection fails
without them. Their disks (``disks_gib``) are the emulator's own static storage settings
(``SUSHY_EMULATOR_STORAGE``, ``SUSHY_EMULATOR_DRIVES``), one controller, storage ``1``.
For Ironic's servicing, testbed/sushy_servicing.py (imported by the launcher) gives
every system a BIOS with the emulator's attribute registry, a BIOS firmware version that
SimpleUpdate raises, and RAID volumes that can be created and deleted; its docstring says
what the emulator does with them.

What the fake driver does with power (sushy-tools 2.2.0, ``fakedriver.py``): a power
request is applied 0 to 11 seconds later (random), on the next read of the system, like
hardware that takes its time. Here it is applied ``power_delay`` seconds later (default
:data:`POWER_DELAY`, through testbed/sushy_hardware.py): still after the BMC has answered
the request, so a power change is never instant and whoever asked must wait for it, but
without the fake driver's up to 11 s (and Ironic's backoff on top: up to ~15 s per change,
~30 s per reboot), which proved nothing more and made the Redfish tests take minutes.
``power_delay=None`` keeps the fake driver's own random delay.

Stdlib only (the bcrypt digest is made by the emulator's own interpreter).
"""

from __future__ import annotations

import base64
import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed.processes import LoopbackServer, ServerProcess, http_probe

__all__ = ["FakeSystem", "RedfishBMC", "RedfishBMCError"]

_READY_TIMEOUT = 30.0
_STOP_TIMEOUT = 5.0
_BCRYPT_ROUNDS = 4
#: Seconds from a power request to the system's new power state: shorter than Ironic's
#: first look (``node_wait_for_power_state`` reads the power state 1 s after asking).
POWER_DELAY = 0.5
_LAUNCHER = Path(__file__).with_name("sushy_hardware.py")


class RedfishBMCError(RuntimeError):
    """The emulator could not be set up, started, stopped or asked."""


@dataclass(frozen=True)
class FakeSystem:
    """One emulated machine: its Redfish system ID is ``uuid``."""

    uuid: str
    name: str
    mac: str
    power_state: str = "Off"
    cpus: int = 4
    cpu_model: str = "Emulated CPU"
    memory_gib: int = 8
    disks_gib: tuple[int, ...] = (40,)

    def config(self) -> dict[str, Any]:
        """The entry of ``SUSHY_EMULATOR_FAKE_SYSTEMS`` for this system (``cpus``,
        ``cpu_model`` and ``memory_gib`` are read by testbed/sushy_hardware.py)."""
        return {
            "uuid": self.uuid,
            "name": self.name,
            "power_state": self.power_state,
            "external_notifier": False,
            "nics": [{"mac": self.mac, "ip": "192.0.2.10"}],
            "cpus": self.cpus,
            "cpu_model": self.cpu_model,
            "memory_gib": self.memory_gib,
        }

    def storage(self) -> list[dict[str, Any]]:
        """The entry of ``SUSHY_EMULATOR_STORAGE`` for this system: one controller."""
        drives = [f"disk{i}" for i in range(len(self.disks_gib))]
        controller = {"MemberId": "0", "Name": "Controller 0", "SpeedGbps": 12}
        return [
            {"Id": "1", "Name": "Storage 1", "StorageControllers": [controller], "Drives": drives}
        ]

    def drives(self) -> list[dict[str, Any]]:
        """The entry of ``SUSHY_EMULATOR_DRIVES`` for this system, its key ``(uuid, "1")``."""
        return [
            {"Id": f"disk{i}", "Name": f"disk{i}", "CapacityBytes": gib << 30, "Protocol": "SATA"}
            for i, gib in enumerate(self.disks_gib)
        ]


DEFAULT_SYSTEMS = (
    FakeSystem("7d3b0e2c-5a61-4c8e-9f4b-2a1d6c0e9b01", "bmc-host-0", "52:54:00:6b:00:01"),
    FakeSystem("7d3b0e2c-5a61-4c8e-9f4b-2a1d6c0e9b02", "bmc-host-1", "52:54:00:6b:00:02"),
)


class RedfishBMC(LoopbackServer):
    """Run ``sushy-emulator`` from ``venv`` with its config and state in ``workdir``.

    The port is picked once and kept across ``stop()``/``start()``, and so is the
    systems' state (power), as a BMC's own would be.
    """

    def __init__(
        self,
        venv: str | Path,
        workdir: str | Path,
        *,
        systems: Sequence[FakeSystem] = DEFAULT_SYSTEMS,
        username: str = "admin",
        password: str = "redfish-password",
        host: str = "127.0.0.1",
        port: int | None = None,
        ready_timeout: float = _READY_TIMEOUT,
        stop_timeout: float = _STOP_TIMEOUT,
        power_delay: float | None = POWER_DELAY,
    ) -> None:
        self.venv = Path(venv).resolve()
        self.workdir = Path(workdir).resolve()
        self.systems = tuple(systems)
        self.power_delay = power_delay
        self.username = username
        self.password = password
        self.host = host
        self.port = port
        self.ready_timeout = ready_timeout
        self.config_path = self.workdir / "emulator.conf"
        self.auth_path = self.workdir / "htpasswd"
        self.state_dir = self.workdir / "state"
        self.log_path = self.workdir / "sushy-emulator.log"
        self.health_path = self.workdir / "health.json"
        self.error = RedfishBMCError
        self._process = ServerProcess(
            "sushy-emulator", self.log_path, stop_timeout=stop_timeout, error=RedfishBMCError
        )
        self._port_not_picked()
        if not (self.venv / "bin" / "sushy-emulator").is_file():
            raise RedfishBMCError(
                f"{self.venv / 'bin' / 'sushy-emulator'} not found; run tools/sushy/install.sh"
            )

    # -- public API ---------------------------------------------------------

    def address(self, system: FakeSystem) -> str:
        """The Host's ``spec.bmc.address`` for ``system`` (plain HTTP, as the emulator serves)."""
        return f"redfish+http://{self.host}:{self.port}/redfish/v1/Systems/{system.uuid}"

    def get(self, path: str, *, username: str | None = None, password: str | None = None) -> Any:
        """GET ``path`` (``/redfish/v1/...``) with basic auth: the JSON it answers."""
        user = self.username if username is None else username
        secret = self.password if password is None else password
        token = base64.b64encode(f"{user}:{secret}".encode()).decode()
        request = urllib.request.Request(
            self.url + path, headers={"Authorization": f"Basic {token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            raise RedfishBMCError(f"GET {path}: HTTP {e.code}") from e

    def system(self, system: FakeSystem) -> dict[str, Any]:
        """The emulator's Redfish ``ComputerSystem`` resource for ``system``."""
        data: dict[str, Any] = self.get(f"/redfish/v1/Systems/{system.uuid}")
        return data

    def power_state(self, system: FakeSystem) -> str:
        """``"On"`` or ``"Off"``, as the emulator's Redfish API says."""
        return str(self.system(system)["PowerState"])

    def resets(self, system: FakeSystem) -> int:
        """How many ``ComputerSystem.Reset`` actions (power on, off, restart) the system was
        asked for, from the emulator's own request log."""
        action = f"POST /redfish/v1/Systems/{system.uuid}/Actions/ComputerSystem.Reset "
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return text.count(action)

    def set_health(self, system: FakeSystem, health: str | None) -> None:
        """What the system's ``Status.Health`` says from now on (``OK``, ``Warning``,
        ``Critical``; None: the emulator's own OK), as a BMC whose sensors changed."""
        said = json.loads(self.health_path.read_text()) if self.health_path.exists() else {}
        if health is None:
            said.pop(system.uuid, None)
        else:
            said[system.uuid] = health
        self.health_path.write_text(json.dumps(said))

    def bios_attributes(self, system: FakeSystem) -> dict[str, Any]:
        """The system's current BIOS attributes, as the emulator's Redfish API says."""
        attributes: dict[str, Any] = self.get(f"/redfish/v1/Systems/{system.uuid}/BIOS")[
            "Attributes"
        ]
        return attributes

    def bios_version(self, system: FakeSystem) -> str:
        """The system's BIOS firmware version (``BiosVersion``)."""
        return str(self.system(system)["BiosVersion"])

    def manager_version(self) -> str:
        """The BMC's own firmware version (its first manager's ``FirmwareVersion``)."""
        managers = self.get("/redfish/v1/Managers")["Members"]
        return str(self.get(managers[0]["@odata.id"])["FirmwareVersion"])

    def volumes(self, system: FakeSystem) -> list[dict[str, Any]]:
        """The system's volumes (storage ``1``), each as the emulator serves it."""
        collection = self.get(f"/redfish/v1/Systems/{system.uuid}/Storage/1/Volumes")
        return [self.get(member["@odata.id"]) for member in collection["Members"]]

    # -- internals ----------------------------------------------------------

    def _prepare(self) -> None:
        self.state_dir.mkdir(exist_ok=True)
        self._write_auth_file()

    def _write_auth_file(self) -> None:
        """``username:<bcrypt digest>``, made by the emulator's interpreter (it has bcrypt)."""
        script = (
            "import sys, bcrypt; "
            f"sys.stdout.write(bcrypt.hashpw(sys.stdin.buffer.read(), "
            f"bcrypt.gensalt({_BCRYPT_ROUNDS})).decode())"
        )
        done = subprocess.run(
            [str(self.venv / "bin" / "python"), "-c", script],
            input=self.password.encode(),
            capture_output=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise RedfishBMCError(f"could not make a bcrypt digest: {done.stderr.decode()[-500:]}")
        self.auth_path.write_text(f"{self.username}:{done.stdout.decode()}\n")

    def _write_config(self) -> None:
        settings: dict[str, Any] = {
            "SUSHY_EMULATOR_LISTEN_IP": self.host,
            "SUSHY_EMULATOR_LISTEN_PORT": self.port,
            "SUSHY_EMULATOR_FAKE_DRIVER": True,
            "SUSHY_EMULATOR_FAKE_SYSTEMS": [s.config() for s in self.systems],
            "SUSHY_EMULATOR_STORAGE": {s.uuid: s.storage() for s in self.systems},
            "SUSHY_EMULATOR_DRIVES": {(s.uuid, "1"): s.drives() for s in self.systems},
            # No volumes, said: without an entry GET .../Storage/1/Volumes answers 500
            # (sushy-tools 2.2.0 iterates None), which Ironic's client retries for ~3 s.
            "SUSHY_EMULATOR_VOLUMES": {(s.uuid, "1"): [] for s in self.systems},
            "SUSHY_EMULATOR_STATE_DIR": str(self.state_dir),
            "SUSHY_EMULATOR_AUTH_FILE": str(self.auth_path),
            "SUSHY_EMULATOR_HEALTH_FILE": str(self.health_path),  # testbed/sushy_health.py
        }
        if self.power_delay is not None:  # read by testbed/sushy_hardware.py
            settings["SUSHY_EMULATOR_FAKE_POWER_DELAY"] = self.power_delay
        # A Python file (Flask's config.from_pyfile): repr() writes each value as Python.
        lines = [f"{key} = {value!r}" for key, value in settings.items()]
        self.config_path.write_text("\n".join(lines) + "\n")

    def _start_once(self) -> None:
        argv = [
            str(self.venv / "bin" / "python"),
            str(_LAUNCHER),
            "--config",
            str(self.config_path),
        ]
        self._process.start(argv, self.workdir, banner=f"starting sushy-emulator on {self.url}")
        try:
            self._process.wait_ready(
                http_probe(f"{self.url}/redfish/v1", timeout=2, ready=_is_service_root),
                timeout=self.ready_timeout,
                not_ready=f"did not answer GET {self.url}/redfish/v1",
            )
        except BaseException:
            self.stop(grace=1.0)
            raise


def _is_service_root(body: bytes) -> bool:
    return "Systems" in json.loads(body)
