"""A metal3 BareMetalHost's spec read as a Host's: the one translation ``adopt``,
``convert`` and ``bootstrap --hosts`` share.

The fields the machine lives by carry over with baremetal-operator's names (a Host was
named after them): BMC, boot MAC, image (``format`` becomes ``diskFormat``), root
device hints, boot mode, online, externally provisioned, cleaning mode, description,
consumer, custom deploy, inspection mode, power-off switch, architecture, and the user,
network, meta and preprovisioning network data Secrets.
Every other field set is named by :func:`not_carried`: a handover of a deployed
machine may go on without what serves only a new deploy; a conversion refuses it.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from .host import HostSpec
from .objects import Obj

API_VERSION = "metal3.io/v1alpha1"
KIND = "BareMetalHost"
PAUSED = "baremetalhost.metal3.io/paused"  # baremetal-operator leaves the host alone
DETACHED = "baremetalhost.metal3.io/detached"  # BMO stops managing the host, keeps it as is

CARRIED = (
    "bmc",
    "bootMACAddress",
    "online",
    "image",
    "externallyProvisioned",
    "rootDeviceHints",
    "bootMode",
    "automatedCleaningMode",
    "description",
    "consumerRef",
    "customDeploy",
    "inspectionMode",
    "disablePowerOff",
    "architecture",
)
HINTS = ("deviceName", "hctl", "model", "vendor", "serialNumber", "minSizeGigabytes", "wwn",
         "rotational")  # fmt: skip
_BMC = ("address", "credentialsName", "disableCertificateVerification")
_IMAGE = {"url": "url", "checksum": "checksum", "checksumType": "checksumType",
          "format": "diskFormat"}  # fmt: skip

DATA = ("userData", "networkData", "metaData")
"""The deployed OS's configuration: Secret references, carried with the same names."""

PREPROVISIONING_NETWORK_DATA = "preprovisioningNetworkDataName"
"""The deploy ramdisk's network configuration: a Secret's name, carried as it is."""

DEPLOY_DATA = (*DATA, PREPROVISIONING_NETWORK_DATA)
"""The Secrets of a deploy's data: carried (``with_data``), their Secrets labelled for it."""

HARDWARE_PROFILE = "hardwareProfile"
RETIRED_PROFILES = ("", "unknown", "empty")
"""Values of baremetal-operator's deprecated ``hardwareProfile`` that ask for nothing:
dropped quietly. Any other named a profile of built-in hardware facts, which
``architecture`` and ``rootDeviceHints`` replace; it is refused, naming them."""


def image_of(image: dict[str, Any] | None) -> dict[str, Any] | None:
    """A BareMetalHost's image (spec or status) in a Host's words; None without a URL."""
    if not image or not image.get("url"):
        return None
    return {ours: image[theirs] for theirs, ours in _IMAGE.items() if image.get(theirs)}


def _carried(with_data: bool) -> tuple[str, ...]:
    return (*CARRIED, *DEPLOY_DATA) if with_data else CARRIED


def host_spec(bmh: Obj, *, with_data: bool = True) -> tuple[dict[str, Any] | None, str]:
    """The Host spec for this BareMetalHost and "", or None and why not (the field).
    ``with_data``: carry the user, network and meta data references too."""
    spec = dict(bmh.get("spec") or {})
    kept = _carried(with_data)
    out: dict[str, Any] = {k: spec[k] for k in kept if spec.get(k) not in (None, "")}
    if isinstance(out.get("bmc"), dict):
        out["bmc"] = {k: v for k, v in out["bmc"].items() if k in _BMC}
    image = image_of(spec.get("image"))
    if image is None:
        out.pop("image", None)
    else:
        out["image"] = image
    if isinstance(out.get("rootDeviceHints"), dict):
        out["rootDeviceHints"] = {k: v for k, v in out["rootDeviceHints"].items() if k in HINTS}
    try:
        HostSpec.model_validate(out)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return None, f"its spec cannot be a Host's: spec.{where}: {first['msg']}"
    return out, ""


def not_carried(bmh: Obj, *, with_data: bool = True) -> list[str]:
    """The spec fields set on the BareMetalHost that a Host does not carry."""
    spec = dict(bmh.get("spec") or {})
    kept = _carried(with_data)
    dropped = [k for k, v in spec.items() if k not in kept and v not in (None, "", {}, [])]
    if spec.get(HARDWARE_PROFILE) in RETIRED_PROFILES:
        dropped = [k for k in dropped if k != HARDWARE_PROFILE]
    for field, kept in (("bmc", _BMC), ("rootDeviceHints", HINTS), ("image", tuple(_IMAGE))):
        inner = spec.get(field)
        if isinstance(inner, dict):
            dropped += [f"{field}.{k}" for k, v in inner.items() if k not in kept and v]
    return dropped
