"""Gather what the state machine reads about a host from the cached objects.

Parsing the spec is cached per generation; credentials are read from the
cached Secret. Every problem becomes a message that names the field or the
Secret key and says how to fix it. Secret values are decoded here and go no
further than the provisioner.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ...api import annotations as ann
from ...api.backend_ids import id_problem
from ...api.errors import describe
from ...api.host import HostSpec
from ...api.host_status import HardwareDetails, HostStatus
from ...api.objects import Obj
from ...api.reach import Reach
from ...books.book import Book
from ...books.journal import INVALID_ANNOTATION
from ...provisioning.inputs import HostInput, SpecProblem
from ...provisioning.power_requests import annotation_problems as power_annotation_problems
from ...provisioning.provisioner import Credentials
from .data import DataRead, read_host_data


class SpecCache:
    """Parsed specs by (uid, generation): a spec is parsed once per change, not per step.
    ``reach`` is fixed for the process, so its verdict is cached with the spec.

    Only the ``size`` hosts reconciled last keep theirs: a parsed spec takes 2.3 to 2.7 KB,
    a third of what the controller kept per host at rest (measured at 2,000 hosts), and a
    host at rest is seldom reconciled. Parsing one again takes 40 us; with more hosts in
    flight at once than the cache holds, each step pays that. 256 rather than 2,048: 4 MB
    less at 10,000 hosts, and that run's CPU did not grow (87 s against 101 s)."""

    def __init__(self, reach: Reach | None = None, size: int = 256) -> None:
        self.reach = reach or Reach()
        self.size = size
        self._parsed: OrderedDict[str, tuple[str, int, HostSpec | None, SpecProblem | None]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()  # workers share it

    def parse(self, key: str, host: Obj) -> tuple[HostSpec | None, SpecProblem | None]:
        meta = host["metadata"]
        uid, generation = str(meta.get("uid", "")), int(meta.get("generation") or 0)
        with self._lock:
            hit = self._parsed.get(key)
            if hit is not None:
                self._parsed.move_to_end(key)
        if hit is not None and hit[0] == uid and hit[1] == generation:
            return hit[2], hit[3]
        spec, problem = parse_spec(host.get("spec"), self.reach)
        if spec is not None:
            foreign = other_namespace(spec, str(meta.get("namespace", "")))
            if foreign:
                spec, problem = None, SpecProblem(OTHER_NAMESPACE, foreign)
        with self._lock:
            self._parsed[key] = (uid, generation, spec, problem)
            self._parsed.move_to_end(key)
            while len(self._parsed) > self.size:
                self._parsed.popitem(last=False)
        return spec, problem

    def forget(self, key: str) -> None:
        with self._lock:
            self._parsed.pop(key, None)


NOT_ALLOWED = "AddressNotAllowed"
OTHER_NAMESPACE = "SecretInOtherNamespace"

DATA_FIELDS = (
    ("userData", "user_data"),
    ("networkData", "network_data"),
    ("metaData", "meta_data"),
)
"""The spec's Secret references for the deployed OS: (field in the API, attribute)."""


def other_namespace(spec: HostSpec, namespace: str) -> str:
    """The sentence refusing a data Secret reference to another namespace, else "".

    A Host reads only Secrets of its own namespace: whoever may write Hosts in one
    namespace must not get another team's Secret onto a machine they deploy."""
    for field_name, attr in DATA_FIELDS:
        ref = getattr(spec, attr)
        if ref is not None and ref.namespace and ref.namespace != namespace:
            return (
                f'spec.{field_name}.namespace: "{ref.namespace}" is not the Host\'s namespace '
                f'"{namespace}"; a Host reads only Secrets of its own namespace: put the Secret '
                f"in {namespace} and leave spec.{field_name}.namespace empty"
            )
    return ""


def parse_spec(raw: Any, reach: Reach | None = None) -> tuple[HostSpec | None, SpecProblem | None]:
    """The spec, or the problem that keeps it from being used. A spec naming an address the
    operator does not let Hosts reach (:class:`~..api.reach.Reach`) is no spec at all to
    the machine: nothing is sent to the backend with it, as with an invalid one."""
    if not isinstance(raw, dict):
        return None, SpecProblem("InvalidSpec", "spec must be an object with at least spec.bmc")
    try:
        spec = HostSpec.model_validate(raw)
    except ValidationError as err:
        reason, message = describe(err, HostSpec, "spec")
        return None, SpecProblem(reason, message)
    refused = (reach or Reach()).problem(spec)
    if refused:
        return None, SpecProblem(NOT_ALLOWED, refused)
    return spec, None


def is_bmc_credentials(secret: Obj) -> bool:
    """Whether a Secret is labelled as holding BMC credentials (the only ones read)."""
    labels = (secret.get("metadata") or {}).get("labels") or {}
    return isinstance(labels, dict) and labels.get(ann.BMC_CREDENTIALS) == "true"


def credentials(
    secret: Obj | None, namespace: str, name: str
) -> tuple[Credentials | None, tuple[str, str] | None, str | None]:
    """(credentials, (secret name, version), problem).

    A Secret without the ``hoststate.io/bmc-credentials=true`` label is refused before
    anything in it is read: any Secret of the namespace is not a Host's to send to a BMC.
    """
    if secret is None:
        return (
            None,
            None,
            (
                f'spec.bmc.credentialsName: Secret "{name}" not found in namespace "{namespace}"; '
                f'create it with keys "username" and "password" and the label '
                f"{ann.BMC_CREDENTIALS_SELECTOR}"
            ),
        )
    if not is_bmc_credentials(secret):
        return (
            None,
            None,
            (
                f'spec.bmc.credentialsName: the Secret "{name}" has no label '
                f"{ann.BMC_CREDENTIALS_SELECTOR}; add it if it holds this host's BMC "
                f"credentials: kubectl label secret {name} -n {namespace} "
                f"{ann.BMC_CREDENTIALS_SELECTOR}"
            ),
        )
    data = secret.get("data") or {}
    values: dict[str, str] = {}
    for key in ("username", "password"):
        if not data.get(key):
            return (
                None,
                None,
                (
                    f'Secret "{namespace}/{name}" has no "{key}" key; '
                    'put "username" and "password" in its data'
                ),
            )
        try:
            values[key] = base64.b64decode(data[key], validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None, None, f'Secret "{namespace}/{name}": key "{key}" is not valid base64 text'
    version = str(secret["metadata"].get("resourceVersion", ""))
    return Credentials(values["username"], values["password"]), (name, version), None


class _Annotations:
    """The hardware-details and status annotations validated, by their text: one
    reconcile reads each up to three times (gather, the annotation check, the spent
    status), and every reconcile of a host reads them again while they stand, each read
    a JSON parse and a validation of up to 256 KB (about 1 ms for 60 KB of hardware
    details, against 0.2 ms to dump a validated one). A few entries serve the hosts being
    reconciled now; the models kept are never handed out, only dumps of them."""

    ENTRIES = 8

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, str], tuple[Any, str | None]] = OrderedDict()
        self._lock = threading.Lock()

    def parse(
        self, name: str, raw: str, parse: Callable[[str], tuple[Any, str | None]]
    ) -> tuple[Any, str | None]:
        key = (name, raw)  # a str keeps its hash: a lookup costs one comparison
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        result = parse(raw)
        with self._lock:
            self._kept[key] = result
            while len(self._kept) > self.ENTRIES:
                self._kept.popitem(last=False)
        return result


