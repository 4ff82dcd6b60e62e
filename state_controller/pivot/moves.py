"""Moving one host: a table of steps, each checking the target before it writes.

A host moves in the order a careful operator would move it by hand:

``pause``
    the source Host gets ``hoststate.io/paused``: its controller (if one runs) leaves
    it alone and writes nothing from now on, so what is copied stays true;
``secret``
    its BMC credentials Secret is created in the target, labels and all: one labelled
    ``hoststate.io/bmc-credentials=true`` stays readable there, and one without the
    label (whose Host the source's controller holds in registration error) is moved as
    the Host names it, unlabelled, so the move grants nothing the source did not (its
    Host stays in that error until someone labels the Secret);
``host``
    the Host is created in the target, paused, with ``hoststate.io/status`` holding
    its status (the controller there restores the status from it instead of
    registering the host again) and ``hoststate.io/moved-from`` naming the source
    (only a run from the same source carries an unfinished move on);
``hoststate``
    its HostState is created in the target, owned by the new Host, with the whole
    status: the history (the bootstrap chapter first), the chapters, the conditions;
``release``
    what the source's controller wrote since the copy (a reconcile already under way
    when the host was paused) is copied again; then the source copies go (the Host's
    finalizer removed first, so that no controller deprovisions a machine that is only
    changing hands), and the Secret when no other Host of the source uses it;
``unpause``
    the move's mark is removed and the target Host unpaused: its controller takes over.

Every step looks first at what the target (or the source) already holds, and does
nothing when its work is done: a move interrupted after any step, and run again,
ends where an uninterrupted one would, and a move run twice writes nothing the
second time. A host the user had paused before the move stays paused in the target.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..api import annotations as ann
from ..api.objects import Obj
from ..cluster.interface import HOSTS, HOSTSTATES, SECRETS, Cluster, NotFound

PAUSED_BY_PIVOT = "pivot"
"""The value of ``hoststate.io/paused`` the move sets, and is therefore free to remove."""

STEPS = ("pause", "secret", "host", "hoststate", "release", "unpause")

_USER_META = ("labels", "annotations")


class Refused(Exception):
    """The move would lose or mix something up; the message names the object and the fix."""

    def __init__(self, message: str, *, before_any_write: bool = False) -> None:
        super().__init__(message)
        self.before_any_write = before_any_write


class Interrupted(Exception):
    """Stopped after a step on purpose (``stop_after``), as a kill would stop it."""


@dataclass
class Move:
    """One host on its way from ``source`` to ``target``: what was read, what was done."""

    source: Cluster
    target: Cluster
    namespace: str
    name: str
    origin: str  # where the hosts come from, as the target's copies name it
    secrets: SecretUsers
    done: list[str] = field(default_factory=list)  # what each step did, in words
    paused_at: float | None = None
    unpaused_at: float | None = None
    writes: int = 0
    copied: dict[str, str] = field(default_factory=dict)  # resourceVersions copied by this run

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    # -- reading ----------------------------------------------------------------------

    def source_host(self) -> Obj | None:
        return get_or_none(self.source, HOSTS, self.namespace, self.name)

    def target_host(self) -> Obj | None:
        return get_or_none(self.target, HOSTS, self.namespace, self.name)

    def _write(self, what: str) -> None:
        self.writes += 1
        if what and what not in self.done:
            self.done.append(what)

    # -- the steps ----------------------------------------------------------------------

    def pause(self) -> None:
        host = self.source_host()
        if host is None:
            return  # released already: an earlier run got past this host's source
        if ann.PAUSED not in _annotations(host):
            self.source.patch(
                HOSTS, self.namespace, self.name,
                {"metadata": {"annotations": {ann.PAUSED: PAUSED_BY_PIVOT}}},
            )  # fmt: skip
            self._write("paused")
        self.paused_at = self.paused_at or time.time()

    def secret(self) -> None:
        host = self.source_host()
        if host is None:
            return
        name = credentials_name(host)
        if not name:
            return
        wanted = get_or_none(self.source, SECRETS, self.namespace, name)
        have = get_or_none(self.target, SECRETS, self.namespace, name)
        if wanted is None or have is not None:
            return  # none to move, or checked equal before the move began
        self.target.create(SECRETS, _copy(wanted, SECRETS))
        self._write("secret created")

    def host(self) -> None:
        host = self.source_host()
        if host is None:
            return
        self.copied["host"] = _version(host)
        status = self._status_here(host)
        saved = json.dumps(status, separators=(",", ":"), sort_keys=True) if status else None
        have = self.target_host()
        if have is not None:  # created by an earlier run (checked to be the same machine)
            if _annotations(have).get(ann.STATUS) != saved and moving_from(have, self.origin):
                # the source's controller wrote once more as it was paused: copy that
                notes = {ann.STATUS: saved}
                self.target.patch(
                    HOSTS, self.namespace, self.name, {"metadata": {"annotations": notes}}
                )
                self._write("status annotation refreshed")
            return
        copy = _copy(host, HOSTS)
        notes = copy["metadata"].setdefault("annotations", {})
        notes[ann.PAUSED] = _annotations(host).get(ann.PAUSED, PAUSED_BY_PIVOT)
        notes[ann.MOVED_FROM] = self.origin
        if saved is not None:
            notes[ann.STATUS] = saved
        self.target.create(HOSTS, copy)
        self._write("host created")

    def _status_here(self, host: Obj) -> Obj | None:
        """The Host's status as the target must see it: the credentials known to work are
        the same Secret with the same data, now at the target's resourceVersion (else the
        controller there would take them for new ones and validate them again)."""
        status: Obj | None = host.get("status") or _saved_status(host)
        good = (status or {}).get("goodCredentials") or {}
        name = credentials_name(host)
        if not status or not good or good.get("name") != name:
            return status
        secret = get_or_none(self.target, SECRETS, self.namespace, name)
        if secret is None:
            return status
        version = secret["metadata"].get("resourceVersion", "")
        return {**status, "goodCredentials": {**good, "version": version}}

    def hoststate(self) -> None:
        host = self.source_host()
        if host is None:
            return
        state = get_or_none(self.source, HOSTSTATES, self.namespace, self.name)
        self.copied["hoststate"] = _version(state)
        if state is None:
            return  # the controller never wrote one: the target's writes it
        owner = self.target_host()
        if owner is None:
            raise Refused(f"Host {self.key} vanished from the target during the move")
        have = get_or_none(self.target, HOSTSTATES, self.namespace, self.name)
        if have is None:
            copy = _copy(state, HOSTSTATES)
            copy["metadata"]["ownerReferences"] = [_owner(owner)]
            have = self.target.create(HOSTSTATES, copy)
            self._write("hoststate created")
        if have.get("status") != state.get("status") and moving_from(owner, self.origin):
            have = {**have, "status": state.get("status") or {}}
            self.target.update_status(HOSTSTATES, have)
            self._write("history copied")

    def release(self) -> None:
        host = self.source_host()
        if host is None:
            # released by an earlier run; a kill may have come between the Host and its Secret
            there = self.target_host()
            if there is not None and moving_from(there, self.origin):
                self._release_secret(credentials_name(there), counted=False)
            return
        if ann.PAUSED not in _annotations(host):
            raise Refused(f"Host {self.key} in the source is no longer paused; run pivot again")
        if self.target_host() is None:
            raise Refused(f"Host {self.key} is not in the target yet; run pivot again")
        # what a reconcile already under way when the host was paused wrote since: copied
        state = get_or_none(self.source, HOSTSTATES, self.namespace, self.name)
        seen = {"host": _version(host), "hoststate": _version(state)}
        if seen != self.copied:  # or copied by an earlier run: compared, copied if need be
            self.host()
            self.hoststate()
            host = self.source_host() or host
        if host["metadata"].get("finalizers"):
            self.source.patch(HOSTS, self.namespace, self.name, {"metadata": {"finalizers": None}})
            self.writes += 1
        _delete(self.source, HOSTS, self.namespace, self.name)
        self.writes += 1
        if _delete(self.source, HOSTSTATES, self.namespace, self.name):
            self.writes += 1
        self._release_secret(credentials_name(host), counted=True)
        self.done.append("source removed")

    def _release_secret(self, name: str, *, counted: bool) -> None:
        """Delete the source's Secret once no Host left in the source names it."""
        if not name:
            return
        left = (
            self.secrets.release(self.namespace, name)
            if counted
            else (self.secrets.users(self.namespace, name))
        )
        if left == 0 and _delete(self.source, SECRETS, self.namespace, name):
            self.writes += 1

    def unpause(self) -> None:
        host = self.target_host()
        if host is None or not moving_from(host, self.origin):
            return  # not moved here from this source (or the move ended already)
        if self.source_host() is not None:
            return  # not released yet: two unpaused copies must never exist
        notes: dict[str, str | None] = {ann.MOVED_FROM: None}
        if paused_by_pivot(host):
            notes[ann.PAUSED] = None  # a host its user had paused stays paused
        self.target.patch(HOSTS, self.namespace, self.name, {"metadata": {"annotations": notes}})
        self.unpaused_at = time.time()
        self._write("unpaused" if ann.PAUSED in notes else "left paused by its user")

    def run(self, stop_after: str | None = None) -> None:
        for step in STEPS:
            getattr(self, step)()
            if step == stop_after:
                raise Interrupted(f"{self.key}: stopped after {step}")

    @property
    def paused_seconds(self) -> float | None:
        if self.paused_at is None or self.unpaused_at is None:
            return None
        return self.unpaused_at - self.paused_at


