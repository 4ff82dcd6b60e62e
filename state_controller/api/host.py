"""The ``Host`` resource: one physical machine, what the operator wants of it.

The spec follows metal3's BareMetalHost closely enough that a user can move a
manifest across by renaming the kind; the status is the machine-facing
projection of the host's book.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from .base import DNS_SUBDOMAIN, SpecModel, StatusModel
from .bmc import ADDRESS_FIX, ADDRESS_PATTERN, parse_bmc_address
from .states import ErrorType, OperationalStatus, ProvisioningState

MAC_PATTERN = r"^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$"
IMAGE_URL_PATTERN = r"^(https?|file)://\S+$"


def cel(pattern: str, field: str, fix: str) -> dict[str, object]:
    """A CEL rule repeating a pattern, so the API server's error says how to fix the value."""
    return {
        "x-kubernetes-validations": [
            {"rule": f"self.matches(r'{pattern}')", "message": f"{field}: {fix}"}
        ]
    }


SECRET_NAME_FIX = (
    "name a Secret in the Host's namespace with keys username and password "
    "(lowercase letters, digits, '-' and '.')"
)
MAC_FIX = "write six hex pairs separated by colons, e.g. 52:54:00:12:34:56"
IMAGE_URL_FIX = "use an http://, https:// or file:// URL"


class BMCDetails(SpecModel):
    address: Annotated[
        str,
        Field(
            pattern=ADDRESS_PATTERN,
            max_length=2048,
            description="How to reach the management controller, e.g. ipmi://192.0.2.10:623 "
            "or redfish://bmc.example.com/redfish/v1/Systems/1.",
            json_schema_extra=cel(ADDRESS_PATTERN, "spec.bmc.address", ADDRESS_FIX),
        ),
    ]
    credentials_name: Annotated[
        str,
        Field(
            pattern=DNS_SUBDOMAIN,
            min_length=1,
            max_length=253,
            description="Name of a Secret in the Host's namespace with keys "
            "'username' and 'password'.",
            json_schema_extra=cel(DNS_SUBDOMAIN, "spec.bmc.credentialsName", SECRET_NAME_FIX),
        ),
    ]
    disable_certificate_verification: bool = False

    @field_validator("address")
    @classmethod
    def _known_bmc_type(cls, value: str) -> str:
        parse_bmc_address(value)
        return value


class Image(SpecModel):
    url: Annotated[
        str,
        Field(
            pattern=IMAGE_URL_PATTERN,
            max_length=4096,
            description="Where to fetch the image.",
            json_schema_extra=cel(IMAGE_URL_PATTERN, "spec.image.url", IMAGE_URL_FIX),
        ),
    ]
    checksum: Annotated[
        str,
        Field(
            min_length=1,
            max_length=4096,
            description="The image checksum, or a URL of a checksum file.",
        ),
    ]
    checksum_type: Literal["md5", "sha256", "sha512", "auto"] = "auto"
    disk_format: Literal["raw", "qcow2", "vdi", "vmdk", "live-iso"] | None = None


class RootDeviceHints(SpecModel):
    device_name: str | None = None
    hctl: str | None = None
    model: str | None = None
    vendor: str | None = None
    serial_number: str | None = None
    min_size_gigabytes: Annotated[int, Field(ge=0)] | None = None
    wwn: str | None = None
    rotational: bool | None = None


class HostSpec(SpecModel):
    bmc: BMCDetails | None = Field(
        default=None, description="Without a BMC the host stays unmanaged."
    )
    boot_mac_address: (
        Annotated[
            str,
            Field(
                pattern=MAC_PATTERN,
                max_length=17,
                json_schema_extra=cel(MAC_PATTERN, "spec.bootMACAddress", MAC_FIX),
            ),
        ]
        | None
    ) = Field(default=None, alias="bootMACAddress")
    online: bool = Field(default=False, description="Whether the host should be powered on.")
    image: Image | None = Field(
        default=None, description="Provision this image; removing it deprovisions the host."
    )
    externally_provisioned: bool = Field(
        default=False,
        description="The host already runs something this controller did not put there.",
    )
    root_device_hints: RootDeviceHints | None = None
    boot_mode: Literal["UEFI", "UEFISecureBoot", "legacy"] = "UEFI"
    automated_cleaning_mode: Literal["metadata", "disabled"] = "metadata"
    description: Annotated[str, Field(max_length=1024)] = ""


class CPU(StatusModel):
    arch: str = ""
    model: str = ""
    count: int = 0


class NIC(StatusModel):
    name: str = ""
    mac: str = ""
    ip: str = ""
    speed_gbps: int = 0


class Disk(StatusModel):
    name: str = ""
    size_bytes: int = 0
    rotational: bool = False


class HardwareDetails(StatusModel):
    system_vendor: dict[str, str] = Field(default_factory=dict)
    cpu: CPU = Field(default_factory=CPU)
    ram_mebibytes: int = 0
    nics: list[NIC] = Field(default_factory=list)
    storage: list[Disk] = Field(default_factory=list)
    hostname: str = ""


class ProvisionStatus(StatusModel):
    state: ProvisioningState = ProvisioningState.NONE
    id: str = Field(default="", description="The host's ID in the provisioning backend.")
    entered_at: str | None = None
    image: Image | None = None
    root_device_hints: RootDeviceHints | None = None
    boot_mode: str | None = None


class CredentialsStatus(StatusModel):
    name: str = ""
    version: str = ""


class TransitionRecord(StatusModel):
    """A transition not yet confirmed in HostState, kept so a crash loses no history."""

    seq: int = 0
    chapter: str = ""
    from_: Annotated[str, Field(alias="from")] = ""
    to: str = ""
    at: str = ""
    reason: str = ""
    message: str = ""


class HostStatus(StatusModel):
    operational_status: OperationalStatus | Literal[""] = ""
    error_type: ErrorType | Literal[""] = ""
    error_message: str = ""
    error_count: int = 0
    powered_on: bool = False
    provisioning: ProvisionStatus = Field(default_factory=ProvisionStatus)
    hardware: HardwareDetails | None = None
    good_credentials: CredentialsStatus | None = None
    last_updated: str | None = None
    recent_transitions: list[TransitionRecord] = Field(default_factory=list)
    observed_generation: int = 0


def parse_host_spec(spec: dict[str, Any]) -> HostSpec:
    """Validate a Host's spec strictly; raises pydantic.ValidationError naming each field."""
    return HostSpec.model_validate(spec)
