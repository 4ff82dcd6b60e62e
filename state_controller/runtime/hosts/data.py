"""Read the data a Host gives its deployed OS (user, network and meta data) from Secrets.

As baremetal-operator: ``spec.userData`` names a Secret whose key ``userData`` holds
the user data, ``spec.networkData`` one with ``networkData``, ``spec.metaData`` one
with ``metaData``, ``spec.preprovisioningNetworkDataName`` one with ``networkData`` (for
the deploy ramdisk); each falls back to the key ``value``. Network and meta data are
YAML (or JSON) objects, read within fixed bounds (:mod:`.bounded_yaml`). Only Secrets
labelled ``hoststate.io/host-data=true`` are read: of any other, nothing but its labels.
Every problem is one sentence naming the field and the fix; none quotes what a Secret
holds.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple

from ...api import annotations as ann
from ...api.host import HostSpec
from ...api.objects import Obj
from ...provisioning.provisioner import HostData
from . import bounded_yaml
from .pull_secret import FIELD as PULL_SECRET_FIELD
from .pull_secret import pull_secret

FALLBACK_KEY = "value"
PREPROVISIONING = "preprovisioningNetworkDataName"
_KEY_OF = {PREPROVISIONING: "networkData"}  # the Secret key a field reads, if not its name


def is_host_data(secret: Obj) -> bool:
    """Whether a Secret is labelled as holding data for a Host's deployed OS."""
    labels = (secret.get("metadata") or {}).get("labels") or {}
    return isinstance(labels, dict) and labels.get(ann.HOST_DATA) == "true"


def data_secret_keys(spec: Any, namespace: str) -> list[str]:
    """The keys (namespace/name) of the data Secrets a raw Host spec names."""
    if not isinstance(spec, dict):
        return []
    keys = []
    for field_name in ("userData", "networkData", "metaData"):
        ref = spec.get(field_name)
        if isinstance(ref, dict) and ref.get("name"):
            keys.append(f"{namespace}/{ref['name']}")
    ramdisk = spec.get(PREPROVISIONING)
    if isinstance(ramdisk, str) and ramdisk:
        keys.append(f"{namespace}/{ramdisk}")
    image = spec.get("image")
    if isinstance(image, dict) and isinstance(image.get("ociAuthSecretName"), str):
        keys.append(f"{namespace}/{image['ociAuthSecretName']}")
    return keys


def _value(
    secret: Obj | None, field_name: str, namespace: str, name: str
) -> tuple[str | None, str | None]:
    """The text under the field's key (or ``value``): (text, problem)."""
    key = _KEY_OF.get(field_name, field_name)
    if secret is None:
        return None, (
            f'spec.{field_name}: Secret "{name}" not found in namespace "{namespace}"; '
            f'create it with the key "{key}" and the label {ann.HOST_DATA_SELECTOR}'
        )
    if not is_host_data(secret):
        return None, (
            f'spec.{field_name}: the Secret "{name}" has no label {ann.HOST_DATA_SELECTOR}; '
            f"add it if it holds this host's {field_name}: kubectl label secret {name} "
            f"-n {namespace} {ann.HOST_DATA_SELECTOR}"
        )
    data = secret.get("data") or {}
    raw = data.get(key, data.get(FALLBACK_KEY))
    if raw is None:
        return None, (
            f'spec.{field_name}: Secret "{namespace}/{name}" has no "{key}" key '
            f'(nor "{FALLBACK_KEY}"); put the {field_name} under "{key}" in its data'
        )
    try:
        return base64.b64decode(raw, validate=True).decode(), None
    except (binascii.Error, UnicodeDecodeError, TypeError):
        return None, (
            f'spec.{field_name}: the "{key}" key of Secret "{namespace}/{name}" is not valid '
            "base64 of UTF-8 text; write the text under stringData or base64-encode it"
        )


def _object(text: str, field_name: str, namespace: str, name: str) -> bounded_yaml.Loaded:
    """Network or meta data: a YAML or JSON object, read within the bounds of
    :mod:`.bounded_yaml`. A problem names the field and the fix; the parser's own message is
    not repeated: it quotes the text."""
    loaded = bounded_yaml.load(text)
    where = f'spec.{field_name}: the {field_name} in Secret "{namespace}/{name}"'
    if loaded.problem is not None:
        fix = (
            "write it out in full, within those bounds"
            if loaded.problem in _SIZE_PROBLEMS
            else "write it as a YAML or JSON object (e.g. OpenStack network_data for networkData)"
        )
        return loaded._replace(problem=f"{where} {loaded.problem}; {fix}")
    if not isinstance(loaded.value, dict):
        return bounded_yaml.Loaded(
            None,
            f"{where} is not a YAML or JSON object; write it as one (e.g. OpenStack "
            "network_data for networkData)",
            0,
        )
    return loaded


_SIZE_PROBLEMS = (
    bounded_yaml.TOO_LONG,
    bounded_yaml.TOO_LARGE,
    bounded_yaml.TOO_DEEP,
    bounded_yaml.CONTAINS_ITSELF,
)