_ANNOTATIONS = _Annotations()


def _hardware_model(raw: str) -> tuple[HardwareDetails | None, str | None]:
    try:
        return HardwareDetails.model_validate(json.loads(raw)), None
    except (ValueError, ValidationError) as err:
        first = str(err).splitlines()[0]
        return None, (
            f"annotation {ann.HARDWARE_DETAILS} is not valid hardware details JSON ({first}); "
            "fix or remove it"
        )


def hardware_details(annotations: dict[str, str]) -> tuple[dict[str, Any] | None, str | None]:
    """Hardware details from the annotation: (details, problem)."""
    raw = annotations.get(ann.HARDWARE_DETAILS)
    if raw is None:
        return None, None
    parsed, problem = _ANNOTATIONS.parse(ann.HARDWARE_DETAILS, raw, _hardware_model)
    return (None, problem) if parsed is None else (parsed.model_dump(by_alias=True), None)


def _status_model(raw: str) -> tuple[HostStatus | None, str | None]:
    try:
        parsed = HostStatus.model_validate(json.loads(raw))
    except (ValueError, ValidationError):
        return None, f"annotation {ann.STATUS} is not a valid Host status in JSON; fix or remove it"
    problem = parsed.provisioning.id and id_problem(
        parsed.provisioning.id, "status.provisioning.id"
    )
    if problem:
        return None, f"annotation {ann.STATUS}: {problem}; fix or remove it"
    return parsed, None


