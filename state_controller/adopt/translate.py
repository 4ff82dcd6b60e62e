"""A BareMetalHost read as a hoststate Host: its spec, its status, and whether it may go.

Pure functions of the objects as the server returned them; nothing here reads the
clock, the cluster or Ironic.

* :func:`host_spec` carries the fields the machine lives by (BMC, boot MAC, image,
  root device hints, boot mode, online, externally provisioned, cleaning, description)
  and names those a Host cannot carry (:func:`not_carried`): user and network data
  serve only a new deploy, so a provisioned machine goes on without them;
* :func:`restored_status` is the Host status baremetal-operator's status stands for:
  state, Ironic node ID, image, hardware, power and the credentials it checked, for
  the ``hoststate.io/status`` annotation the controller restores from;
* :func:`bmh_refusal` says why a BareMetalHost cannot be taken now (mid-operation, in
  error, with work pending, used by a cluster, deleted), or "".
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from ..api.host import HardwareDetails, HostSpec, HostStatus
from ..api.objects import Obj
from ..observed.baremetalhost import PAUSED
from ..observed.baremetalhost_facts import DETACHED

AT_REST = frozenset({"available", "ready", "provisioned", "externally provisioned"})
"""The BareMetalHost states in which baremetal-operator is doing nothing to the machine."""

PAUSED_FOR_ADOPTION = "hoststate.io/adopt"
"""The value of baremetal-operator's paused annotation the handover sets."""

_SPEC_COPIED = (
    "bmc",
    "bootMACAddress",
    "online",
    "image",
    "externallyProvisioned",
    "rootDeviceHints",
    "bootMode",
    "automatedCleaningMode",
    "description",
)
# BareMetalHost spec fields a Host has no place for, and why going on without them is safe
# for a machine that is already deployed (or not yet asked to be).
_ONLY_FOR_A_NEW_DEPLOY = ("userData", "networkData", "metaData", "preprovisioningNetworkDataName")
_ONLY_ON_PREPARING = ("raid", "firmware")
_HINTS = ("deviceName", "hctl", "model", "vendor", "serialNumber", "minSizeGigabytes", "wwn",
          "rotational")  # fmt: skip
_IMAGE = {"url": "url", "checksum": "checksum", "checksumType": "checksumType",
          "format": "diskFormat"}  # fmt: skip


