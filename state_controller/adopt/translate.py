"""A BareMetalHost read as a hoststate Host: its spec, its status, and whether it may go.

Pure functions of the objects as the server returned them; nothing here reads the
clock, the cluster or Ironic.

* the spec is :func:`~..api.baremetalhost.host_spec`'s, the deployed OS's data Secrets
  included; of the fields a Host does not carry (:func:`not_carried`), RAID and
  firmware settings serve only the next preparation, so a machine at rest goes on
  without them (:func:`dropped_on_handover`);
* :func:`restored_status` is the Host status baremetal-operator's status stands for:
  state, Ironic node ID, image or custom deploy, hardware, power and the credentials it
  checked, for
  the ``hoststate.io/status`` annotation the controller restores from;
* :func:`bmh_refusal` says why a BareMetalHost cannot be taken now (mid-operation, in
  error, with work pending, used by a cluster, deleted), or "".
"""

from __future__ import annotations

import json
from typing import Any

from ..api.baremetalhost import (
    DATA,
    DETACHED,
    HINTS,
    OCI_AUTH,
    PAUSED,
    PREPROVISIONING_NETWORK_DATA,
    image_of,
    not_carried,
)
from ..api.host_status import HardwareDetails, HostStatus
from ..api.objects import Obj

AT_REST = frozenset({"available", "ready", "provisioned", "externally provisioned"})
"""The BareMetalHost states in which baremetal-operator is doing nothing to the machine."""

PAUSED_FOR_ADOPTION = "hoststate.io/adopt"
"""The value of baremetal-operator's paused annotation the handover sets."""


def _spec(bmh: Obj) -> dict[str, Any]:
    return dict(bmh.get("spec") or {})


def _status(bmh: Obj) -> dict[str, Any]:
    return dict(bmh.get("status") or {})


ONLY_FOR_A_LATER_PREPARATION = ("raid", "firmware")
"""BareMetalHost fields that serve only the next preparation: a machine at rest goes on
without them."""


def dropped_on_handover(bmh: Obj) -> tuple[list[str], list[str]]:
    """The fields a handover leaves behind: those that serve only a new deploy or
    preparation, and the others (both shown on the dry run's line)."""
    dropped = not_carried(bmh)
    later = [f for f in dropped if f in ONLY_FOR_A_LATER_PREPARATION]
    return later, [f for f in dropped if f not in later]


def data_secret_names(spec: dict[str, Any]) -> list[str]:
    """The Secrets a (Host) spec names for its deploy's data, in field order: the deployed
    OS's, the ramdisk's network, the image's registry credentials."""
    names = [str(spec[f]["name"]) for f in DATA if isinstance(spec.get(f), dict)]
    if spec.get(PREPROVISIONING_NETWORK_DATA):
        names.append(str(spec[PREPROVISIONING_NETWORK_DATA]))
    image = spec.get("image")
    if isinstance(image, dict) and image.get(OCI_AUTH):
        names.append(str(image[OCI_AUTH]))
    return list(dict.fromkeys(names))


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
    image = image_of(prov.get("image"))
    if image is not None:
        image.pop(OCI_AUTH, None)  # the spec's to say; the status records what was deployed
        out["provisioning"]["image"] = image
    custom = prov.get("customDeploy")
    if isinstance(custom, dict) and custom.get("method"):
        out["provisioning"]["customDeploy"] = {"method": str(custom["method"])}
    if prov.get("rootDeviceHints"):
        hints = prov["rootDeviceHints"]
        out["provisioning"]["rootDeviceHints"] = {k: v for k, v in hints.items() if k in HINTS}
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


def _method(spec_or_provisioning: dict[str, Any]) -> str:
    custom = spec_or_provisioning.get("customDeploy")
    return str(custom.get("method") or "") if isinstance(custom, dict) else ""


def _deployable(image: dict[str, Any] | None) -> dict[str, Any] | None:
    """What of an image tells one deploy from another: not the registry's credentials."""
    out = image_of(image)
    if out is not None:
        out.pop(OCI_AUTH, None)
    return out


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
    wanted, deployed = _deployable(spec.get("image")), _deployable(prov.get("image"))
    if state == "provisioned" and _method(spec) != _method(prov):
        return (
            "its spec.customDeploy differs from the one deployed: baremetal-operator has a "
            "deploy to do; run again once it is provisioned with it"
        )
    if state == "provisioned" and wanted != deployed:
        return (
            "its spec.image differs from the image deployed: baremetal-operator has a "
            "deploy to do; run again once it is provisioned with that image"
        )
    if state in ("available", "ready") and (wanted is not None or _method(spec)):
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