def status_annotation(annotations: dict[str, str]) -> tuple[dict[str, Any] | None, str | None]:
    """The Host status the annotation holds, to restore after a move: (status, problem).

    The backend ID in it goes into a backend's URLs: one that is no ID refuses the whole
    annotation, never restored. Anyone who may edit the Host may write the annotation,
    so what would let a Host skip a check is left out of what is restored: the backend
    ID (registration finds the host's node by its name and its owner mark instead) and
    the credentials it says were checked (they are sent and checked again).
    """
    raw = annotations.get(ann.STATUS)
    if raw is None:
        return None, None
    parsed, problem = _ANNOTATIONS.parse(ann.STATUS, raw, _status_model)
    if parsed is None:
        return None, problem
    status = parsed.model_dump(by_alias=True, exclude_none=True, mode="json")
    status.pop("goodCredentials", None)
    status.get("provisioning", {}).pop("id", None)
    return status, None


def gather(
    host: Obj,
    spec_cache: SpecCache,
    secrets: Callable[[str], Obj | None],
    data_secrets: Callable[[str], Obj | None] | None = None,
) -> HostInput:
    """Everything the machine needs, from the Host and the Secrets it references
    (``data_secrets``: where the data Secrets are read; ``secrets`` when not given)."""
    meta = host["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    key = f"{namespace}/{name}"
    spec, problem = spec_cache.parse(key, host)
    annotations = meta.get("annotations") or {}
    creds = version = creds_problem = None
    if spec is not None and spec.bmc is not None:
        secret_key = f"{namespace}/{spec.bmc.credentials_name}"
        creds, version, creds_problem = credentials(
            secrets(secret_key), namespace, spec.bmc.credentials_name
        )
    details, _ = hardware_details(annotations)
    read = DataRead(None, ())
    if spec is not None:
        read = read_host_data(spec, namespace, data_secrets or secrets)
    return HostInput(
        namespace=namespace,
        name=name,
        generation=int(meta.get("generation") or 0),
        spec=spec,
        spec_problem=problem,
        annotations=annotations,
        deleting=bool(meta.get("deletionTimestamp")),
        credentials=creds,
        credentials_version=version,
        credentials_problem=creds_problem,
        hardware_details=details,
        data=read.data,
        data_versions=read.versions,
        data_problem=read.problem,
        data_problem_field=read.problem_field,
    )


def notice_annotation_problems(book: Book, annotations: dict[str, str], now: float) -> None:
    """A Warning in the book for each annotation of the Host that is refused, told once
    per change of what is wrong with it."""
    problems: dict[str, str] = {}
    _, hw_problem = hardware_details(annotations)
    if hw_problem:
        problems[ann.HARDWARE_DETAILS] = hw_problem
    _, status_problem = status_annotation(annotations)
    if status_problem:
        problems[ann.STATUS] = status_problem
    problems.update(power_annotation_problems(annotations))
    before = book.seen.annotation_problems
    if problems != before:
        for name, message in problems.items():
            if before.get(name) != message:
                book.notice("Warning", INVALID_ANNOTATION, message, now=now)
        book.note_seen(now=now, annotation_problems=problems)
