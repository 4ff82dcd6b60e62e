"""The ``Host`` resource: one physical machine, what the operator wants of it.

The spec follows metal3's BareMetalHost closely enough that a user can move a
manifest across by renaming the kind; the status (:mod:`.host_status`) is the
machine-facing projection of the host's book.

One module: the spec is one model whose every field carries the description the
CRD's schema and ``kubectl explain`` show; the status models are in :mod:`.host_status`,
the image's in :mod:`.images` (its names are also importable from here) and the servicing
fields' in :mod:`.servicing`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    JsonValue,
    field_validator,
    model_validator,
)

from .base import (
    DNS_SUBDOMAIN,
    NAME_MAX,
    WORD_MAX,
    Matches,
    SpecModel,
)
from .bmc import ADDRESS_FIX, ADDRESS_PATTERN, parse_bmc_address
from .disks import RootDeviceHints
from .images import CHECKSUM_FIX as CHECKSUM_FIX
from .images import CHECKSUM_MESSAGE as CHECKSUM_MESSAGE
from .images import CHECKSUM_REQUIRED as CHECKSUM_REQUIRED
from .images import CHECKSUM_URL_PATTERN as CHECKSUM_URL_PATTERN
from .images import IMAGE_URL_FIX as IMAGE_URL_FIX
from .images import IMAGE_URL_PATTERN as IMAGE_URL_PATTERN
from .images import Image
from .images import checksum_fits as checksum_fits
from .images import unfetchable_checksum as unfetchable_checksum
from .servicing import (
    SETTING_NAMES_RULE,
    SETTINGS_MAX,
    UPDATES_MAX,
    FirmwareSettings,
    FirmwareUpdate,
    RAIDConfig,
    ServicingPolicy,
)

MAC_PATTERN = r"^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$"

SECRET_NAME_FIX = (
    "name a Secret in the Host's namespace with keys username and password "
    "(lowercase letters, digits, '-' and '.')"
)
ARCHITECTURE_FIX = "write the CPU architecture as the kernel names it, e.g. x86_64 or aarch64"
MAC_FIX = "write six hex pairs separated by colons, e.g. 52:54:00:12:34:56"


class BMCDetails(SpecModel):
    address: Annotated[
        str,
        Field(
            max_length=2048,
            description="How to reach the management controller, e.g. ipmi://192.0.2.10:623 "
            "or redfish://bmc.example.com/redfish/v1/Systems/1.",
        ),
        Matches(ADDRESS_PATTERN, f"spec.bmc.address: {ADDRESS_FIX}"),
    ]
    credentials_name: Annotated[
        str,
        Field(
            max_length=NAME_MAX,
            description="Name of a Secret in the Host's namespace with keys "
            "'username' and 'password'.",
        ),
        Matches(DNS_SUBDOMAIN, f"spec.bmc.credentialsName: {SECRET_NAME_FIX}"),
    ]
    disable_certificate_verification: bool = False

    @field_validator("address")
    @classmethod
    def _known_bmc_type(cls, value: str) -> str:
        parse_bmc_address(value)
        return value


DATA_SECRET_NAME_FIX = (
    "name a Secret in the Host's namespace labelled hoststate.io/host-data=true "
    "(lowercase letters, digits, '-' and '.')"
)


def _data_secret_name(field_name: str) -> Any:
    return Annotated[
        str,
        Field(max_length=NAME_MAX, description="Name of the Secret."),
        Matches(DNS_SUBDOMAIN, f"spec.{field_name}.name: {DATA_SECRET_NAME_FIX}"),
    ]


class SecretReference(SpecModel):
    """A Secret that holds data for the deployed OS, as baremetal-operator's
    ``SecretReference``. ``namespace`` is accepted for manifests written for
    baremetal-operator, but it must be the Host's own (or empty): a Host never reads
    another namespace's Secret; the controller refuses any other, naming the field.
    One subclass per field, so that each rule's message names its own field."""

    name: str
    namespace: Annotated[
        str,
        Field(
            max_length=63,
            description="The Host's namespace, or empty; any other is refused.",
        ),
    ] = ""


class UserDataSecret(SecretReference):
    name: _data_secret_name("userData")  # type: ignore[valid-type]


class NetworkDataSecret(SecretReference):
    name: _data_secret_name("networkData")  # type: ignore[valid-type]


class MetaDataSecret(SecretReference):
    name: _data_secret_name("metaData")  # type: ignore[valid-type]


class ConsumerReference(SpecModel):
    """Who uses the host, as baremetal-operator's ``consumerRef`` (a Kubernetes object
    reference; cluster-api-provider-metal3 writes its Metal3Machine here). Set, the host
    is in use: it is shown in the HostState and ``kubectl get hosts``; the controller
    neither reads nor changes the object it names."""

    api_version: Annotated[str, Field(max_length=NAME_MAX)] = ""
    kind: Annotated[str, Field(max_length=WORD_MAX)] = ""
    name: Annotated[str, Field(max_length=NAME_MAX)] = ""
    namespace: Annotated[str, Field(max_length=63)] = ""
    uid: Annotated[str, Field(max_length=WORD_MAX)] = ""
    resource_version: Annotated[str, Field(max_length=WORD_MAX)] = ""
    field_path: Annotated[str, Field(max_length=NAME_MAX)] = ""

    def summary(self) -> str:
        """``Kind namespace/name``, as the HostState's consumer says it."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}".strip()


CUSTOM_DEPLOY_FIX = (
    "spec.customDeploy.method: name the deploy step of your deploy ramdisk "
    "(letters, digits and '_', starting with a letter)"
)


class CustomDeploy(SpecModel):
    """A deploy step of a site-specific deploy ramdisk run instead of writing an image,
    as baremetal-operator's ``customDeploy``."""

    method: Annotated[
        str,
        Field(max_length=WORD_MAX, description="The deploy step to run, e.g. install_coreos."),
        Matches(r"^[A-Za-z][A-Za-z0-9_]*$", CUSTOM_DEPLOY_FIX),
    ]


