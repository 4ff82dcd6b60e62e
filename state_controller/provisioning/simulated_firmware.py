"""The simulated machines' firmware: BIOS settings with a schema, component versions, RAID
volumes, and servicing runs that take their time and fail as the fault plan says.

Apart from :mod:`.simulated` so that the provisioner's lifecycle stays readable; each
simulated :class:`~.simulated.Machine` holds one :class:`SimulatedFirmware`.

A run (:meth:`SimulatedFirmware.service`) spends ``task_seconds`` on each task of the plan,
then ``reboot_seconds`` restarting the machine; only then does the machine show what was
applied, as a BIOS setting shows after the reboot that applies it. A ``firmware`` fault
fails the run at its first firmware task; a ``hang`` on ``service`` stretches its first
task. Asked again with the same plan, a run answers where it is (or that it is done).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..api.servicing import ServiceStep
from ..servicing.plan import ServicePlan
from .fault_plan import Fault, failure
from .provisioner import HostView
from .results import Result, complete, continuing

# The settings every simulated BIOS has, with the schema it reports (as Redfish's
# AttributeRegistry says it, in Ironic's words).
SCHEMA: dict[str, dict[str, Any]] = {
    "BootMode": {"attributeType": "Enumeration", "allowableValues": ["Uefi", "Bios"]},
    "ProcTurboMode": {"attributeType": "Enumeration", "allowableValues": ["Enabled", "Disabled"]},
    "ProcVirtualization": {
        "attributeType": "Enumeration",
        "allowableValues": ["Enabled", "Disabled"],
    },
    "NumCores": {"attributeType": "Integer", "lowerBound": 1, "upperBound": 64},
    "SerialNumber": {"attributeType": "String", "readOnly": True, "maxLength": 32},
}
DEFAULTS: dict[str, int | str] = {
    "BootMode": "Uefi",
    "ProcTurboMode": "Enabled",
    "ProcVirtualization": "Enabled",
    "NumCores": 32,
    "SerialNumber": "SIM-0001",
}


def _bumped(version: str) -> str:
    """The next version a flashed image brings (1.0.0 -> 1.1.0)."""
    parts = version.split(".")
    if len(parts) >= 2 and parts[1].isdigit():
        parts[1] = str(int(parts[1]) + 1)
        return ".".join(parts)
    return version + ".1"


# A step ends at its time give or take this: ``now - started`` of two clock readings
# 0.3 s apart can come out as 0.29999999999995 (floats near a monotonic clock's value),
# and a step due at 0.3 s would be polled on for ever by a clock held at its end.
TICK = 1e-9


@dataclass
class ServiceRun:
    digest: str
    started: float
    labels: tuple[str, ...]
    steps: tuple[ServiceStep, ...]
    task_seconds: float
    reboot_seconds: float
    fault: Fault | None = None
    ended: Result | None = None  # how it ended, answered again when asked again
    ended_at: float | None = None  # when it was first asked after it ended

    def progress(self, now: float) -> tuple[int, ServiceStep, float]:
        """(tasks done, the step under way, seconds until the next change)."""
        elapsed = now - self.started + TICK
        for done, step, _, ends in self._steps():
            if elapsed < ends:
                return done, step, ends - elapsed
        return len(self.steps), ServiceStep.SERVICED, 0.0

    def passed(self, now: float) -> tuple[tuple[int, ServiceStep, float], ...]:
        """Every step begun by ``now``: (tasks done, step, seconds ago it began)."""
        elapsed = now - self.started + TICK
        return tuple(
            (done, step, elapsed - began)
            for done, step, began, _ in self._steps()
            if began <= elapsed
        )

    def _steps(self) -> list[tuple[int, ServiceStep, float, float]]:
        """(tasks done, step, when it begins, when it ends), in seconds from the start:
        each task, then the restart."""
        hang = self.fault.seconds if self.fault is not None and self.fault.kind == "hang" else 0
        out, began = [], 0.0
        for done, step in enumerate(self.steps):
            ends = began + self.task_seconds + (hang if done == 0 else 0)
            out.append((done, step, began, ends))
            began = ends
        out.append((len(self.steps), ServiceStep.REBOOTING, began, began + self.reboot_seconds))
        return out


SHIPPED_BIOS = "1.0.0"  # the BIOS version a machine ships with, before any flash


@dataclass(slots=True)
class SimulatedFirmware:
    settings: dict[str, int | str] = field(default_factory=lambda: dict(DEFAULTS))
    versions: dict[str, str] = field(default_factory=lambda: {"bios": SHIPPED_BIOS, "bmc": "1.00"})
    volumes: list[dict[str, Any]] = field(default_factory=list)
    run: ServiceRun | None = None
    runs: int = 0  # servicing runs started, for tests

    def report(self) -> dict[str, Any]:
        """What the BMC reports: components and settings with their schema."""
        settings = {
            name: {**schema, "value": self.settings.get(name, "")}
            for name, schema in SCHEMA.items()
        }
        components = [{"component": c, "version": v} for c, v in sorted(self.versions.items())]
        return {"components": components, "settings": settings, "volumes": list(self.volumes)}

    def service(
        self,
        plan: ServicePlan,
        now: float,
        *,
        task_seconds: float,
        reboot_seconds: float,
        fault: Fault | None,
        host: HostView,
        started: bool,
    ) -> Result:
        run = self.run
        if started and run is None:
            return complete()  # its run was before this backend's memory: done
        if run is None or (not started and run.digest != plan.digest):
            run = self.run = ServiceRun(
                plan.digest,
                now,
                plan.labels,
                tuple(task.step for task in plan.tasks),
                task_seconds,
                reboot_seconds,
                fault,
            )
            self.runs += 1
        if run.ended is not None:
            return run.ended
        done, step, wait = run.progress(now)
        if run.fault is not None and fault_strikes(run, done):
            run.ended, run.ended_at = failure(run.fault, host), now
            return run.ended
        passed = run.passed(now)
        if step != ServiceStep.SERVICED:
            return continuing(
                max(wait, 0.0), service_step=step, service_done=done, service_passed=passed
            )
        self._apply(plan)
        run.ended, run.ended_at = complete(service_passed=passed), now
        return run.ended

    def _apply(self, plan: ServicePlan) -> None:
        for task in plan.tasks:
            self.settings.update(task.settings)
            if task.update is not None:
                component = task.update.component
                self.versions[component] = _bumped(self.versions.get(component, "1.0.0"))
            if task.step == ServiceStep.CONFIGURING_RAID:
                kind = {"controller": "software"} if task.software else {}
                self.volumes = [
                    {**v.model_dump(by_alias=True, exclude_none=True), **kind} for v in task.volumes
                ]


def fault_strikes(run: ServiceRun, done: int) -> bool:
    """A ``firmware`` fault fails the run once its first firmware task has run."""
    if run.fault is None or run.fault.kind != "firmware":
        return False
    for index, step in enumerate(run.steps):
        if step == ServiceStep.UPDATING_FIRMWARE:
            return done > index
    return False
