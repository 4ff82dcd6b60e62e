"""The sharder: keeps every Host owned by one live replica, the ring's choice.

It watches the shards' Leases (named ``hoststate-shard-<shard>`` in the controller's
namespace) and the Hosts, and after every change, and every ``resync`` seconds (a Lease
turns Expired, then Dead, by time alone), writes what :func:`~..sharding.assign.moves`
decides. Only the configured shards' Leases count, and only as far as they are believed
(:mod:`..sharding.members`: name, holder, renew and duration checked); a Lease refused is
told once and named in :attr:`Sharder.refused`.

* an assignment sets the Host's shard label, the HostState's first (the new owner opens
  the host's book from its HostState, so it should be in that owner's cache before the
  Host is), and takes the drain label away;
* a drain sets the Host's drain label; the owner lets go (removes both labels) when its
  reconcile of the host comes round, and the host is then assigned;
* a put-back sets the Host's shard label to the live shard someone else moved it from
  (this sharder saw the change: the controller never moves a label that way).

Before the hosts of a shard that died by time move, its Lease is taken (``sharding.leases``
says why); a shard whose Lease could not be taken keeps its hosts for the round, as an
expired one does. A taken Lease is deleted once it has expired again and no host names
its shard.

A round judges only the hosts whose labels changed since the last one (their watch events
mark them), unless the shards' health changed (a Lease renewed, expired, died or was
taken: every host is judged again) or ``FULL_EVERY`` seconds went by. Its watch of the
Hosts is metadata-only: it reads labels and resourceVersions (the lead names and UIDs).
Judging every host at every round cost 18 ms a round at 10,000 hosts, rounds ran back to
back while the hosts' events streamed in, and the watch decoded every Host whole: at
3 replicas and 10,000 hosts the replica running the sharder spent 161 CPU s against the
others' 48-50 s; with both changes, 81 s against 46-48 s (benchmarks/shard_scale.py).

Each write carries the resourceVersion it was decided on: a Host that changed since is
decided again on the next round, never written blind. A round's moves are written by
``WRITERS`` threads at once (each host's two patches in order): one after the other, a
dead shard's 338 hosts took 13-17 s to move on a loaded machine (two patches of about
20 ms each), longer than the Lease itself. One sharder acts at a time (the
replicas elect it by Lease); it keeps no state of its own, so a new one takes over from
the labels as they are.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from ...api.objects import Obj
from ...cluster.interface import HOSTS, HOSTSTATES, LEASES, ApiError, Cluster, split_key
from ...sharding.assign import Act, Labels, Move, moves
from ...sharding.leases import (
    DRAIN_LABEL,
    LEASE_PREFIX,
    SHARD_LABEL,
    TAKEN_PREFIX,
    Health,
    Shard,
    micro_time,
)
from ...sharding.members import Members, judge
from ..machinery.informer import Handler, Informer, InformerSet
from ..machinery.outages import log_failure

log = logging.getLogger(__name__)

SHARDER_LEASE = "hoststate-sharder"  # held by the replica that runs the sharder (its
# holder must be a configured replica's identity: Members.may_hold_sharder)
WRITERS = 8  # moves written at once
FULL_EVERY = 60.0  # seconds: every host judged again at least this often, whatever changed


def labels_of(host: Obj) -> Labels:
    labels = host["metadata"].get("labels") or {}
    return Labels(str(labels.get(SHARD_LABEL) or ""), DRAIN_LABEL in labels)


class Sharder:
    def __init__(
        self,
        cluster: Cluster,
        *,
        lease_namespace: str,
        members: Members,
        namespaces: tuple[str, ...] | None = None,
        resync: float = 2.0,
        judge_all_every: float = FULL_EVERY,
        identity: str = "sharder",
        on_host: Handler | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cluster = cluster
        self.lease_namespace = lease_namespace
        self.members = members  # the shards the operator runs: no other Lease is one
        self.identity = identity  # who takes a dead shard's Lease: sharder/<identity>
        self.resync = resync
        self.judge_all_every = judge_all_every
        self.clock = clock
        # ``on_host``: the lead's links of Nodes to every Host (shards/lead.py) read this watch
        handlers = [self._on_host] + ([on_host] if on_host is not None else [])
        # metadata alone (labels, resourceVersion; the lead reads names and UIDs): a Host's
        # spec and status never reach this watch
        self.hosts = InformerSet(cluster, HOSTS, namespaces, handlers=handlers, metadata_only=True)
        self.leases = Informer(cluster, LEASES, lease_namespace, handlers=[self._poke])
        self._changed = threading.Event()
        # key -> (labels, resourceVersion): all a round reads of a Host, kept as they come
        self._seen: dict[str, tuple[Labels, str]] = {}
        self._seen_lock = threading.Lock()
        self._dirty: set[str] = set()  # hosts changed since the last round
        # hosts whose shard label someone else changed -> the shard it named before: put
        # back while that shard is alive (sharding/assign.py)
        self._relabelled: dict[str, str] = {}
        self._judged_health: dict[str, Health] | None = None  # the last round's shards
        self._judged_all_at = -judge_all_every  # time.monotonic() of the last round over all
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._writers = ThreadPoolExecutor(WRITERS, thread_name_prefix="sharder-write")
        self.rounds = 0
        self.written = 0
        self.judged = 0  # hosts judged, over all rounds
        # Leases not believed, as last judged: Lease name -> why (each told once)
        self.refused: dict[str, str] = {}

    def _poke(self, key: str, obj: Obj | None) -> None:
        self._changed.set()

    def _on_host(self, key: str, host: Obj | None, *, ours: bool = False) -> None:
        """A Host's labels as the watch (or, ``ours``, this sharder's own write) tells them."""
        with self._seen_lock:
            if host is None:
                self._seen.pop(key, None)
                self._relabelled.pop(key, None)
            else:
                version = str(host["metadata"]["resourceVersion"])
                known = self._seen.get(key)
                if known is None or int(version) >= int(known[1]):  # never an older copy
                    labels = labels_of(host)
                    self._seen[key] = (labels, version)
                    if ours:  # a label this sharder wrote is nobody else's change
                        self._relabelled.pop(key, None)
                    elif known is not None:
                        self._note_relabel(key, known[0], labels)
            self._dirty.add(key)
        self._changed.set()

    def _note_relabel(self, key: str, was: Labels, now: Labels) -> None:
        """Remember the owner a host had when someone else changed its shard label (under
        the lock). The controller moves a label only from none (an assignment), to none
        after a drain (the owner let go), or from a dead shard (this sharder's own write,
        forgotten once written); any other change is someone else's."""
        if now.shard == self._relabelled.get(key):
            del self._relabelled[key]  # back where it was
        elif was.shard and now.shard != was.shard and not (was.draining and not now.shard):
            self._relabelled.setdefault(key, was.shard)

    def shards(self) -> list[Shard]:
        """The configured shards' health from their Leases; a Lease the checks of
        :mod:`..sharding.members` refuse is told once (a warning) and not believed."""
        now = self.clock()
        out: list[Shard] = []
        refused: dict[str, str] = {}
        for lease in self.leases.items():
            name = str(lease["metadata"]["name"])
            if not name.startswith(LEASE_PREFIX):
                continue
            shard, why = judge(lease, self.members, now)
            if why:
                refused[name] = why
                if self.refused.get(name) != why:
                    log.warning("Lease %s/%s not believed: %s", self.lease_namespace, name, why)
            if shard is not None:
                out.append(shard)
        self.refused = refused
        return out

    def start(self, *, sync_timeout: float = 60.0) -> None:
        for informer in (self.leases, self.hosts):
            informer.start()
            if not informer.wait_synced(sync_timeout):
                raise TimeoutError(f"cache of {informer.resource} did not sync in {sync_timeout}s")
        self._thread = threading.Thread(target=self._run, name="sharder", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._changed.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._writers.shutdown(wait=True, cancel_futures=True)
        self.hosts.stop()
        self.leases.stop()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._changed.wait(self.resync)
            self._changed.clear()
            if self._stopping.is_set():
                return
            try:
                self.round()
            except Exception as err:  # the next round decides again from the caches
                log_failure(log, err, "sharding round failed; deciding again")

    def round(self) -> list[Move]:
        """Decide from the caches and write the moves; the moves written."""
        shards = self.shards()
        holding = {s.name for s in shards if s.died_holding and not self._take(s)}
        # a Lease not taken: its hosts wait a round, as an expired shard's do
        shards = [replace(s, health=Health.EXPIRED) if s.name in holding else s for s in shards]
        health = {s.name: s.health for s in shards}
        began = time.monotonic()
        with self._seen_lock:
            every = (
                health != self._judged_health or began - self._judged_all_at >= self.judge_all_every
            )
            keys = self._seen.keys() if every else self._dirty & self._seen.keys()
            seen = {key: self._seen[key] for key in keys}
            relabelled = {k: self._relabelled[k] for k in seen if k in self._relabelled}
            self._dirty.clear()
            named = (
                {labels.shard for labels, _ in self._seen.values()}
                if any(s.taken for s in shards)
                else set()
            )
        self._judged_health = None  # should this round fail, the next one judges every host
        hosts = {key: labels for key, (labels, _) in seen.items()}
        decided = moves(hosts, shards, relabelled)
        written = list(
            self._writers.map(lambda move: self._write(move, seen[move.key][1]), decided)
        )
        done = [move for move, ok in zip(decided, written, strict=True) if ok]
        with self._seen_lock:  # not written: judged again next round (no event may come)
            self._dirty.update(m.key for m, ok in zip(decided, written, strict=True) if not ok)
        self._forget_taken(shards, named)
        self._judged_health = health
        if every:
            self._judged_all_at = began
        self.judged += len(hosts)
        self.written += len(done)
        self.rounds += 1  # last: a round counted has its writes counted
        return done

    def _take(self, shard: Shard) -> bool:
        """Hold a dead shard's Lease (with the resourceVersion it was judged dead at)."""
        name = LEASE_PREFIX + shard.name
        lease = self.leases.get(f"{self.lease_namespace}/{name}")
        if lease is None:
            return False
        now = micro_time(self.clock())
        spec = lease.get("spec") or {}
        taken = {
            "holderIdentity": TAKEN_PREFIX + self.identity,
            "leaseDurationSeconds": round(self.members.lease_duration),
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": int(spec.get("leaseTransitions") or 0) + 1,
        }
        version = lease["metadata"]["resourceVersion"]
        patch = {"metadata": {"resourceVersion": version}, "spec": taken}
        try:
            written = self.cluster.patch(LEASES, self.lease_namespace, name, patch)
        except ApiError as err:  # renewed or changed since it was read: judged again
            log.info("shard %s: its Lease not taken (%s); its hosts stay", shard.name, err)
            return False
        self.leases.mutate(written)
        log.warning(
            "shard %s: no renew since %s; took its Lease (held by %s) to move its hosts",
            shard.name,
            spec.get("renewTime") or "ever",
            shard.holder,
        )
        return True

    def _forget_taken(self, shards: list[Shard], named: set[str]) -> None:
        """Delete the Leases taken once they expired and no host names their shard
        (``named``: the shards the hosts' labels name)."""
        now = self.clock()
        for shard in shards:
            if not shard.taken or shard.name in named:
                continue
            lease = self.leases.get(f"{self.lease_namespace}/{LEASE_PREFIX}{shard.name}")
            duration = float(((lease or {}).get("spec") or {}).get("leaseDurationSeconds") or 0)
            if lease is None or shard.renewed is None or now < shard.renewed + duration:
                continue
            try:
                self.cluster.delete(LEASES, self.lease_namespace, LEASE_PREFIX + shard.name)
            except ApiError as err:
                log.debug("shard %s: its Lease not deleted: %s", shard.name, err)
                continue
            self.leases.forget(f"{self.lease_namespace}/{LEASE_PREFIX}{shard.name}")
            log.info("shard %s: no host left; its Lease deleted", shard.name)

    def _write(self, move: Move, version: str) -> bool:
        namespace, name = split_key(move.key)
        try:
            if move.act is Act.DRAIN:
                labels: dict[str, str | None] = {DRAIN_LABEL: "true"}
            elif move.act is Act.RESTORE:  # its HostState still names it: only the Host
                labels = {SHARD_LABEL: move.to}
            else:
                labels = {SHARD_LABEL: move.to, DRAIN_LABEL: None}
                self._label_hoststate(namespace, name, move.to)
            patch = {"metadata": {"labels": labels, "resourceVersion": version}}
            written = self.cluster.patch(HOSTS, namespace, name, patch)
        except ApiError as err:  # changed since (409), or gone (404): decided again
            log.debug("sharding %s: %s not written: %s", move.key, move.act, err)
            return False
        self._on_host(move.key, written, ours=True)  # decided from this copy till the watch's
        log.info(
            "sharding %s: %s%s",
            move.key,
            move.act,
            f" to {move.to}" + (f" (from {move.was})" if move.was else "") if move.to else "",
        )
        return True

    def _label_hoststate(self, namespace: str | None, name: str, shard: str) -> None:
        try:
            patch = {"metadata": {"labels": {SHARD_LABEL: shard}}}
            self.cluster.patch(HOSTSTATES, namespace, name, patch)
        except ApiError as err:
            if err.code != 404:  # none yet: its owner creates it with the label
                raise
