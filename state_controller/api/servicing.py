"""Servicing: what a Host asks of its running machine's firmware and disks, and the steps
a servicing run goes through.

The spec fields say it in baremetal-operator's terms where they fit, on the Host itself
rather than in objects beside it (one per host, no shared schema object to contend for):

* ``spec.firmwareSettings`` — BIOS settings by name, as HostFirmwareSettings'
  ``spec.settings``; checked against the schema the BMC reports (``status.firmware``);
* ``spec.firmwareUpdates`` — ``[{component, url}]``, as HostFirmwareComponents'
  ``spec.updates`` (components ``bios``, ``bmc``, ``nic:<id>``);
* ``spec.raid`` — hardware RAID volumes, as BareMetalHost's ``spec.raid``
  (``hardwareRAIDVolumes``; software RAID is built in-band by a deploy ramdisk, which a
  running host does not boot, so it is not offered);
* ``spec.servicingPolicy`` — when they may be applied to a provisioned host: not at all
  (the default: at the next preparation, as baremetal-operator does without a
  HostUpdatePolicy), ``onReboot`` (the next reboot asked by annotation services the host
  instead, as a HostUpdatePolicy of ``onReboot``), or ``rolling`` (as soon as the host's
  pool has a free servicing slot).

A servicing run is a chapter of the host's book, its steps recorded like a node update's.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, JsonValue

from .base import NAME_MAX, WORD_MAX, Count, Matches, SpecModel

FIRMWARE_COMPONENT_PATTERN = r"^(bios|bmc|nic:[A-Za-z0-9_.:-]{1,64})$"
FIRMWARE_URL_PATTERN = r"^https?://\S+$"
SETTING_NAME_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"
SETTINGS_MAX = 256
UPDATES_MAX = 16
VOLUMES_MAX = 16


class ServicingPolicy(StrEnum):
    NEVER = ""  # applied at the next preparation, never to a provisioned host
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


class RAIDConfig(SpecModel):
    hardware_raid_volumes: list[HardwareRAIDVolume] | None = Field(
        default=None,
        alias="hardwareRAIDVolumes",
        max_length=VOLUMES_MAX,
        description="Volumes the RAID controller builds; an empty list removes them all.",
    )


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
