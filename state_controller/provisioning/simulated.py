"""Simulated hardware: the embedded default backend and the test double.

It behaves like a small Ironic with fake machines: operations take the
configured time (zero by default), answer with the same semantic results a
real backend gives, and fail on demand through a :class:`FaultPlan`. It is
deterministic for a given seed, so a demo or a test can be replayed. The machines
and where they live (this process, or a hardware file several processes share) are
:mod:`.simulated_machines`'; the faults due when an operation ends stay with this
process (a fault plan is a process's own). Calls are refused while the hardware file
says so (:meth:`.HardwareFile.refuse`): an outage of the backend, answered as an
unreachable Ironic is.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Concatenate, ParamSpec

from ..servicing.plan import ServicePlan
from .fault_plan import Fault, FaultPlan, Operation, failure, unfetchable_checksum_failure
from .hardware_file import HardwareFile
from .provisioner import HostView
from .results import Result, complete, continuing, failed, retry_after, transient
from .simulated_health import SimulatedHealth
from .simulated_machines import Machine, SimulatedMachines, inventory, registered_with

RAMDISK_WORK = ("inspect", "provision")  # waits on the deploy ramdisk while busy


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
        health_every: float = 0.0,
    ) -> None:
        self.timings = timings or Timings()
        self.health_every = health_every  # how often a resting faulted host is read again
        self._health = SimulatedHealth()
        self.faults = faults or FaultPlan()
        self.seed = seed
        self.clock = clock
        self.hardware = hardware  # None: the machines live as long as this object
        self._machines = SimulatedMachines(hardware, clock)
        self._failing: dict[tuple[str, str], Fault] = {}  # failures due when an operation ends

    # -- inspection helpers for tests and the demo -------------------------------------

    def machine(self, address: str) -> Machine:
        return self._machines.one(address)

    def machines(self) -> dict[str, Machine]:
        """Every machine the backend has seen, by BMC address."""
        return self._machines.every()

    def forget_all_nodes(self) -> None:
        """Lose the backend's database, like an Ironic whose database was wiped."""
        for machine in self._machines.each():
            machine.node_id = ""
            machine.node_active = False
            machine.busy = None

    # -- Provisioner -------------------------------------------------------------------

    @_refusable
    def register(self, host: HostView, *, credentials_changed: bool) -> Result:
        with self._machines.at(host.bmc_address) as machine:
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
                on = machine.powered_on
                health = self._health.reported(self.faults, host.key, machine, self.clock())
                return complete(provider_id=machine.node_id, powered_on=on, health=health)

            if machine.node_id and not credentials_changed:
                return finish()  # already managed: nothing to wait for (nor to digest)
            if machine.node_id:
                # a node the backend has: the new credentials are sent to it, not enrolled
                # again, and refused while it works (Ironic answers 409), so that the work
                # under way (another owner's, after a crash) is neither redone nor cut off
                working = self._working(machine)
                if working is not None:
                    return retry_after(working, "the machine is busy; credentials sent after")
                machine.registered_with = registered_with(host)
                return finish()
            machine.registered_with = registered_with(host)
            return self._operation(host, machine, "register", finish)

    @_refusable
    def inspect(self, host: HostView, *, restart: bool) -> Result:
        with self._machines.at(host.bmc_address) as machine:
            return self._operation(
                host,
                machine,
                "inspect",
                lambda: complete(hardware=inventory(host, seed=self.seed)),
                restart=restart,
            )

    @_refusable
    def prepare(self, host: HostView) -> Result:
        with self._machines.at(host.bmc_address) as machine:
            return self._operation(host, machine, "prepare", complete)

    @_refusable
    def provision(self, host: HostView) -> Result:
        with self._machines.at(host.bmc_address) as machine:

            def finish() -> Result:
                if (unfetchable := unfetchable_checksum_failure(host)) is not None:
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
        with self._machines.at(host.bmc_address) as machine:

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
        with self._machines.at(host.bmc_address) as machine:
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
        with self._machines.at(host.bmc_address) as machine:

            def finish() -> Result:
                machine.powered_on = on
                return complete(powered_on=on)

            return self._operation(host, machine, "power", finish)

    @_refusable
    def reboot(self, host: HostView, *, soft: bool = False) -> Result:
        with self._machines.at(host.bmc_address) as machine:

            def finish() -> Result:
                machine.powered_on = True
                machine.reboots.append("soft" if soft else "hard")
                return complete(powered_on=True)

            return self._operation(host, machine, "power", finish)

    @_refusable
    def firmware(self, host: HostView) -> Result:
        with self._machines.at(host.bmc_address) as machine:
            return complete(firmware=machine.firmware.report())

    @_refusable
    def service(self, host: HostView, plan: ServicePlan, *, started: bool) -> Result:
        with self._machines.at(host.bmc_address) as machine:
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
        with self._machines.at(host.bmc_address) as machine:
            machine.node_id = ""
            machine.node_active = False
            machine.busy = None
            return complete()

    @_refusable
    def delete(self, host: HostView) -> Result:
        with self._machines.at(host.bmc_address) as machine:
            result = self._operation(host, machine, "delete", complete)
            if result.done:
                machine.node_id = ""
                machine.node_active = False
            return result

    # -- machinery ---------------------------------------------------------------------

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
        # work under way is joined, even when asked to start over: Ironic answers a node
        # still inspecting as busy, so a new owner that missed the start (its status
        # not yet written when the old owner died) never starts it twice
        if machine.busy is not None and machine.busy[0] == operation:
            if now < machine.busy[1] and host.force_reboot and operation in RAMDISK_WORK:
                # the ramdisk restarted (.forced_reboot): the work starts over, a hang ends
                machine.started[operation] += 1
                machine.busy = (operation, now + self.timings.of(operation))
                return continuing(machine.busy[1] - now, restarted=True)
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


def _passed(machine: Machine, operation: Operation) -> bool:
    """Whether the machine is busy with, or done with, an operation after ``operation``
    in :data:`_FORWARD`."""
    if operation not in _FORWARD:
        return False
    current = machine.busy[0] if machine.busy is not None else machine.finished
    return current in _FORWARD and _FORWARD.index(current) > _FORWARD.index(operation)