def conflict(source_host: Obj, target_host: Obj | None, origin: str) -> str:
    """Why the source's Host cannot move (``""``: it can): it is being deleted, or the
    target's Host of the same name is another machine, or is not this move's copy."""
    meta = source_host["metadata"]
    what = f"Host {meta['namespace']}/{meta['name']}"
    if meta.get("deletionTimestamp"):
        return f"{what} is being deleted in the source; let the deletion finish, then move"
    if target_host is None:
        return ""
    here, there = _machine(source_host), _machine(target_host)
    if here != there:
        return (
            f"the target already holds a different {what} (BMC {there[0] or 'none'}, "
            f"boot MAC {there[1] or 'none'}; moving BMC {here[0]}, boot MAC {here[1] or 'none'}); "
            "rename or delete one of them"
        )
    came = _annotations(target_host).get(ann.MOVED_FROM)
    if came is None:
        return (
            f"the target already holds {what} and manages it, while the source still holds "
            "it too; delete the copy that must not act"
        )
    if came != origin:
        return (
            f"the target's {what} is being moved there from {came}, not from {origin}; "
            "finish that move first (run pivot from there again)"
        )
    return ""


def paused_by_pivot(host: Obj) -> bool:
    return _annotations(host).get(ann.PAUSED) == PAUSED_BY_PIVOT


