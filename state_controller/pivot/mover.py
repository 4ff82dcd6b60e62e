"""``state-controller pivot``: move every Host, its Secret and its HostState into a cluster.

From a bootstrap's state directory (``--state-dir DIR --kubeconfig K``) or from another
cluster (``--from K1 --to K2``). Before anything is paused the target is made ready
(the CRDs and namespaces it lacks are created) and checked: a target that already
holds a different Host of the same name, or a different Secret, refuses the whole
move with one line per object, and nothing is touched. Then the hosts move a few at
a time, each through the steps of :mod:`.moves`; a line per host says what was done
and how long the host was paused, and a progress bar counts the hosts moved.

Run again after an interruption, it carries on; run again after it finished, it
changes nothing and says so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from ..api.objects import Obj
from ..cluster.interface import HOSTS, SECRETS, ApiError, Cluster
from .moves import (
    Interrupted,
    Move,
    Refused,
    SecretUsers,
    conflict,
    credentials_name,
    get_or_none,
    moving_from,
    secret_conflict,
)
from .target import TargetError, ensure_crds, ensure_namespaces


@dataclass
class PivotReport:
    """What a pivot did: per host its steps and time paused, and the totals."""

    moved: list[Move] = field(default_factory=list)
    crds_created: list[str] = field(default_factory=list)
    namespaces_created: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def writes(self) -> int:
        return sum(m.writes for m in self.moved)

    @property
    def changed(self) -> bool:
        return bool(self.writes or self.crds_created or self.namespaces_created)

    def paused_seconds(self) -> list[float]:
        return [s for s in (m.paused_seconds for m in self.moved) if s is not None]


def _print_line(line: str, done: int, total: int) -> None:
    print(line, flush=True)


def pivot(
    source: Cluster,
    target: Cluster,
    *,
    namespace: str | None = None,
    workers: int = 8,
    progress: Callable[[str, int, int], None] | None = None,
    stop_after: str | None = None,
    origin: str | None = None,
    before_moving: Callable[[], None] | None = None,
) -> PivotReport:
    """Move the hosts; raises :class:`Refused` or :class:`Interrupted`.

    ``progress`` is told each host's line as it is done, with the count done and the
    total (default: the line printed). ``origin`` names the source on the copies while
    they move (default: its API server, or its store's file); ``before_moving`` is
    called once the checks passed, before the first host is paused.
    """
    began = time.monotonic()
    origin = origin or origin_of(source)
    report = PivotReport()
    hosts, _ = source.list(HOSTS, namespace)
    in_target = {
        (h["metadata"]["namespace"], h["metadata"]["name"]): h
        for h in _list_or_none(target)
        if namespace is None or h["metadata"]["namespace"] == namespace
    }
    problems = _preflight(source, target, hosts, in_target, origin)
    if problems:
        raise Refused("\n".join(problems), before_any_write=True)
    if before_moving is not None:
        before_moving()
    report.crds_created = ensure_crds(target)
    if stop_after == "crds":
        raise Interrupted("stopped after crds")
    report.namespaces_created = ensure_namespaces(
        target, (h["metadata"]["namespace"] for h in hosts)
    )
    users = SecretUsers(hosts)
    keys = [(h["metadata"]["namespace"], h["metadata"]["name"]) for h in hosts]
    # hosts an interrupted run from this source released but had not unpaused yet
    keys += sorted(k for k, h in in_target.items() if moving_from(h, origin) and k not in keys)
    moves = [Move(source, target, ns, name, origin, users) for ns, name in keys]
    lock = threading.Lock()
    finished = 0
    tell = progress or _print_line

    def move(one: Move) -> Move:
        nonlocal finished
        one.run(stop_after)
        with lock:
            finished += 1
            tell(_line(one), finished, len(moves))
        return one

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(move, one) for one in moves]
        try:
            for future in as_completed(futures):
                report.moved.append(future.result())
        except BaseException:
            for pending in futures:
                pending.cancel()
            raise
    report.seconds = time.monotonic() - began
    return report


def origin_of(source: Cluster) -> str:
    """How the copies name their source: its API server, or the file of its store."""
    host = getattr(source, "host", None)
    if host:
        return str(host)
    path = getattr(source, "path", None)
    return f"file://{Path(path).resolve()}" if path else "an in-memory store"


def _preflight(
    source: Cluster,
    target: Cluster,
    hosts: list[Obj],
    targets: dict[tuple[str, str], Obj],
    origin: str,
) -> list[str]:
    """Every reason to refuse, found by reading only: one line per object."""
    problems = []
    seen_secrets: set[tuple[str, str]] = set()
    for host in hosts:
        meta = host["metadata"]
        key = (meta["namespace"], meta["name"])
        why = conflict(host, targets.get(key), origin)
        if why:
            problems.append(why)
        name = credentials_name(host)
        if not name or (meta["namespace"], name) in seen_secrets:
            continue
        seen_secrets.add((meta["namespace"], name))
        wanted = get_or_none(source, SECRETS, meta["namespace"], name)
        if wanted is not None:
            why = secret_conflict(wanted, get_or_none(target, SECRETS, meta["namespace"], name))
            if why:
                problems.append(why)
    return problems


def _list_or_none(target: Cluster) -> list[Obj]:
    """The target's Hosts; none when it does not know the kind yet (no CRD)."""
    try:
        return list(target.list(HOSTS, None)[0])
    except ApiError as err:
        if err.code == 404:
            return []
        raise


def _line(move: Move) -> str:
    did = ", ".join(move.done) or "already moved, nothing to do"
    paused = move.paused_seconds
    return f"{move.key}: {did}" + (f" (paused {paused:.2f}s)" if paused is not None else "")


__all__ = ["Interrupted", "PivotReport", "Refused", "TargetError", "pivot"]
