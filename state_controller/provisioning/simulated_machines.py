"""The simulated backend's machines: what each one is and reports, and where they live.

Each :class:`Machine` is what the fake hardware and the backend know of one BMC address;
:func:`inventory` is what its hardware shows an inspection.
:class:`SimulatedMachines` holds them in this process's memory or, with a
:class:`~.hardware_file.HardwareFile`, as the file holds them: the machines then outlive
the process, as a real backend's nodes do, and several processes on one file share them,
as replicas share one Ironic: each call reads its machine from the file and writes it
back in one transaction. The firmware (settings, versions and a servicing run under way)
is not kept in the file: it stays with the process that made it.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any

from .hardware_file import HardwareFile, MachineRecord
from .provisioner import HostView
from .simulated_firmware import SHIPPED_BIOS, SimulatedFirmware


@dataclass(slots=True)
class Machine:
    """One fake physical machine behind a BMC.

    Its fields are :class:`~.hardware_file.MachineRecord`'s, by name, and the firmware:
    a machine is kept field by field as the record (see :meth:`kept`), so a field added
    to one and not to the other is a test's failure, not a field silently forgotten.

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
    custom_deploy: str | None = None  # the deploy step run instead of writing an image
    # what the backend's record was given at registration beside the BMC (as Ironic's
    # node fields): architecture, disablePowerOff, the ramdisk's network data's digest
    registered_with: dict[str, Any] = field(default_factory=dict)
    reboots: list[str] = field(default_factory=list)  # each reboot's mode: hard or soft
    lazy_firmware: SimulatedFirmware | None = None  # a process's own: never kept

    @property
    def firmware(self) -> SimulatedFirmware:
        if self.lazy_firmware is None:
            self.lazy_firmware = SimulatedFirmware()
        return self.lazy_firmware

    def kept(self, to_wall: float) -> MachineRecord:
        """This machine as the file keeps it: its work under way ends at a wall-clock
        time, ``to_wall`` seconds after the machine's clock says."""
        values = list(_kept_values(self))
        if self.busy is not None:
            operation, ends = self.busy
            values[_BUSY] = (operation, ends + to_wall)
        values[_STARTED] = dict(self.started)
        values[_REBOOTS] = tuple(self.reboots)
        return MachineRecord(*values)

    def take(self, record: MachineRecord, *, now: float, to_wall: float) -> None:
        """This machine as ``record`` holds it (the firmware is not kept there); work
        under way whose end passed while nobody ran ends ``now``."""
        for name, value in zip(KEPT_FIELDS, _kept_values(record), strict=True):
            setattr(self, name, value)
        if record.busy is not None:
            operation, ends = record.busy
            self.busy = (operation, max(now, ends - to_wall))
        self.started = Counter(record.started)
        self.registered_with = dict(record.registered_with)
        self.reboots = list(record.reboots)


KEPT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(MachineRecord))
"""The fields of a :class:`Machine` the hardware file keeps (all but its firmware), in
the record's order."""
_kept_values = attrgetter(*KEPT_FIELDS)  # one call for them all: a machine is kept at every change
_BUSY, _STARTED, _REBOOTS = (KEPT_FIELDS.index(name) for name in ("busy", "started", "reboots"))


def registered_with(host: HostView) -> dict[str, Any]:
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


# The simulated machines come in two models: every fourth host is a 1U server, whose
# restarts take longer (its firmware trains more memory per core), so that durations
# learned per hardware class differ between the two, as a real fleet's do.
MODELS = ("SIM-2U", "SIM-1U")
SLOW_MODEL = "SIM-1U"


def model_of(name: str) -> str:
    """The model of the simulated machine behind the host ``name`` (``host-0003``)."""
    digits = name.rpartition("-")[2]
    return SLOW_MODEL if digits.isdigit() and int(digits) % 4 == 3 else MODELS[0]


def inventory(host: HostView, *, seed: int) -> dict[str, Any]:
    """The hardware an inspection finds on ``host``'s machine, the same for a given seed."""
    digest = hashlib.sha256(f"{seed}:{host.bmc_address}".encode()).digest()
    rng = random.Random(digest)
    cores = rng.choice([16, 32, 48, 64, 96])
    mac = host.boot_mac_address or ":".join(f"{b:02x}" for b in digest[:6])
    return {
        "systemVendor": {"manufacturer": "Simulated", "productName": model_of(host.name)},
        "cpu": {"arch": "x86_64", "model": f"Simulated CPU {cores}C", "count": cores},
        "ramMebibytes": rng.choice([65536, 131072, 262144, 524288]),
        "nics": [{"name": "eno1", "mac": mac, "ip": "", "speedGbps": 25}],
        "storage": [{"name": "/dev/sda", "sizeBytes": 960_197_124_096, "rotational": False}],
        "hostname": host.name,
        # the BIOS a machine ships with, as its simulated firmware says until flashed
        "firmware": {"bios": {"date": "", "vendor": "Simulated", "version": SHIPPED_BIOS}},
    }


class SimulatedMachines:
    """The machines of one simulated backend, by BMC address: in this process's memory,
    or as a hardware file holds them (see the module's docstring)."""

    def __init__(self, hardware: HardwareFile | None, clock: Callable[[], float]) -> None:
        self.hardware = hardware  # None: the machines live as long as this object
        self._clock = clock
        self._machines: dict[str, Machine] = {}
        self._lock = threading.RLock()
        # taken once, so that a busy machine's wall-clock end is the same at every poll
        # and its row is written when the machine changes, not each time it is asked
        self._to_wall = time.time() - clock()
        self._reload()

    def one(self, address: str) -> Machine:
        """The machine at ``address``, as last kept (made when first asked for)."""
        with self._lock:
            self._reload()
            return self._machine(address)

    def every(self) -> dict[str, Machine]:
        """Every machine the backend has seen, by BMC address."""
        with self._lock:
            self._reload()
            return dict(self._machines)

    @contextmanager
    def at(self, address: str) -> Iterator[Machine]:
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
                    machine.take(record, now=self._clock(), to_wall=self._to_wall)
                try:
                    yield machine
                finally:
                    self.hardware.save(machine.kept(self._to_wall))

    def each(self) -> Iterator[Machine]:
        """Every machine in turn, each changed as :meth:`at` changes one."""
        with self._lock:
            self._reload()
            for address in list(self._machines):
                with self.at(address) as machine:
                    yield machine

    def _reload(self) -> None:
        """The machines other processes changed since this one last read them."""
        if self.hardware is None:
            return
        for record in self.hardware.load():
            self._machine(record.address).take(record, now=self._clock(), to_wall=self._to_wall)

    def _machine(self, address: str) -> Machine:
        machine = self._machines.get(address)
        if machine is None:
            machine = self._machines[address] = Machine(address)
        return machine