def _power_off_rule() -> dict[str, JsonValue]:
    """The CEL twin of :meth:`HostSpec._power_off_allowed`."""
    return {
        "rule": "!(has(self.disablePowerOff) && self.disablePowerOff) || "
        "(has(self.online) && self.online)",
        "message": POWER_OFF_DISABLED,
        "fieldPath": ".online",
    }


POWER_OFF_DISABLED = (
    "spec.online: cannot be false while spec.disablePowerOff is true (the host may never "
    "be powered off); set spec.online: true, or spec.disablePowerOff: false"
)


class HostSpec(SpecModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [_power_off_rule()]})

    bmc: BMCDetails | None = Field(
        default=None, description="Without a BMC the host stays unmanaged."
    )
    boot_mac_address: (
        Annotated[
            str,
            Field(max_length=17),
            Matches(MAC_PATTERN, f"spec.bootMACAddress: {MAC_FIX}"),
        ]
        | None
    ) = Field(default=None, alias="bootMACAddress")
    online: bool = Field(
        default=False,
        description="Whether the host should be powered on. A boolean, as baremetal-operator's "
        "BareMetalHost has it, so that its manifests and habits carry over unchanged.",
    )
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
    user_data: UserDataSecret | None = Field(
        default=None,
        description="A Secret whose key 'userData' (or 'value') is the user data of the "
        "deployed OS (cloud-init, Ignition), given to it at deploy in the config drive. "
        "A change takes effect on the next deploy.",
    )
    network_data: NetworkDataSecret | None = Field(
        default=None,
        description="A Secret whose key 'networkData' (or 'value') is the deployed OS's "
        "network configuration (OpenStack network_data, YAML or JSON), in the config drive.",
    )
    meta_data: MetaDataSecret | None = Field(
        default=None,
        description="A Secret whose key 'metaData' (or 'value') is meta data for the "
        "deployed OS (a YAML or JSON object), in the config drive. Without it the drive "
        "holds default meta data: the host's name, namespace and backend id.",
    )
    preprovisioning_network_data_name: (
        Annotated[
            str,
            Field(max_length=NAME_MAX),
            Matches(DNS_SUBDOMAIN, f"spec.preprovisioningNetworkDataName: {DATA_SECRET_NAME_FIX}"),
        ]
        | None
    ) = Field(
        default=None,
        description="A Secret in the Host's namespace whose key 'networkData' (or 'value') "
        "is the network configuration of the deploy ramdisk (given to the backend at "
        "registration), and of the deployed OS unless spec.networkData is set.",
    )
    consumer_ref: ConsumerReference | None = Field(
        default=None,
        description="Who uses the host (e.g. a Metal3Machine); set, the host is in use.",
    )
    custom_deploy: CustomDeploy | None = Field(
        default=None,
        description="Run this deploy step of a site-specific deploy ramdisk instead of writing "
        "an image; setting it provisions the host, as spec.image does.",
    )
    inspection_mode: Literal["agent", "disabled"] = Field(
        default="agent",
        description="agent: inspect the hardware after registration (with the backend's "
        "inspection); disabled: skip it (hardware details may then come from the "
        "hoststate.io/hardware-details annotation).",
    )
    disable_power_off: bool = Field(
        default=False,
        description="Never power the host off: a reboot replaces power off and on, and "
        "deletion skips its power-off. spec.online must then be true.",
    )
    architecture: (
        Annotated[
            str,
            Field(max_length=WORD_MAX),
            Matches(r"^[a-z0-9_]+$", f"spec.architecture: {ARCHITECTURE_FIX}"),
        ]
        | None
    ) = Field(
        default=None,
        description="CPU architecture, e.g. x86_64 or aarch64: given to the backend at "
        "registration; else inspection finds it.",
    )
    firmware_settings: FirmwareSettings | None = Field(
        default=None,
        max_length=SETTINGS_MAX,
        json_schema_extra={"x-kubernetes-validations": [SETTING_NAMES_RULE]},
        description="BIOS settings by name (as HostFirmwareSettings' spec.settings), checked "
        "against the schema the BMC reports (the HostState's status.firmware); applied "
        "to a provisioned host as spec.servicingPolicy allows.",
    )
    firmware_updates: list[FirmwareUpdate] | None = Field(
        default=None,
        max_length=UPDATES_MAX,
        description="Firmware images to flash, in order (as HostFirmwareComponents' "
        "spec.updates); applied as spec.servicingPolicy allows.",
    )
    raid: RAIDConfig | None = Field(
        default=None,
        description="RAID volumes, hardware or software (as BareMetalHost's spec.raid); "
        "applied as spec.servicingPolicy allows.",
    )
    servicing_policy: ServicingPolicy = Field(
        default=ServicingPolicy.NEVER,
        description="When firmware settings, updates and RAID may be applied to a "
        "provisioned host: unset, never (nor at preparation, where baremetal-operator "
        "applies them); onReboot, at the next "
        "reboot asked by annotation; rolling, as soon as its pool has a free servicing "
        "slot (its Node cordoned and drained first).",
    )

    @model_validator(mode="after")
    def _power_off_allowed(self) -> HostSpec:
        if self.disable_power_off and not self.online:
            raise ValueError(POWER_OFF_DISABLED)
        return self

    @property
    def deploys(self) -> bool:
        """Whether the spec asks for a deploy: an image, or a custom deploy step."""
        return self.image is not None or self.custom_deploy is not None
