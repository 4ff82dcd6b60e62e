"""The hosts file of ``state-controller bootstrap``: Hosts and their BMC Secrets, in YAML.

The same documents ``kubectl apply -f`` takes (one or more, ``---`` between them, or a
``List``), so the file that bootstraps a cluster is the file its Hosts are kept in
later. A metal3 BareMetalHost document is taken as the Host it stands for
(:mod:`..api.baremetalhost`), unless it sets a field a Host cannot carry. Every
document is checked before anything is stored: a mistake is one line
naming the document, the object and the field, and nothing is half applied.

What is taken but leaves the user something to do is a note (:attr:`HostsFile.notes`,
printed on stderr): a document of another kind, skipped (baremetal-operator's own
examples mix in a Machine); a field no BareMetalHost has, dropped as the API server
drops it; and the Secrets of :mod:`.secret_notes`.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..api import API_VERSION
from ..api import annotations as ann
from ..api import baremetalhost as bmh
from ..api.objects import Obj
from ..cluster.interface import HOSTS, SECRETS, Cluster, Invalid, NotFound, Resource
from ..cluster.schema import validators
from . import secret_notes

DEFAULT_NAMESPACE = "default"
BMC_LABEL = {ann.BMC_CREDENTIALS: "true"}
HOST_DATA_LABEL = {ann.HOST_DATA: "true"}


class HostsFileError(ValueError):
    """The hosts file cannot be used; the message names the document and the fix."""


@dataclass(frozen=True)
class HostsFile:
    """The objects of a hosts file, checked, with namespaces filled in."""

    path: Path
    hosts: tuple[Obj, ...]
    secrets: tuple[Obj, ...]
    notes: tuple[str, ...] = ()  # taken, but with something left to do: one line each


def read_hosts_file(path: str | Path, *, secrets_in_cluster: bool = False) -> HostsFile:
    """The file's Hosts and Secrets, checked. ``secrets_in_cluster``: a Secret a Host
    names may be in the cluster already (``convert``), so one the file lacks is a note
    with the label to give it; else (``bootstrap``, whose store holds only the file) a
    missing BMC Secret is refused."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise HostsFileError(f"--hosts {path}: {err.strerror or err}") from None
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        raise HostsFileError(f"--hosts {path}: not YAML: {_where(err)}") from None
    hosts: list[Obj] = []
    secrets: list[Obj] = []
    notes: list[str] = []
    copies: secret_notes.Copies = {}
    seen: set[tuple[str, str, str]] = set()
    check = validators()[HOSTS]
    for number, obj in enumerate(_items(documents, path), start=1):
        where = f"--hosts {path}: document {number}"
        if not isinstance(obj, dict):
            found = type(obj).__name__
            raise HostsFileError(f"{where}: expected a Host or a Secret, found {found}")
        kind = obj.get("kind")
        meta = obj.get("metadata")
        if kind not in TAKEN:
            notes.append(_skipped(where, obj))
            continue
        if not isinstance(meta, dict) or not meta.get("name"):
            raise HostsFileError(f"{where}: metadata.name is missing; name the {kind or 'object'}")
        meta.setdefault("namespace", DEFAULT_NAMESPACE)
        what = f"{kind} {meta['namespace']}/{meta['name']}"
        if kind == bmh.KIND:
            obj, kind = _host_of(obj, f"{where}: {what}", notes), "Host"
        if kind == "Host":
            spec = obj.get("spec")
            if isinstance(spec, dict):
                secret_notes.in_own_namespace(spec, meta["namespace"], what, copies)
            if obj.get("apiVersion") != API_VERSION:
                raise HostsFileError(
                    f"{where}: {what}: apiVersion is {obj.get('apiVersion')!r}; use {API_VERSION}"
                )
            try:
                check(obj)
            except Invalid as err:
                raise HostsFileError(f"{where}: {err}") from None
            obj.pop("status", None)  # a status is the controller's to write
            hosts.append(obj)
        else:
            secrets.append(_with_data(obj, f"{where}: {what}"))
        identity = (str(kind), meta["namespace"], meta["name"])
        if identity in seen:
            raise HostsFileError(f"{where}: {what} appears twice; keep one")
        seen.add(identity)
    if not hosts:
        raise HostsFileError(f"--hosts {path}: no Host in the file; nothing to bootstrap")
    if not secrets_in_cluster:
        _check_credentials(path, hosts, secrets)
    _label_by_use(hosts, secrets)
    present = {(s["metadata"]["namespace"], s["metadata"]["name"]) for s in secrets}
    notes += secret_notes.copy_notes(copies)
    notes += secret_notes.missing(hosts, present | {(ns, n) for _, n, ns in copies})
    notes += secret_notes.empty_credentials(secrets)
    return HostsFile(path, tuple(hosts), tuple(secrets), tuple(notes))


TAKEN = ("Host", bmh.KIND, "Secret")


def _skipped(where: str, obj: Obj) -> str:
    """The note for a document of a kind the file does not keep."""
    found = obj.get("metadata")
    meta: dict[str, object] = found if isinstance(found, dict) else {}
    name = "/".join(str(meta[k]) for k in ("namespace", "name") if meta.get(k))
    what = " ".join(str(p) for p in (obj.get("kind") or "a document with no kind", name) if p)
    return (
        f"{where}: {what} skipped: the file keeps Hosts ({API_VERSION}), metal3 "
        f"BareMetalHosts ({bmh.API_VERSION}) and their Secrets (v1); apply it on its own"
    )


