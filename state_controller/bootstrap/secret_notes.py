"""What a hosts file leaves for its user to do about Secrets, one line each, with the
command that does it.

The controller reads only Secrets labelled for their use (:mod:`..api.annotations`) and
only in a Host's own namespace, and a BMC refuses empty credentials: a file that names a
Secret it does not hold, a Secret of another namespace, or holds one with an empty
username or password, would be taken and fail later, on the machine. ``convert`` and
``bootstrap --hosts`` say so on stderr instead, when they read the file.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from ..api import annotations as ann
from ..api import baremetalhost as bmh
from ..api.objects import Obj

Key = tuple[str, str]  # (namespace, name)


def data_references(spec: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(field, namespace or "", name) of each data Secret a Host or BareMetalHost spec names."""
    out = []
    for field in bmh.DATA:
        ref = spec.get(field)
        if isinstance(ref, dict) and ref.get("name"):
            out.append((field, str(ref.get("namespace") or ""), str(ref["name"])))
    ramdisk = spec.get(bmh.PREPROVISIONING_NETWORK_DATA)
    if isinstance(ramdisk, str) and ramdisk:
        out.append((bmh.PREPROVISIONING_NETWORK_DATA, "", ramdisk))
    image = spec.get("image")
    if isinstance(image, dict) and image.get(bmh.OCI_AUTH):
        out.append((f"image.{bmh.OCI_AUTH}", "", str(image[bmh.OCI_AUTH])))
    return out


Copies = dict[tuple[str, str, str], list[str]]
"""(other namespace, name, the Host's namespace) -> the fields that name that Secret."""


def in_own_namespace(spec: dict[str, Any], namespace: str, what: str, copies: Copies) -> None:
    """Point each data reference of ``spec`` (a Host's, changed in place) at a Secret of
    the Host's own namespace, the only one it reads; one that named another namespace is
    added to ``copies``, for :func:`copy_notes`."""
    for field, other, name in data_references(spec):
        if field not in bmh.DATA:
            continue  # a bare name: always the Host's namespace
        spec[field] = {"name": name}
        if other not in ("", namespace):
            copies.setdefault((other, name, namespace), []).append(f"spec.{field} of {what}")


def copy_notes(copies: Copies) -> list[str]:
    """A note for each Secret of another namespace a Host named, with the command that
    copies it into the Host's namespace, labelled for the controller to read."""
    label = json.dumps({ann.HOST_DATA: "true"})
    notes = []
    for (other, name, namespace), users in copies.items():
        notes.append(
            f"Secret {other}/{name} ({', '.join(users)}) is in another namespace and a Host "
            f"reads only its own: {'it names' if len(users) == 1 else 'they name'} "
            f"{namespace}/{name} instead; copy it there: kubectl "
            f"get secret {name} -n {other} -o json | jq '.metadata={{name: .metadata.name, "
            f"labels: {label}}}' | kubectl apply -n {namespace} -f -"
        )
    return notes


def missing(hosts: list[Obj], present: set[Key]) -> list[str]:
    """A note for each Secret a Host names that the file does not hold: the controller
    reads the one in the cluster only once it carries the label of its use."""
    notes = []
    for host in hosts:
        namespace, name = host["metadata"]["namespace"], host["metadata"]["name"]
        spec = host.get("spec") or {}
        uses = [(f, s, ann.HOST_DATA_SELECTOR) for f, _, s in data_references(spec)]
        credentials = (spec.get("bmc") or {}).get("credentialsName")
        if credentials:
            uses.insert(0, ("bmc.credentialsName", credentials, ann.BMC_CREDENTIALS_SELECTOR))
        for field, secret, label in uses:
            if (namespace, secret) in present:
                continue
            notes.append(
                f"Secret {namespace}/{secret} (spec.{field} of Host {namespace}/{name}) is not "
                f"in the file; add it, or label the one in the cluster: kubectl label secret "
                f"{secret} -n {namespace} {label}"
            )
            present.add((namespace, secret))  # one note per Secret
    return notes


def empty_credentials(secrets: list[Obj]) -> list[str]:
    """A note for each BMC credentials Secret whose username or password is empty or
    missing: registration would fail on the BMC. Its values are never quoted."""
    notes = []
    for secret in secrets:
        meta = secret["metadata"]
        if (meta.get("labels") or {}).get(ann.BMC_CREDENTIALS) != "true":
            continue
        data = secret.get("data") or {}
        empty = [key for key in ("username", "password") if not _text(data.get(key)).strip()]
        if not empty:
            continue
        fill = json.dumps({"stringData": {key: key.upper() for key in empty}})
        notes.append(
            f"Secret {meta['namespace']}/{meta['name']} has an empty {' and '.join(empty)}: a "
            f"Host naming it cannot register with its BMC; fill it in the file, or: kubectl "
            f"patch secret {meta['name']} -n {meta['namespace']} --type merge -p '{fill}'"
        )
    return notes


def _text(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    try:
        return base64.b64decode(value, validate=True).decode(errors="replace")
    except (binascii.Error, ValueError):
        return value  # not base64: the API server refuses it; the controller says so
