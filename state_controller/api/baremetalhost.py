"""A metal3 BareMetalHost's spec read as a Host's: the one translation ``adopt``,
``convert`` and ``bootstrap --hosts`` share.

Every spec field of baremetal-operator v0.13.2's BareMetalHost CRD
(config/base/crds/bases/metal3.io_baremetalhosts.yaml) has one answer here
(:data:`FIELDS`, which a test holds against that CRD): carried under its own name (a
Host was named after them; only the image's ``format`` becomes ``diskFormat``; the
Secret its ``ociAuthSecretName`` names is labelled as a data Secret), or
refused with what to write instead (:data:`REFUSED`). A field the CRD does not have is
no BareMetalHost's (:func:`unknown_fields`): the API server drops it, and so does a
conversion, saying so.

Every field set that a Host does not carry is named by :func:`not_carried`: a handover of
a deployed machine may go on without what serves only a new deploy or preparation
(``with_raid=False``); a conversion refuses it.
"""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import ValidationError

from .bmc import as_baremetal_operator_reads
from .host import HostSpec
from .objects import Obj

API_VERSION = "metal3.io/v1alpha1"
KIND = "BareMetalHost"
BMO_VERSION = "v0.13.2"  # the baremetal-operator whose CRD this module follows
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
          "format": "diskFormat", "ociAuthSecretName": "ociAuthSecretName"}  # fmt: skip

DATA = ("userData", "networkData", "metaData")
"""The deployed OS's configuration: Secret references, carried with the same names."""

PREPROVISIONING_NETWORK_DATA = "preprovisioningNetworkDataName"
"""The deploy ramdisk's network configuration: a Secret's name, carried as it is."""

OCI_AUTH = "ociAuthSecretName"
"""The image's registry credentials: a Secret's name (``spec.image``), labelled as data."""

DEPLOY_DATA = (*DATA, PREPROVISIONING_NETWORK_DATA)
"""The Secrets of a deploy's data: carried (``with_data``), their Secrets labelled for it."""

RAID = "raid"
"""RAID volumes, the same object on a Host: carried by a conversion (``with_raid``)."""

HARDWARE_PROFILE = "hardwareProfile"
RETIRED_PROFILES = ("", "unknown", "empty")
"""Values of baremetal-operator's deprecated ``hardwareProfile`` that ask for nothing:
dropped quietly. Any other named a profile of built-in hardware facts, which
``architecture`` and ``rootDeviceHints`` replace; it is refused, naming them."""

REFUSED: dict[str, str] = {
    "firmware": "a Host names the BMC's own BIOS settings in spec.firmwareSettings (e.g. "
    "ProcVirtualization: Enabled); write them there and remove spec.firmware",
    HARDWARE_PROFILE: "deprecated in baremetal-operator; give spec.architecture and "
    "spec.rootDeviceHints instead and remove spec.hardwareProfile",
    "taints": "a Host has no Machine to taint; set the taints on its Node and remove spec.taints",
    "rootDeviceHints.wwnWithExtension": "a Host's root device hints do not take it; give "
    "the disk's spec.rootDeviceHints.wwn instead",
    "rootDeviceHints.wwnVendorExtension": "a Host's root device hints do not take it; give "
    "the disk's spec.rootDeviceHints.wwn instead",
}
"""The BareMetalHost fields (and subfields) a Host cannot carry, with what to do."""

FIELDS = (*CARRIED, *DEPLOY_DATA, RAID, *(f for f in REFUSED if "." not in f))
"""Every spec field of baremetal-operator v0.13.2's BareMetalHost, each answered above."""

SUBFIELDS = {
    "bmc": _BMC,
    "rootDeviceHints": (*HINTS, "wwnWithExtension", "wwnVendorExtension"),
    "image": tuple(_IMAGE),
}


def image_of(image: dict[str, Any] | None) -> dict[str, Any] | None:
    """A BareMetalHost's image (spec or status) in a Host's words; None without a URL."""
    if not image or not image.get("url"):
        return None
    return {ours: image[theirs] for theirs, ours in _IMAGE.items() if image.get(theirs)}


def _carried(with_data: bool, with_raid: bool) -> tuple[str, ...]:
    return (*CARRIED, *(DEPLOY_DATA if with_data else ()), *((RAID,) if with_raid else ()))


def host_spec(
    bmh: Obj, *, with_data: bool = True, with_raid: bool = False
) -> tuple[dict[str, Any] | None, str]:
    """The Host spec for this BareMetalHost and "", or None and why not (the field).
    ``with_data``: carry the user, network and meta data references too; ``with_raid``:
    carry ``spec.raid`` (a Host applies it to its provisioned machine by servicing, as
    ``spec.servicingPolicy`` allows, not at preparation as baremetal-operator does)."""
    spec = dict(bmh.get("spec") or {})
    kept = _carried(with_data, with_raid)
    out: dict[str, Any] = {k: spec[k] for k in kept if spec.get(k) not in (None, "")}
    if isinstance(out.get("bmc"), dict):
        out["bmc"] = {k: v for k, v in out["bmc"].items() if k in _BMC}
        if isinstance(out["bmc"].get("address"), str):  # a bare host:port is IPMI there
            out["bmc"]["address"] = as_baremetal_operator_reads(out["bmc"]["address"])
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
        why = str(first["msg"]).removeprefix("Value error, ")
        if why.startswith(f"spec.{where}"):  # the rule's own sentence names the field
            return None, f"its spec cannot be a Host's: {why}"
        return None, f"its spec cannot be a Host's: spec.{where}: {why}"
    return out, ""


def not_carried(bmh: Obj, *, with_data: bool = True, with_raid: bool = False) -> list[str]:
    """The BareMetalHost spec fields set that a Host does not carry (those of
    :func:`unknown_fields` aside)."""
    spec = dict(bmh.get("spec") or {})
    kept = _carried(with_data, with_raid)
    set_ = {k: v for k, v in spec.items() if k in FIELDS and v not in (None, "", {}, [])}
    dropped = [k for k in set_ if k not in kept]
    if spec.get(HARDWARE_PROFILE) in RETIRED_PROFILES:
        dropped = [k for k in dropped if k != HARDWARE_PROFILE]
    for field, known in SUBFIELDS.items():
        inner = spec.get(field)
        if isinstance(inner, dict):
            dropped += [
                f"{field}.{k}" for k, v in inner.items() if f"{field}.{k}" in REFUSED and v
            ] + [f"{field}.{k}" for k in inner if k not in known]
    return dropped


def refusal(field: str) -> str:
    """What to do about a field :func:`not_carried` named: one sentence."""
    return REFUSED.get(field, "a Host has no such field; remove it")


def unknown_fields(bmh: Obj) -> list[str]:
    """The spec fields that are no BareMetalHost's at all: the API server drops them (or
    ``kubectl apply`` refuses them), so does a conversion. Each with a likely meant field."""
    spec = bmh.get("spec")
    if not isinstance(spec, dict):
        return []
    out = []
    for name in spec:
        if name in FIELDS:
            continue
        near = difflib.get_close_matches(str(name), FIELDS, n=1)
        out.append(f"spec.{name}" + (f" (did you mean spec.{near[0]}?)" if near else ""))
    return out