def _label_by_use(hosts: list[Obj], secrets: list[Obj]) -> None:
    """Each Secret labelled for what its Hosts use it as, so the controller reads it (it
    reads no other Secret): the deployed OS's data or the image's registry credentials
    (``hoststate.io/host-data``), else
    BMC credentials (``hoststate.io/bmc-credentials``), or both."""
    as_data: set[tuple[str, str]] = set()
    as_credentials: set[tuple[str, str]] = set()
    for host in hosts:
        namespace, spec = host["metadata"]["namespace"], host.get("spec") or {}
        as_credentials.add((namespace, str((spec.get("bmc") or {}).get("credentialsName"))))
        as_data.update((namespace, name) for _, _, name in secret_notes.data_references(spec))
    for secret in secrets:
        meta = secret["metadata"]
        key = (meta["namespace"], meta["name"])
        labels = meta.get("labels")
        wanted = dict(HOST_DATA_LABEL) if key in as_data else {}
        if key in as_credentials or key not in as_data:
            wanted |= BMC_LABEL
        meta["labels"] = {**(labels if isinstance(labels, dict) else {}), **wanted}


def _host_of(bare_metal_host: Obj, where: str, notes: list[str]) -> Obj:
    """The Host a BareMetalHost document stands for; every field it cannot carry is
    named in one line, with what to do (nothing of it is taken then). A field no
    BareMetalHost has is dropped, with a note."""
    if bare_metal_host.get("apiVersion") != bmh.API_VERSION:
        found = bare_metal_host.get("apiVersion")
        raise HostsFileError(f"{where}: apiVersion is {found!r}; use {bmh.API_VERSION}")
    dropped = bmh.not_carried(bare_metal_host, with_raid=True)
    if dropped:
        fixes = "; ".join(
            f"spec.{f} cannot be carried into a Host: {bmh.refusal(f)}" for f in dropped
        )
        raise HostsFileError(f"{where}: {fixes}")
    unknown = bmh.unknown_fields(bare_metal_host)
    if unknown:
        notes.append(
            f"{where}: {', '.join(unknown)} dropped: no field of baremetal-operator "
            f"{bmh.BMO_VERSION}'s BareMetalHost (its API server drops it too)"
        )
    spec, problem = bmh.host_spec(bare_metal_host, with_raid=True)
    if spec is None:
        raise HostsFileError(f"{where}: {problem}")
    if spec.get(bmh.RAID) is not None and not spec.get("servicingPolicy"):
        notes.append(
            f"{where}: spec.raid is carried; a Host builds it on its provisioned machine by "
            "servicing, not at preparation: set spec.servicingPolicy to onReboot or rolling"
        )
    meta = bare_metal_host["metadata"]
    kept = {k: meta[k] for k in ("name", "namespace", "labels") if meta.get(k)}
    return {"apiVersion": API_VERSION, "kind": "Host", "metadata": kept, "spec": spec}


def _with_data(secret: Obj, where: str) -> Obj:
    """``stringData`` folded into ``data`` (base64), as the API server stores a Secret."""
    data = secret.get("data") or {}
    plain = secret.pop("stringData", None) or {}
    if not isinstance(data, dict) or not isinstance(plain, dict):
        raise HostsFileError(f"{where}: data and stringData must be maps of key to value")
    for key, value in plain.items():
        data[str(key)] = base64.b64encode(str(value).encode()).decode()
    secret["data"] = data
    return secret


def _items(documents: list[Any], path: Path) -> list[Any]:
    """The documents, with the items of a ``List`` in its place."""
    out: list[Any] = []
    for doc in documents:
        if isinstance(doc, dict) and doc.get("kind") == "List":
            items = doc.get("items")
            if not isinstance(items, list):
                raise HostsFileError(f"--hosts {path}: a List without items")
            out.extend(items)
        else:
            out.append(doc)
    return out


def _check_credentials(path: Path, hosts: list[Obj], secrets: list[Obj]) -> None:
    """Say now, not after registration fails, when a Host names a Secret the file lacks."""
    known = {(s["metadata"]["namespace"], s["metadata"]["name"]) for s in secrets}
    for host in hosts:
        meta = host["metadata"]
        name = ((host.get("spec") or {}).get("bmc") or {}).get("credentialsName")
        if name and (meta["namespace"], name) not in known:
            raise HostsFileError(
                f"--hosts {path}: Host {meta['namespace']}/{meta['name']} names "
                f"spec.bmc.credentialsName {name!r}, which is not a Secret in the file; add it"
            )


def apply_hosts_file(cluster: Cluster, hosts_file: HostsFile) -> dict[str, int]:
    """Create what is missing and bring what changed in the file up to date.

    Run again over the same file (a restart), it writes nothing. Counts of what it did.
    """
    done = {"created": 0, "updated": 0, "unchanged": 0}
    for resource, objects in ((SECRETS, hosts_file.secrets), (HOSTS, hosts_file.hosts)):
        for obj in objects:
            done[_apply(cluster, resource, obj)] += 1
    return done


def _apply(cluster: Cluster, resource: Resource, obj: Obj) -> str:
    meta = obj["metadata"]
    try:
        stored = cluster.get(resource, meta["namespace"], meta["name"])
    except NotFound:
        cluster.create(resource, obj)
        return "created"
    fields = ("spec",) if resource == HOSTS else ("data", "type")
    patch: dict[str, Any] = {f: obj[f] for f in fields if f in obj and obj[f] != stored.get(f)}
    for part in ("labels", "annotations"):
        wanted = meta.get(part) or {}
        have = stored["metadata"].get(part) or {}
        changed = {k: v for k, v in wanted.items() if have.get(k) != v}
        if changed:
            patch.setdefault("metadata", {})[part] = changed
    if not patch:
        return "unchanged"
    cluster.patch(resource, meta["namespace"], meta["name"], patch)
    return "updated"


def _where(err: yaml.YAMLError) -> str:
    """What YAML found wrong and where, without quoting the line (it may be a password)."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or "unreadable"
    if mark is None:
        return str(problem)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