class _Parsed:
    """Network and meta data already parsed, by Secret, field and the text's sha256.

    A Host is reconciled at every poll while its backend works (every 2 s with Ironic), and
    each reconcile reads its data again: parsing 286 bytes of network data took 0.7 ms
    (measured), some 35 % of a core for 1,000 hosts deploying at once. Bounded by count
    (:data:`ENTRIES`) and by what the kept values are written out as JSON (:data:`BYTES`),
    which tracks the memory they hold (a parsed value takes up to about ten times its
    JSON); a text is refused above :data:`.bounded_yaml.TEXT_MAX`, so no one parse costs
    more than that.

    Keyed by what the text is, not by the Secret's resourceVersion: a version is unique
    only within one API server, and the same controller process meets two (bootstrap's
    embedded one, then the cluster's after a pivot), where one version can name two
    different texts."""

    ENTRIES = 1024
    BYTES = 2 * 1024 * 1024

    def __init__(self) -> None:
        self._results: OrderedDict[tuple[str, ...], bounded_yaml.Loaded] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def parse(
        self, text: str, field_name: str, namespace: str, name: str
    ) -> tuple[dict[str, Any] | None, str | None]:
        key = (namespace, name, field_name, hashlib.sha256(text.encode()).hexdigest())
        with self._lock:
            if key in self._results:
                self._results.move_to_end(key)
                kept = self._results[key]
                return copy.deepcopy(kept.value), kept.problem  # no caller changes what is kept
        result = _object(text, field_name, namespace, name)
        with self._lock:
            if key not in self._results:
                self._results[key] = result
                self._bytes += result.size
            while len(self._results) > self.ENTRIES or self._bytes > self.BYTES:
                self._bytes -= self._results.popitem(last=False)[1].size
        return copy.deepcopy(result.value), result.problem


_PARSED = _Parsed()
_PART = {
    "networkData": "network_data",
    "metaData": "meta_data",
    PREPROVISIONING: "ramdisk_network_data",
}


class DataRead(NamedTuple):
    """What :func:`read_host_data` found: the data (None when the spec names no data
    Secret, or one is wrong), the versions of the Secrets read (a failed host is retried as
    soon as one changes), and the first problem with the spec field it is about."""

    data: HostData | None
    versions: tuple[tuple[str, str], ...]
    problem: str | None = None
    problem_field: str = ""  # e.g. "userData", "preprovisioningNetworkDataName"


def read_host_data(
    spec: HostSpec, namespace: str, secrets: Callable[[str], Obj | None]
) -> DataRead:
    """The data a Host's spec names, read from its Secrets (see :class:`DataRead`)."""
    parts: dict[str, Any] = {}
    versions: list[tuple[str, str]] = []
    for field_name, name in (
        ("userData", spec.user_data.name if spec.user_data else None),
        ("networkData", spec.network_data.name if spec.network_data else None),
        ("metaData", spec.meta_data.name if spec.meta_data else None),
        (PREPROVISIONING, spec.preprovisioning_network_data_name),
    ):
        if name is None:
            continue
        secret = secrets(f"{namespace}/{name}")
        version = ""
        if secret is not None:
            version = str((secret.get("metadata") or {}).get("resourceVersion", ""))
            versions.append((name, version))
        text, problem = _value(secret, field_name, namespace, name)
        if text is None:
            return DataRead(None, tuple(versions), problem, field_name)
        if field_name == "userData":
            parts["user_data"] = text
            continue
        parsed, problem = _PARSED.parse(text, field_name, namespace, name)
        if parsed is None:
            return DataRead(None, tuple(versions), problem, field_name)
        parts[_PART[field_name]] = parsed
    image = spec.image
    if image is not None and image.oci_auth_secret_name and image.url.startswith("oci://"):
        name = image.oci_auth_secret_name  # as baremetal-operator: read for oci:// only
        secret = secrets(f"{namespace}/{name}")
        if secret is not None:
            versions.append((name, str((secret.get("metadata") or {}).get("resourceVersion", ""))))
        login, problem = pull_secret(secret, namespace, name, image.url)
        if login is None:
            return DataRead(None, tuple(versions), problem, PULL_SECRET_FIELD)
        parts["image_pull_secret"] = login
    return DataRead(HostData(**parts) if parts else None, tuple(versions))


def secrets_read(host: Obj | None) -> list[str] | None:
    """The Secrets a Host names (BMC credentials, data for its OS): None for a deleted
    Host, [] for one that names none."""
    if host is None:
        return None
    spec = host.get("spec")
    namespace = host["metadata"].get("namespace", "")
    keys = data_secret_keys(spec, namespace)
    bmc = spec.get("bmc") if isinstance(spec, dict) else None
    if isinstance(bmc, dict) and bmc.get("credentialsName"):
        keys.append(f"{namespace}/{bmc['credentialsName']}")
    return keys