def name_of(bmh: Obj) -> str:
    meta = bmh["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def _spec(bmh: Obj) -> dict[str, Any]:
    return dict(bmh.get("spec") or {})


def _status(bmh: Obj) -> dict[str, Any]:
    return dict(bmh.get("status") or {})


def _image(image: dict[str, Any] | None) -> dict[str, Any] | None:
    if not image or not image.get("url"):
        return None
    return {ours: image[theirs] for theirs, ours in _IMAGE.items() if image.get(theirs)}


def host_spec(bmh: Obj) -> tuple[dict[str, Any] | None, str]:
    """The Host spec for this BareMetalHost, and "" — or None and why not (the field)."""
    spec = _spec(bmh)
    out: dict[str, Any] = {k: spec[k] for k in _SPEC_COPIED if spec.get(k) not in (None, "")}
    if "bmc" in out:
        out["bmc"] = {
            k: v
            for k, v in out["bmc"].items()
            if k in ("address", "credentialsName", "disableCertificateVerification")
        }
    image = _image(spec.get("image"))
    if image is None:
        out.pop("image", None)
    else:
        out["image"] = image
    if "rootDeviceHints" in out:
        out["rootDeviceHints"] = {k: v for k, v in out["rootDeviceHints"].items() if k in _HINTS}
    try:
        HostSpec.model_validate(out)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return None, f"its spec cannot be a Host's: spec.{where}: {first['msg']}"
    return out, ""


def not_carried(bmh: Obj) -> list[str]:
    """The spec fields set on the BareMetalHost that the Host does not carry over."""
    spec = _spec(bmh)
    dropped = [k for k in (*_ONLY_FOR_A_NEW_DEPLOY, *_ONLY_ON_PREPARING) if spec.get(k)]
    hints = spec.get("rootDeviceHints") or {}
    dropped += [f"rootDeviceHints.{k}" for k in hints if k not in _HINTS]
    return dropped


def restored_status(bmh: Obj, credentials_version: str) -> dict[str, Any]:
    """The Host status baremetal-operator's status stands for, as the controller writes it.

    ``credentials_version`` is the resourceVersion of the BMC Secret that baremetal-
    operator's ``goodCredentials`` vouch for ("" when they vouch for none): the
    controller sends the credentials to Ironic again only when the Secret changes later.
    """
    status = _status(bmh)
    prov = dict(status.get("provisioning") or {})
    out: dict[str, Any] = {
        "operationalStatus": "OK",
        "poweredOn": bool(status.get("poweredOn")),
        "provisioning": {
            "state": "available" if prov.get("state") == "ready" else str(prov.get("state")),
            "id": str(prov.get("ID") or ""),
        },
    }
    image = _image(prov.get("image"))
    if image is not None:
        out["provisioning"]["image"] = image
    if prov.get("rootDeviceHints"):
        hints = prov["rootDeviceHints"]
        out["provisioning"]["rootDeviceHints"] = {k: v for k, v in hints.items() if k in _HINTS}
    if prov.get("bootMode"):
        out["provisioning"]["bootMode"] = prov["bootMode"]
    if isinstance(status.get("hardware"), dict):
        hardware = HardwareDetails.model_validate(status["hardware"])
        out["hardware"] = hardware.model_dump(by_alias=True, exclude_none=True, mode="json")
    if credentials_version:
        name = str(((_spec(bmh).get("bmc") or {}).get("credentialsName")) or "")
        out["goodCredentials"] = {"name": name, "version": credentials_version}
    # the same checks the controller makes before it restores: what it refuses, refuse here
    HostStatus.model_validate(out)
    return out


def status_annotation(status: dict[str, Any]) -> str:
    return json.dumps(status, separators=(",", ":"), sort_keys=True)


def vouched_credentials(bmh: Obj, secret: Obj) -> bool:
    """Whether baremetal-operator checked the Secret as it is now (``goodCredentials``)."""
    good = _status(bmh).get("goodCredentials") or {}
    ref = good.get("credentials") or {}
    meta = secret["metadata"]
    return (
        ref.get("name") == meta["name"]
        and ref.get("namespace", meta.get("namespace")) == meta.get("namespace")
        and str(good.get("credentialsVersion") or "") == str(meta.get("resourceVersion"))
    )


def bmh_refusal(bmh: Obj, *, include_consumed: bool) -> str:
    """Why baremetal-operator's host cannot be taken over now, with what to do; "" if it can."""
    meta, spec, status = bmh["metadata"], _spec(bmh), _status(bmh)
    annotations = meta.get("annotations") or {}
    prov = status.get("provisioning") or {}
    state = str(prov.get("state") or "")
    if meta.get("deletionTimestamp"):
        return "the BareMetalHost is being deleted"
    paused = annotations.get(PAUSED)
    if paused is not None and paused != PAUSED_FOR_ADOPTION:
        who = f" ({paused})" if paused else ""
        return (
            f"the BareMetalHost is paused by someone else{who}: it may be moving between "
            f"clusters; run again once {PAUSED} is removed"
        )
    if DETACHED in annotations:
        return (
            f"the BareMetalHost is detached ({DETACHED}): Ironic no longer holds its node; "
            "remove the annotation, let baremetal-operator register it, then run again"
        )
    if state not in AT_REST:
        return (
            f"baremetal-operator is working on it (state {state or 'none'!r}); run again "
            "once it is available, provisioned or externally provisioned"
        )
    if status.get("operationalStatus") not in (None, "", "OK"):
        what = status.get("errorType") or status.get("operationalStatus")
        return (
            f"its operationalStatus is {status.get('operationalStatus')!r} ({what}); run again "
            "once baremetal-operator reports OK"
        )
    if not prov.get("ID"):
        return "baremetal-operator has no Ironic node for it (status.provisioning.ID is empty)"
    if spec.get("customDeploy"):
        return "it uses spec.customDeploy, which a Host cannot carry; keep it on baremetal-operator"
    wanted, deployed = _image(spec.get("image")), _image(prov.get("image"))
    if state == "provisioned" and wanted != deployed:
        return (
            "its spec.image differs from the image deployed: baremetal-operator has a "
            "deploy to do; run again once it is provisioned with that image"
        )
    if state in ("available", "ready") and wanted is not None:
        return (
            "it has an image to deploy: baremetal-operator is about to provision it; run "
            "again once it is provisioned"
        )
    online = spec.get("online")
    if online is not None and bool(online) != bool(status.get("poweredOn")):
        return (
            f"spec.online is {str(bool(online)).lower()} but the machine is powered "
            f"{'on' if status.get('poweredOn') else 'off'}: baremetal-operator has a power "
            "change to make; run again once it has"
        )
    consumer = spec.get("consumerRef") or {}
    if consumer and not include_consumed:
        who = (
            f"{consumer.get('kind', '')} {consumer.get('namespace', '')}/{consumer.get('name', '')}"
        )
        return (
            f"it is used by {who.strip()}: cluster-api-provider-metal3 would go on writing the "
            "BareMetalHost, and nothing would reach the machine; pass --include-consumed to "
            "take it anyway"
        )
    return ""