def moving_from(host: Obj, origin: str) -> bool:
    """A target Host this move created and has not finished."""
    return _annotations(host).get(ann.MOVED_FROM) == origin


class SecretUsers:
    """How many Hosts of the source still name each Secret, as hosts are released."""

    def __init__(self, hosts: list[Obj]) -> None:
        self._count: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        for host in hosts:
            name = credentials_name(host)
            if name:
                key = (host["metadata"]["namespace"], name)
                self._count[key] = self._count.get(key, 0) + 1

    def users(self, namespace: str, name: str) -> int:
        with self._lock:
            return self._count.get((namespace, name), 0)

    def release(self, namespace: str, name: str) -> int:
        """One Host naming it leaves the source; how many still name it."""
        with self._lock:
            key = (namespace, name)
            self._count[key] = max(self._count.get(key, 1) - 1, 0)
            return self._count[key]


def secret_conflict(source: Obj, target: Obj | None) -> str:
    if target is None or target.get("data") == source.get("data"):
        return ""
    meta = source["metadata"]
    return (
        f"the target already holds a different Secret {meta['namespace']}/{meta['name']} "
        "(its data differs); delete it there or give the Host other credentials"
    )


def _machine(host: Obj) -> tuple[str, str]:
    spec = host.get("spec") or {}
    return str((spec.get("bmc") or {}).get("address") or ""), str(
        spec.get("bootMACAddress") or ""
    ).lower()


def _saved_status(host: Obj) -> Obj | None:
    """The status a Host carries in its annotation: one moved in, not yet taken over."""
    raw = _annotations(host).get(ann.STATUS)
    try:
        saved = json.loads(raw) if raw else None
    except ValueError:
        return None
    return saved if isinstance(saved, dict) else None


def credentials_name(host: Obj) -> str:
    return str(((host.get("spec") or {}).get("bmc") or {}).get("credentialsName") or "")


def _annotations(obj: Obj) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def _copy(obj: Obj, resource: Any) -> Obj:
    """The object as a new one elsewhere: what its user wrote, none of the server's fields."""
    meta = obj["metadata"]
    out: Obj = {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
    }
    for part in _USER_META:
        if meta.get(part):
            out["metadata"][part] = dict(meta[part])
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata", "status"):
            out[key] = value
    return out


def _owner(host: Obj) -> dict[str, Any]:
    return {
        "apiVersion": host.get("apiVersion") or HOSTS.api_version,
        "kind": "Host",
        "name": host["metadata"]["name"],
        "uid": host["metadata"]["uid"],
        "controller": True,
    }


def _version(obj: Obj | None) -> str:
    return str(obj["metadata"].get("resourceVersion", "")) if obj is not None else ""


def get_or_none(cluster: Cluster, resource: Any, namespace: str, name: str) -> Obj | None:
    try:
        return cluster.get(resource, namespace, name)
    except NotFound:
        return None


def _delete(cluster: Cluster, resource: Any, namespace: str, name: str) -> bool:
    try:
        cluster.delete(resource, namespace, name)
    except NotFound:
        return False
    return True
