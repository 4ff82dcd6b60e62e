"""Simulated hardware: the embedded default backend and the test double.

It behaves like a small Ironic with fake machines: operations take the
configured time (zero by default), answer with the same semantic results a
real backend gives, and fail on demand through a :class:`FaultPlan`. It is
deterministic for a given seed, so a demo or a test can be replayed. With a
:class:`~.hardware_file.HardwareFile` the machines outlive the process, as a real
backend's nodes do, and several processes on one file share them, as replicas share
one Ironic: each call reads its machine from the file and writes it back in one
transaction. What is not kept in the file stays with the process that made it: the
faults due when an operation ends (a fault plan is a process's own) and the firmware
(settings, versions and a servicing run under way: another process sees its own).
Calls are refused while the file says so (:meth:`.HardwareFile.refuse`): an outage of
the backend, answered as an unreachable Ironic is.

One module: the machines, their operations and their persistence are one backend,
read together.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec
from urllib.parse import urlsplit

from ..api.host import unfetchable_checksum
from ..servicing.plan import ServicePlan
from .fault_plan import Fault, FaultPlan, Operation, failure
from .hardware_file import HardwareFile, MachineRecord
from .provisioner import HostView
from .results import Result, complete, continuing, failed, retry_after, transient
from .simulated_firmware import SimulatedFirmware


@dataclass(frozen=True)
class Timings:
    """Seconds each operation takes on the simulated hardware."""

    register: float = 0.0
    inspect: float = 0.0
    prepare: float = 0.0
    provision: float = 0.0
    deprovision: float = 0.0
    power: float = 0.0
    adopt: float = 0.0
    delete: float = 0.0
    service: float = 0.0  # each task of a servicing run (its reboot takes ``power``)

    def of(self, operation: Operation) -> float:
        return float(getattr(self, operation))

    @classmethod
    def demo(cls) -> Timings:
        """Long enough to watch a fleet move, short enough to finish in a minute."""
        return cls(1.0, 3.0, 2.0, 4.0, 2.0, 0.5, 0.5, 0.5, service=3.0)

    @classmethod
    def named(cls, name: str) -> Timings:
        """The timings a command line names (``--simulated-timings``): one of TIMINGS."""
        return cls.demo() if name == "demo" else cls()


TIMINGS = ("zero", "demo")


@dataclass(slots=True)
class Machine:
    """One fake physical machine behind a BMC.

    Slotted, and its firmware made when first asked for (servicing, or a firmware read):
    at 10,000 machines that is 0.6 KB a machine less in the controller's process
    (tracemalloc at 2,000 hosts)."""

    address: str
    powered_on: bool = False
    disk_image: dict[str, Any] | None = None
    node_id: str = ""  # the backend's record; "" when the backend does not know it
    node_active: bool = False  # the backend believes an image is deployed
    busy: tuple[str, float] | None = None  # (operation, finishes at)
    started: Counter[str] = field(default_factory=Counter)
    finished: str = ""  # the last operation that ended well, until another one starts
    # what the deployed OS was given (user, network, meta data): its digest and sizes
    # only, never its contents; None when nothing (or nothing is deployed)
    config_drive: dict[str, Any] | None = None
    reboots: list[str] = field(default_factory=list)  # each reboot's mode: hard or soft
    # what the backend's record was given at registration beside the BMC (as Ironic's
    # node fields): architecture, disablePowerOff, the ramdisk's network data's digest
    registered_with: dict[str, Any] = field(default_factory=dict)
    custom_deploy: str | None = None  # the deploy step run instead of writing an image
    lazy_firmware: SimulatedFirmware | None = None

    @property
    def firmware(self) -> SimulatedFirmware:
        if self.lazy_firmware is None:
            self.lazy_firmware = SimulatedFirmware()
        return self.lazy_firmware


def _registered_with(host: HostView) -> dict[str, Any]:
    """What the simulated backend's record keeps of a host's registration fields."""
    out: dict[str, Any] = {}
    if host.architecture:
        out["architecture"] = host.architecture
    if host.disable_power_off:
        out["disablePowerOff"] = True
    ramdisk = host.data.ramdisk_network_data if host.data is not None else None
    if ramdisk is not None:
        out["ramdiskNetworkData"] = hashlib.sha256(
            json.dumps(ramdisk, sort_keys=True).encode()
        ).hexdigest()
    return out


_REPEATED_WHEN_ASKED_AGAIN: frozenset[Operation] = frozenset(
    {"inspect", "prepare", "provision", "deprovision"}
)
"""Operations whose end a backend keeps showing (a node stays inspected, deployed);
power and adoption are asked for by what they must reach, and answered by it."""

_FORWARD: tuple[Operation, ...] = ("inspect", "prepare", "provision")
"""The order a node moves through on its way to a deployed image. A node busy with or
done with a later one has passed the earlier ones: Ironic shows a node in ``deploying``
as already cleaned. A controller that crashed between the backend's move and its own
status write asks the earlier operation again and must be told it is done."""


P = ParamSpec("P")
Call = Callable[Concatenate["SimulatedProvisioner", HostView, P], Result]


def _refusable(call: Call[P]) -> Call[P]:
    """A call answered as unreachable while the hardware file says the backend refuses."""

    def answer(
        self: SimulatedProvisioner, host: HostView, /, *args: P.args, **kw: P.kwargs
    ) -> Result:
        why = self.hardware.refusal() if self.hardware is not None else None
        if why is not None:
            return transient(f"the simulated backend is unavailable: {why}")
        return call(self, host, *args, **kw)

    return answer


class SimulatedProvisioner:
    """A provisioner over simulated machines, shared by all hosts of a controller."""

    backend = "simulated"

    def __init__(
        self,
        *,
        timings: Timings | None = None,
        faults: FaultPlan | None = None,
        seed: int = 0,
        clock: Callable[[], float] = time.monotonic,
        hardware: HardwareFile | None = None,
    ) -> None:
        self.timings = timings or Timings()
        self.faults = faults or FaultPlan()
        self.seed = seed
        self.clock = clock
        self._machines: dict[str, Machine] = {}
        self._failing: dict[tuple[str, str], Fault] = {}  # failures due when an operation ends
        self._lock = threading.RLock()
        self.hardware = hardware  # None: the machines live as long as this object
        # taken once, so that a busy machine's wall-clock end is the same at every poll
        # and its row is written when the machine changes, not each time it is asked
        self._to_wall = time.time() - clock()
        if hardware is not None:
            self._load(hardware)

    # -- inspection helpers for tests and the demo -------------------------------------

    def machine(self, address: str) -> Machine:
        with self._lock:
            self._reload()
            return self._machine(address)

    def machines(self) -> dict[str, Machine]:
        """Every machine the backend has seen, by BMC address."""
        with self._lock:
            self._reload()
            return dict(self._machines)

    def forget_all_nodes(self) -> None:
        """Lose the backend's database, like an Ironic whose database was wiped."""
        with self._lock:
            self._reload()
            for address in list(self._machines):
                with self._at(address) as machine:
                    machine.node_id = ""
                    machine.node_active = False
                    machine.busy = None

    # -- Provisioner -------------------------------------------------------------------

    @_refusable
    def register(self, host: HostView, *, credentials_changed: bool) -> Result:
        with self._at(host.bmc_address) as machine:
            if host.bmc.host.endswith(".invalid"):
                return self._unreachable(host)
            fault = self.faults.take(host.key, "register")
            if fault is not None and fault.kind == "unreachable":
                return self._unreachable(host)
            if fault is not None:
                return failed(
                    f"the BMC at {host.bmc.host} rejected user {host.credentials.username!r}; "
                    "check username and password in the credentials Secret",
                    details="401 Unauthorized",
                )
            if not host.credentials.username or not host.credentials.password:
                return failed("the BMC rejected empty credentials", details="401 Unauthorized")

            def finish() -> Result:
                if not machine.node_id:
                    machine.node_id = self._node_id(host.bmc_address)
                return complete(provider_id=machine.node_id, powered_on=machine.powered_on)

            if machine.node_id and not credentials_changed:
                return finish()  # already managed: nothing to wait for (nor to digest)
            if machine.node_id:
                # a node the backend has: the new credentials are sent to it, not enrolled
                # again, and refused while it works (Ironic answers 409), so that the work
                # under way (another owner's, after a crash) is neither redone nor cut off
                working = self._working(machine)
                if working is not None:
                    return retry_after(working, "the machine is busy; credentials sent after")
                machine.registered_with = _registered_with(host)
                return finish()
            machine.registered_with = _registered_with(host)
            return self._operation(host, machine, "register", finish)

    @_refusable
    def inspect(self, host: HostView, *, restart: bool) -> Result:
        with self._at(host.bmc_address) as machine:
            return self._operation(
                host,
                machine,
                "inspect",
                lambda: complete(hardware=self._hardware(host)),
                restart=restart,
            )

    @_refusable
    def prepare(self, host: HostView) -> Result:
        with self._at(host.bmc_address) as machine:
            return self._operation(host, machine, "prepare", complete)

    @_refusable
    def provision(self, host: HostView) -> Result:
        with self._at(host.bmc_address) as machine:

            def finish() -> Result:
                if (unfetchable := _unfetchable_checksum(host)) is not None:
                    return unfetchable  # as in Ironic: the deploy starts, then fails
                machine.disk_image = dict(host.image) if host.image else None
                machine.custom_deploy = host.custom_deploy
                machine.config_drive = (
                    None
                    if host.data is None
                    else {"digest": host.data.digest(), "sizes": host.data.sizes()}
                )
                machine.powered_on = host.online
                machine.node_active = True
                return complete(powered_on=machine.powered_on)

            return self._operation(host, machine, "provision", finish)

    @_refusable
    def deprovision(self, host: HostView) -> Result:
        with self._at(host.bmc_address) as machine:

            def finish() -> Result:
                machine.disk_image = None
                machine.custom_deploy = None
                machine.config_drive = None
                machine.powered_on = False
                machine.node_active = False
                return complete(powered_on=False)

            return self._operation(host, machine, "deprovision", finish)

    @_refusable
    def adopt(self, host: HostView) -> Result:
        with self._at(host.bmc_address) as machine:
            if not machine.node_id:
                return failed("cannot adopt: the backend does not know the host; register first")
            if machine.node_active:
                return complete()

            def finish() -> Result:
                machine.node_active = True
                return complete(adopted=True)

            return self._operation(host, machine, "adopt", finish)

    @_refusable
    def power(self, host: HostView, *, on: bool, soft: bool = False) -> Result:
        with self._at(host.bmc_address) as machine:

            def finish() -> Result:
                machine.powered_on = on
                return complete(powered_on=on)

            return self._operation(host, machine, "power", finish)

    @_refusable
    def reboot(self, host: HostView, *, soft: bool = False) -> Result:
        with self._at(host.bmc_address) as machine:

            def finish() -> Result:
                machine.powered_on = True
                machine.reboots.append("soft" if soft else "hard")
                return complete(powered_on=True)

            return self._operation(host, machine, "power", finish)

    @_refusable
    def firmware(self, host: HostView) -> Result:
        with self._at(host.bmc_address) as machine:
            return complete(firmware=machine.firmware.report())

    @_refusable
    def service(self, host: HostView, plan: ServicePlan, *, started: bool) -> Result:
        with self._at(host.bmc_address) as machine:
            run = machine.firmware.run
            fresh = not started and (run is None or run.digest != plan.digest)
            fault = self.faults.take(host.key, "service") if fresh else None
            return machine.firmware.service(
                plan,
                self.clock(),
                task_seconds=self.timings.service,
                reboot_seconds=self.timings.power,
                fault=fault,
                host=host,
                started=started,
            )

    @_refusable
    def detach(self, host: HostView) -> Result:
        with self._at(host.bmc_address) as machine:
            machine.node_id = ""
            machine.node_active = False
            machine.busy = None
            return complete()

    @_refusable
    def delete(self, host: HostView) -> Result:
        with self._at(host.bmc_address) as machine:
            result = self._operation(host, machine, "delete", complete)
            if result.done:
                machine.node_id = ""
                machine.node_active = False
            return result

    # -- machinery ---------------------------------------------------------------------

    @contextmanager
    def _at(self, address: str) -> Iterator[Machine]:
        """The machine at ``address``, under the lock; with a hardware file, as the file
        holds it (another process may have changed it) and kept there after, in one
        transaction."""
        with self._lock:
            if self.hardware is None:
                yield self._machine(address)
                return
            with self.hardware.changing(address) as record:
                machine = self._machine(address)
                if record is not None:
                    self._take(machine, record)
                try:
                    yield machine
                finally:
                    self._keep(machine)

    def _keep(self, machine: Machine) -> None:
        if self.hardware is None:
            return
        busy = None
        if machine.busy is not None:  # kept in wall-clock time: the clock may be monotonic
            operation, ends = machine.busy
            busy = (operation, ends + self._to_wall)
        self.hardware.save(
            MachineRecord(
                machine.address,
                machine.powered_on,
                machine.disk_image,
                machine.node_id,
                machine.node_active,
                busy,
                dict(machine.started),
                machine.finished,
                machine.config_drive,
                machine.custom_deploy,
                machine.registered_with,
                tuple(machine.reboots),
            )
        )

    def _load(self, hardware: HardwareFile) -> None:
        for record in hardware.load():
            self._take(self._machine(record.address), record)

    def _reload(self) -> None:
        """The machines other processes changed since this one last read them."""
        if self.hardware is not None:
            self._load(self.hardware)

    def _take(self, machine: Machine, record: MachineRecord) -> None:
        """``machine`` as the file holds it (the firmware is not kept there)."""
        busy = None
        if record.busy is not None:  # an end that passed while nobody ran: now
            operation, ends = record.busy
            busy = (operation, max(self.clock(), ends - self._to_wall))
        machine.powered_on = record.powered_on
        machine.disk_image = record.disk_image
        machine.node_id = record.node_id
        machine.node_active = record.node_active
        machine.busy = busy
        machine.started = Counter(record.started)
        machine.finished = record.finished
        machine.config_drive = record.config_drive
        machine.custom_deploy = record.custom_deploy
        machine.registered_with = dict(record.registered_with)
        machine.reboots = list(record.reboots)

    def _machine(self, address: str) -> Machine:
        machine = self._machines.get(address)
        if machine is None:
            machine = self._machines[address] = Machine(address)
        return machine

    def _node_id(self, address: str) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"hoststate-sim:{self.seed}:{address}"))

    def _unreachable(self, host: HostView) -> Result:
        port = f":{host.bmc.port}" if host.bmc.port else ""
        return failed(
            f"the BMC at {host.bmc.host}{port} did not answer; check spec.bmc.address and "
            "that the BMC is reachable from the provisioning network",
            details="connection timed out",
        )

    def _operation(
        self,
        host: HostView,
        machine: Machine,
        operation: Operation,
        finish: Callable[[], Result],
        *,
        restart: bool = False,
    ) -> Result:
        now = self.clock()
        if machine.busy is not None and machine.busy[0] == operation and not restart:
            if now < machine.busy[1]:
                return continuing(machine.busy[1] - now)
            machine.busy = None
            return self._finish(host, machine, operation, finish)
        if machine.busy is None and machine.finished == operation and not restart:
            # asked again after it ended (the answer was lost with a crashed controller):
            # the backend shows the work done, as Ironic shows a node already inspected
            return self._finish(host, machine, operation, finish)
        if not restart and _passed(machine, operation):
            return finish()  # the machine has moved on; the answer was lost with a crash
        machine.finished = ""
        machine.started[operation] += 1
        duration = self.timings.of(operation)
        # registration faults are answered up front by register() itself
        fault = self.faults.take(host.key, operation) if operation != "register" else None
        if fault is not None and fault.kind == "hang":
            duration += fault.seconds
        elif fault is not None:
            self._failing[(host.key, operation)] = fault  # reported when the operation ends
        if duration <= 0:
            return self._finish(host, machine, operation, finish)
        machine.busy = (operation, now + duration)
        return continuing(duration)

    def _working(self, machine: Machine) -> float | None:
        """How long the machine's work under way still runs (None: none). Work whose end
        has passed while nobody asked ends now, shown done as the backend keeps it."""
        if machine.busy is None:
            return None
        operation, ends = machine.busy
        now = self.clock()
        if now < ends:
            return ends - now
        if operation in _REPEATED_WHEN_ASKED_AGAIN:
            machine.busy, machine.finished = None, operation
        return None

    def _finish(
        self, host: HostView, machine: Machine, operation: Operation, finish: Callable[[], Result]
    ) -> Result:
        fault = self._failing.pop((host.key, operation), None)
        if fault is not None:
            return failure(fault, host)
        result = finish()
        if result.done and operation in _REPEATED_WHEN_ASKED_AGAIN:
            machine.finished = operation
        return result

    def _hardware(self, host: HostView) -> dict[str, Any]:
        digest = hashlib.sha256(f"{self.seed}:{host.bmc_address}".encode()).digest()
        rng = random.Random(digest)
        cores = rng.choice([16, 32, 48, 64, 96])
        mac = host.boot_mac_address or ":".join(f"{b:02x}" for b in digest[:6])
        return {
            "systemVendor": {"manufacturer": "Simulated", "productName": "SIM-2U"},
            "cpu": {"arch": "x86_64", "model": f"Simulated CPU {cores}C", "count": cores},
            "ramMebibytes": rng.choice([65536, 131072, 262144, 524288]),
            "nics": [{"name": "eno1", "mac": mac, "ip": "", "speedGbps": 25}],
            "storage": [{"name": "/dev/sda", "sizeBytes": 960_197_124_096, "rotational": False}],
            "hostname": host.name,
        }


def _passed(machine: Machine, operation: Operation) -> bool:
    """Whether the machine is busy with, or done with, an operation after ``operation``
    in :data:`_FORWARD`."""
    if operation not in _FORWARD:
        return False
    current = machine.busy[0] if machine.busy is not None else machine.finished
    return current in _FORWARD and _FORWARD.index(current) > _FORWARD.index(operation)


def _unfetchable_checksum(host: HostView) -> Result | None:
    """A checksum file under the ``.invalid`` domain (RFC 2606: it never resolves) cannot
    be fetched: provisioning fails as it does in Ironic, with the same sentence."""
    checksum = str((host.image or {}).get("checksum") or "")
    if not checksum.startswith(("http://", "https://")):
        return None
    if not (urlsplit(checksum).hostname or "").endswith(".invalid"):
        return None
    reason = "Name or service not known"
    return failed(
        "deploying the image failed: "
        + unfetchable_checksum(checksum, reason, fetcher="the simulated backend"),
        details=f"Failed to download image {checksum}, reason: {reason}",
    )
