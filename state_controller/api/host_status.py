"""``Host.status``: the machine-facing projection of a host's book.

Apart from :mod:`.host` (the spec) so each reads on its own: what users write, with
its rules and their messages, and what the controller writes, parsed leniently.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .base import (
    CONDITIONS_MAX_ITEMS,
    HISTORY_MAX_ITEMS,
    MESSAGE_MAX,
    NAME_MAX,
    REASON_MAX,
    WORD_MAX,
    Condition,
    Count,
    StatusModel,
    Timestamp,
)
from .disks import RootDeviceHints
from .states import ErrorType, OperationalStatus, ProvisioningState

_VENDOR_VALUE_MAX = 1024


class CPU(StatusModel):
    arch: Annotated[str, Field(max_length=WORD_MAX)] = ""
    model: Annotated[str, Field(max_length=_VENDOR_VALUE_MAX)] = ""
    count: Count = 0


class NIC(StatusModel):
    name: Annotated[str, Field(max_length=NAME_MAX)] = ""
    mac: Annotated[str, Field(max_length=128)] = ""  # InfiniBand addresses have 20 bytes
    ip: Annotated[str, Field(max_length=128)] = ""
    speed_gbps: Count = 0


class Disk(StatusModel):
    name: Annotated[str, Field(max_length=_VENDOR_VALUE_MAX)] = ""
    size_bytes: Count = 0
    rotational: bool = False


NICS_MAX_ITEMS = 256
DISKS_MAX_ITEMS = 1024


class BIOS(StatusModel):
    """The BIOS an inspection found, as metal3's ``HardwareDetails.firmware.bios`` says it
    (baremetal-operator fills it from the Ironic inventory's ``system_vendor.firmware``)."""

    date: Annotated[str, Field(max_length=_VENDOR_VALUE_MAX)] = ""
    vendor: Annotated[str, Field(max_length=_VENDOR_VALUE_MAX)] = ""
    version: Annotated[str, Field(max_length=_VENDOR_VALUE_MAX)] = ""


class Firmware(StatusModel):
    bios: BIOS = Field(default_factory=BIOS)


class HardwareDetails(StatusModel):
    """What inspection found. Closed like every other schema: the controller writes
    only these fields, from a backend's inventory or the hardware-details
    annotation. Only ``systemVendor`` is a map, because vendors report different
    fields (manufacturer, productName, serialNumber, …); its values are strings."""

    system_vendor: dict[str, Annotated[str, Field(max_length=_VENDOR_VALUE_MAX)]] = Field(
        default_factory=dict
    )
    cpu: CPU = Field(default_factory=CPU)
    ram_mebibytes: Count = 0
    nics: list[NIC] = Field(
        default_factory=list,
        max_length=NICS_MAX_ITEMS,
        description=f"Network interfaces (at most {NICS_MAX_ITEMS}).",
    )
    storage: list[Disk] = Field(
        default_factory=list,
        max_length=DISKS_MAX_ITEMS,
        description=f"Disks (at most {DISKS_MAX_ITEMS}).",
    )
    hostname: Annotated[str, Field(max_length=NAME_MAX)] = ""
    firmware: Firmware = Field(default_factory=Firmware)


class ProvisionedImage(StatusModel):
    """The image the host was provisioned with, as the spec said then.

    Its own model, without the spec's rules: the controller records what was
    accepted, and a rule on the record could only refuse the controller's own write.
    """

    url: Annotated[str, Field(max_length=4096)]
    checksum: Annotated[str, Field(max_length=4096)] = ""  # none for a live ISO, an OCI image
    checksum_type: Literal["md5", "sha256", "sha512", "auto"] | None = None
    disk_format: Literal["raw", "qcow2", "vdi", "vmdk", "live-iso"] | None = None


class ProvisionedCustomDeploy(StatusModel):
    """The custom deploy step the host was provisioned with, as the spec said then."""

    method: Annotated[str, Field(max_length=WORD_MAX)]


STATE_DESCRIPTION = (
    "Provisioning state. The values, spaces included ('externally provisioned', "
    "'powering off before delete'), are baremetal-operator's on purpose: people who know "
    "that operator read them, and their dashboards and alerts match them, unchanged."
)
ERROR_TYPE_DESCRIPTION = (
    "Type of the last error; '' when there is none. The values, spaces included "
    "('registration error', …), are baremetal-operator's on purpose, as for the states."
)


class ProvisionStatus(StatusModel):
    state: ProvisioningState = Field(default=ProvisioningState.NONE, description=STATE_DESCRIPTION)
    id: Annotated[str, Field(max_length=NAME_MAX)] = Field(
        default="", description="The host's ID in the provisioning backend."
    )
    entered_at: Timestamp | None = None
    image: ProvisionedImage | None = None
    custom_deploy: ProvisionedCustomDeploy | None = None
    root_device_hints: RootDeviceHints | None = None
    boot_mode: Annotated[str, Field(max_length=WORD_MAX)] | None = None
    data_digest: Annotated[str, Field(max_length=64)] | None = Field(
        default=None,
        description="sha256 of the user, network and meta data the host was deployed with "
        "('' for none): tells a later change apart after a restart; reveals nothing of them.",
    )
    serviced_digest: Annotated[str, Field(max_length=64)] | None = Field(
        default=None,
        description="sha256 of the firmware settings, firmware images and RAID volumes the "
        "last servicing applied: what is applied already is never applied again.",
    )
    backend_history_mark: Annotated[str, Field(max_length=NAME_MAX)] | None = Field(
        default=None,
        description="The last entry of the backend's own history of the machine (Ironic's "
        "node history: its time and uuid) taken into the host's history: each entry is "
        "taken once, across restarts too.",
    )


class CredentialsStatus(StatusModel):
    name: Annotated[str, Field(max_length=NAME_MAX)] = ""
    version: Annotated[str, Field(max_length=WORD_MAX)] = ""


class TransitionRecord(StatusModel):
    """A transition not yet confirmed in HostState, kept so a crash loses no history."""

    seq: Count = 0
    chapter: Annotated[str, Field(max_length=WORD_MAX)] = ""
    from_: Annotated[str, Field(alias="from", max_length=WORD_MAX)] = ""
    to: Annotated[str, Field(max_length=WORD_MAX)] = ""
    at: Timestamp = ""
    reason: Annotated[str, Field(max_length=REASON_MAX)] = ""
    message: Annotated[str, Field(max_length=MESSAGE_MAX)] = ""


class HostStatus(StatusModel):
    operational_status: OperationalStatus | Literal[""] = ""
    error_type: ErrorType | Literal[""] = Field(default="", description=ERROR_TYPE_DESCRIPTION)
    error_message: Annotated[str, Field(max_length=MESSAGE_MAX)] = Field(
        default="", description=f"What went wrong, cut to {MESSAGE_MAX} characters."
    )
    error_count: Count = 0
    powered_on: bool = False
    provisioning: ProvisionStatus = Field(default_factory=ProvisionStatus)
    hardware: HardwareDetails | None = None
    good_credentials: CredentialsStatus | None = None
    last_updated: Timestamp | None = None
    recent_transitions: list[TransitionRecord] = Field(
        default_factory=list,
        max_length=HISTORY_MAX_ITEMS,
        description="Transitions this status was written with that the HostState's history "
        "did not hold yet (it may by now: the next write keeps only those it still lacks); "
        f"never more than that history holds (HostState.status.history, at most "
        f"{HISTORY_MAX_ITEMS}).",
    )
    observed_generation: Count = 0
    conditions: list[Condition] = Field(
        default_factory=list,
        max_length=CONDITIONS_MAX_ITEMS,
        description="Summaries for kubectl wait and scripts, with baremetal-operator's names "
        "(Manageable, AvailableForProvisioning, Provisioned, Ready, Progressing) and "
        "BMCAccessible; each message cut to "
        f"{MESSAGE_MAX} characters. The detailed ones are in the HostState.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
