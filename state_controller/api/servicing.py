"""Servicing: what a Host asks of its running machine's firmware and disks, and the steps
a servicing run goes through.

The spec fields say it in baremetal-operator's terms where they fit, on the Host itself
rather than in objects beside it (one per host, no shared schema object to contend for):

* ``spec.firmwareSettings`` — BIOS settings by name, as HostFirmwareSettings'
  ``spec.settings``; checked against the schema the BMC reports (``status.firmware``);
* ``spec.firmwareUpdates`` — ``[{component, url}]``, as HostFirmwareComponents'
  ``spec.updates`` (components ``bios``, ``bmc``, ``nic:<id>``);
* ``spec.raid`` — RAID volumes, as BareMetalHost's ``spec.raid``: ``hardwareRAIDVolumes``
  built by the RAID controller, or ``softwareRAIDVolumes`` built by Linux md from the
  agent ramdisk (one or two; the first, where the OS is written, a mirror);
* ``spec.servicingPolicy`` — when they may be applied to a provisioned host: not at all
  (the default; baremetal-operator without a HostUpdatePolicy applies them at the next
  preparation, a Host does not apply them at preparation: docs/servicing.md, Not yet),
  ``onReboot`` (the next reboot asked by annotation services the host instead, as a
  HostUpdatePolicy of ``onReboot``), or ``rolling`` (as soon as the host's pool has a
  free servicing slot).

A servicing run is a chapter of the host's book, its steps recorded like a node update's.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, JsonValue, model_validator

from .base import NAME_MAX, WORD_MAX, Count, Matches, SpecModel
from .disks import RootDeviceHints

FIRMWARE_COMPONENT_PATTERN = r"^(bios|bmc|nic:[A-Za-z0-9_.:-]{1,64})$"
FIRMWARE_URL_PATTERN = r"^https?://\S+$"
SETTING_NAME_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"
SETTINGS_MAX = 256
UPDATES_MAX = 16
VOLUMES_MAX = 16


class ServicingPolicy(StrEnum):
    NEVER = ""  # never applied (a Host applies them only by servicing, not at preparation)
    ON_REBOOT = "onReboot"  # the next reboot asked by annotation services the host instead
    ROLLING = "rolling"  # as soon as the host's pool has a free servicing slot


class ServiceStep(StrEnum):
    """Where a host is in its servicing. The values are what history and tables show."""

    SERVICED = "serviced"  # what the spec asks is applied, or nothing is asked
    PENDING = "service pending"  # asked; waits for its reboot or its pool's slot
    DRAINING = "service draining"  # its Node cordoned, its pods being evicted
    APPLYING_SETTINGS = "applying settings"
    UPDATING_FIRMWARE = "updating firmware"  # the message says which component, n of m
    CONFIGURING_RAID = "configuring RAID"
    REBOOTING = "service rebooting"  # the machine restarts into what was applied
    VERIFYING = "verifying service"  # reading back settings and firmware versions
    FAILED = "service failed"  # the backend gave up; the error says why


SERVICE_IN_PROGRESS: tuple[ServiceStep, ...] = (
    ServiceStep.PENDING,
    ServiceStep.DRAINING,
    ServiceStep.APPLYING_SETTINGS,
    ServiceStep.UPDATING_FIRMWARE,
    ServiceStep.CONFIGURING_RAID,
    ServiceStep.REBOOTING,
    ServiceStep.VERIFYING,
)

# the steps in which the machine is being worked on (operational status ``servicing``)
SERVICE_ACTIVE = frozenset(SERVICE_IN_PROGRESS) - {ServiceStep.PENDING}

# The reasons of the history records (and Events) that start and end a servicing run.
SERVICING_STARTED = "ServicingStarted"
SERVICING_COMPLETE = "ServicingComplete"
SERVICING_FAILED = "ServicingFailed"
SERVICING_WITHDRAWN = "ServicingWithdrawn"  # asked, then taken back before it ran

# Default stuck thresholds, seconds. A BIOS setting needs a reboot (5-15 minutes on a
# server); a firmware image is flashed and the BMC verifies it (Ironic's own wait for a
# BMC firmware update is an hour); waiting for a reboot or a slot is not being stuck.
DEFAULT_SERVICE_THRESHOLDS: dict[ServiceStep, float] = {
    ServiceStep.DRAINING: 30 * 60,  # as an update's drain (the MCO fails one after an hour)
    ServiceStep.APPLYING_SETTINGS: 30 * 60,
    ServiceStep.UPDATING_FIRMWARE: 60 * 60,
    ServiceStep.CONFIGURING_RAID: 30 * 60,
    ServiceStep.REBOOTING: 20 * 60,
    ServiceStep.VERIFYING: 10 * 60,
}


def servicing(step: ServiceStep) -> bool:
    """Whether a servicing run is under way (or failed and not yet given up on)."""
    return step in SERVICE_IN_PROGRESS or step == ServiceStep.FAILED


class FirmwareUpdate(SpecModel):
    component: Annotated[
        str,
        Field(max_length=80),
        Matches(
            FIRMWARE_COMPONENT_PATTERN,
            "spec.firmwareUpdates[].component: write bios, bmc, or nic:<id> as the BMC "
            "names the NIC",
        ),
    ] = Field(description="What to update: bios, bmc, or nic:<id> (as the BMC names the NIC).")
    url: Annotated[
        str,
        Field(max_length=2048),
        Matches(
            FIRMWARE_URL_PATTERN,
            "spec.firmwareUpdates[].url: give the image's http:// or https:// URL, one the "
            "BMC can fetch",
        ),
    ] = Field(description="The firmware image, at an http:// or https:// URL the BMC can fetch.")


class HardwareRAIDVolume(SpecModel):
    size_gibibytes: Count | None = Field(
        default=None, description="The volume's size; absent: as large as the disks allow."
    )
    level: Literal["0", "1", "2", "5", "6", "1+0", "5+0", "6+0"] = Field(
        description="The RAID level."
    )
    name: Annotated[str, Field(max_length=NAME_MAX)] = ""
    rotational: bool | None = Field(
        default=None, description="Only spinning disks (true) or only solid-state (false)."
    )
    number_of_physical_disks: Annotated[int, Field(ge=1, le=64)] | None = None
    controller: Annotated[str, Field(max_length=WORD_MAX)] = ""
    physical_disks: list[Annotated[str, Field(max_length=NAME_MAX)]] = Field(
        default_factory=list, max_length=64, description="The disks, as the controller names them."
    )


class SoftwareRAIDVolume(SpecModel):
    size_gibibytes: Count | None = Field(
        default=None, description="The volume's size; absent: as large as the disks allow."
    )
    level: Literal["0", "1", "1+0"] = Field(description="The RAID level.")
    physical_disks: list[RootDeviceHints] = Field(
        default_factory=list,
        max_length=64,
        description="The disks, by root device hints; absent: every disk the ramdisk finds.",
    )


SOFTWARE_VOLUMES_MAX = 2
RAID_KINDS = (
    "spec.raid: give hardwareRAIDVolumes or softwareRAIDVolumes, not both (the RAID "
    "controller or Linux md builds a host's volumes, never both)"
)
SOFTWARE_FIRST_MIRROR = (
    "spec.raid.softwareRAIDVolumes: the first volume holds the OS and must be a mirror; "
    'set its level to "1"'
)
SOFTWARE_DISKS = (
    "spec.raid.softwareRAIDVolumes: a volume's physicalDisks needs at least two disks; "
    "name two or more, or leave the list out for every disk"
)


def _raid_rules() -> list[JsonValue]:
    """The CEL twins of :meth:`RAIDConfig._one_kind`."""
    return [
        {
            "rule": "!has(self.hardwareRAIDVolumes) || !has(self.softwareRAIDVolumes)",
            "message": RAID_KINDS,
        },
        {
            "rule": "!has(self.softwareRAIDVolumes) || size(self.softwareRAIDVolumes) == 0 || "
            "self.softwareRAIDVolumes[0].level == '1'",
            "message": SOFTWARE_FIRST_MIRROR,
            "fieldPath": ".softwareRAIDVolumes",
        },
        {
            "rule": "!has(self.softwareRAIDVolumes) || self.softwareRAIDVolumes.all(v, "
            "!has(v.physicalDisks) || size(v.physicalDisks) == 0 || size(v.physicalDisks) >= 2)",
            "message": SOFTWARE_DISKS,
            "fieldPath": ".softwareRAIDVolumes",
        },
    ]


class RAIDConfig(SpecModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": _raid_rules()})

    hardware_raid_volumes: list[HardwareRAIDVolume] | None = Field(
        default=None,
        alias="hardwareRAIDVolumes",
        max_length=VOLUMES_MAX,
        description="Volumes the RAID controller builds; an empty list removes them all.",
    )
    software_raid_volumes: list[SoftwareRAIDVolume] | None = Field(
        default=None,
        alias="softwareRAIDVolumes",
        max_length=SOFTWARE_VOLUMES_MAX,
        description="Volumes Linux md builds from the agent ramdisk (one or two, the first "
        "a mirror: the OS is written there); an empty list removes them all.",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> RAIDConfig:
        if self.hardware_raid_volumes is not None and self.software_raid_volumes is not None:
            raise ValueError(RAID_KINDS)
        volumes = self.software_raid_volumes or []
        if volumes and volumes[0].level != "1":
            raise ValueError(SOFTWARE_FIRST_MIRROR)
        if any(len(v.physical_disks) == 1 for v in volumes):
            raise ValueError(SOFTWARE_DISKS)
        return self


SETTING_NAME_FIX = (
    "spec.firmwareSettings: name each setting as the BMC does (letters, digits, '_', '.', "
    "':' and '-'; up to 128)"
)
SETTING_NAMES_RULE: dict[str, JsonValue] = {
    "rule": f"self.all(k, k.matches(r'{SETTING_NAME_PATTERN}'))",
    "message": SETTING_NAME_FIX,
}
SettingValue = Annotated[int, Field(strict=True)] | Annotated[str, Field(max_length=256)]
FirmwareSettings = dict[
    Annotated[str, Matches(SETTING_NAME_PATTERN, SETTING_NAME_FIX)], SettingValue
]
