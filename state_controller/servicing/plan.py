"""What a Host's servicing fields ask, as an ordered plan of tasks with one digest.

The tasks run in the order a person would: settings first (they take effect at the
reboot that ends the run, so a firmware image is flashed under the settings it will boot
with), then each firmware image in the order the spec lists them, then RAID. The digest
covers everything the run applies: a plan whose digest equals the last one applied
(``Host.status.provisioning.servicedDigest``) is done, whatever else changed in the spec.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ..api.host import HostSpec
from ..api.servicing import FirmwareUpdate, HardwareRAIDVolume, ServiceStep, SoftwareRAIDVolume


@dataclass(frozen=True, slots=True)
class ServiceTask:
    step: ServiceStep  # APPLYING_SETTINGS, UPDATING_FIRMWARE or CONFIGURING_RAID
    label: str  # how history and status name it: "updating firmware bios (1 of 2)"
    settings: dict[str, int | str] = field(default_factory=dict)
    update: FirmwareUpdate | None = None
    volumes: tuple[HardwareRAIDVolume | SoftwareRAIDVolume, ...] = ()
    software: bool = False  # the volumes are Linux md's, built from the agent ramdisk


@dataclass(frozen=True, slots=True)
class ServicePlan:
    tasks: tuple[ServiceTask, ...] = ()
    digest: str = ""  # "" for an empty plan

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(task.label for task in self.tasks)


EMPTY = ServicePlan()

# the start of each kind of task's label, as plan_for writes it
_LABEL_STARTS = (
    ("applying ", ServiceStep.APPLYING_SETTINGS),
    ("updating firmware ", ServiceStep.UPDATING_FIRMWARE),
    ("configuring RAID", ServiceStep.CONFIGURING_RAID),
)


def step_of_label(label: str) -> ServiceStep | None:
    """The step a task's label (kept in the servicing cursor) names; None: not one of ours."""
    for start, step in _LABEL_STARTS:
        if label.startswith(start):
            return step
    return None


def plan_for(spec: HostSpec) -> ServicePlan:
    """The servicing the spec asks for (:data:`EMPTY` when it asks none)."""
    tasks: list[ServiceTask] = []
    settings = dict(spec.firmware_settings or {})
    if settings:
        count = f"{len(settings)} setting{'' if len(settings) == 1 else 's'}"
        tasks.append(ServiceTask(ServiceStep.APPLYING_SETTINGS, f"applying {count}", settings))
    updates = spec.firmware_updates or []
    for index, update in enumerate(updates, start=1):
        label = f"updating firmware {update.component} ({index} of {len(updates)})"
        tasks.append(ServiceTask(ServiceStep.UPDATING_FIRMWARE, label, update=update))
    if spec.raid is not None:
        task = _raid_task(spec.raid.hardware_raid_volumes, spec.raid.software_raid_volumes)
        if task is not None:
            tasks.append(task)
    if not tasks:
        return EMPTY
    return ServicePlan(tuple(tasks), _digest(tasks))


def _raid_task(
    hardware: list[HardwareRAIDVolume] | None, software: list[SoftwareRAIDVolume] | None
) -> ServiceTask | None:
    """The RAID task: None when neither list is given (an empty one removes the volumes)."""
    volumes: tuple[HardwareRAIDVolume | SoftwareRAIDVolume, ...]
    if software is not None:
        volumes, kind = tuple(software), " software"
    elif hardware is not None:
        volumes, kind = tuple(hardware), ""
    else:
        return None
    count = len(volumes)
    what = f"{count}{kind} volume{'' if count == 1 else 's'}" if volumes else "none"
    label = f"configuring RAID: {what}"
    return ServiceTask(
        ServiceStep.CONFIGURING_RAID, label, volumes=volumes, software=software is not None
    )


def _digest(tasks: list[ServiceTask]) -> str:
    def wire(task: ServiceTask) -> dict[str, Any]:
        return {
            "step": task.step.value,
            "settings": task.settings,
            "update": task.update.model_dump(by_alias=True) if task.update else None,
            "volumes": [v.model_dump(by_alias=True, exclude_defaults=True) for v in task.volumes],
            **({"software": True} if task.software else {}),
        }

    text = json.dumps([wire(t) for t in tasks], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
