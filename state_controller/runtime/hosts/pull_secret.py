"""The registry credentials of an ``oci://`` image, from the Secret its
``spec.image.ociAuthSecretName`` names, in the form Ironic takes them.

As baremetal-operator v0.13.2 (``ExtractRegistryCredentials``,
pkg/secretutils/dockerconfig.go): a ``kubernetes.io/dockerconfigjson`` Secret (key
``.dockerconfigjson``, ``{"auths": {registry: {...}}}``) or a legacy ``dockercfg`` one
(key ``.dockercfg``, the ``auths`` map alone); the entry of the image's registry (Docker
Hub's ``docker.io`` read as ``index.docker.io``), its ``auth`` or its ``username`` and
``password``; handed to Ironic as ``instance_info.image_pull_secret``: base64 of
``username:password``, never the whole config. Every problem names the field and the
fix, and quotes nothing the Secret holds.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any
from urllib.parse import urlsplit

from ...api import annotations as ann
from ...api.objects import Obj

FIELD = "image.ociAuthSecretName"
KEYS = (".dockerconfigjson", ".dockercfg")
DOCKER_HUB = ("docker.io", "registry-1.docker.io", "index.docker.io")


def registry_of(url: str) -> str:
    """The registry host (with its port) of an ``oci://`` URL; Docker Hub by one name."""
    host = urlsplit(url).netloc.lower()
    return "index.docker.io" if host in DOCKER_HUB else host


def _entry_host(key: str) -> str:
    """An ``auths`` key (``registry``, ``https://registry/v1/``, ...) as a registry host."""
    host = key.lower().split("://", 1)[-1].split("/", 1)[0]
    return "index.docker.io" if host in DOCKER_HUB else host


def pull_secret(secret: Obj | None, namespace: str, name: str, url: str) -> tuple[str | None, str]:
    """(Ironic's ``image_pull_secret``, "") or (None, the problem naming the field)."""
    where = f'spec.{FIELD}: Secret "{namespace}/{name}"'
    if secret is None:
        return None, (
            f"{where} not found; create it (kubectl create secret docker-registry {name} -n "
            f"{namespace} ...) and label it {ann.HOST_DATA_SELECTOR}"
        )
    labels = (secret.get("metadata") or {}).get("labels") or {}
    if not isinstance(labels, dict) or labels.get(ann.HOST_DATA) != "true":
        return None, (
            f"{where} has no label {ann.HOST_DATA_SELECTOR}; add it if it holds this host's "
            f"registry credentials: kubectl label secret {name} -n {namespace} "
            f"{ann.HOST_DATA_SELECTOR}"
        )
    auths = _auths(secret.get("data") or {})
    if auths is None:
        return None, (
            f'{where} holds no registry credentials under "{KEYS[0]}" (or "{KEYS[1]}"); make '
            "it a kubernetes.io/dockerconfigjson Secret"
        )
    registry = registry_of(url)
    for key, entry in auths.items():
        if _entry_host(str(key)) == registry and isinstance(entry, dict):
            login = _login(entry)
            if login:
                return base64.b64encode(login.encode()).decode(), ""
    return None, f"{where} has no credentials for the registry {registry}; add them to its auths"


def _auths(data: dict[str, Any]) -> dict[str, Any] | None:
    for key in KEYS:
        if key not in data:
            continue
        try:
            parsed = json.loads(base64.b64decode(str(data[key]), validate=True))
        except (binascii.Error, ValueError):
            return None
        if key == KEYS[0]:
            parsed = parsed.get("auths") if isinstance(parsed, dict) else None
        return parsed if isinstance(parsed, dict) else None
    return None


def _login(entry: dict[str, Any]) -> str:
    """``username:password`` of an ``auths`` entry ("" when it holds none)."""
    if entry.get("username") or entry.get("password"):
        return f"{entry.get('username') or ''}:{entry.get('password') or ''}"
    try:
        login = base64.b64decode(str(entry.get("auth") or ""), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return ""
    return login if ":" in login else ""
