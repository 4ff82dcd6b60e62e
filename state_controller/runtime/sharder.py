"""The sharder: keeps every Host owned by one live replica, the ring's choice.

It watches the shards' Leases (named ``hoststate-shard-<shard>`` in the controller's
namespace) and the Hosts, and after every change, and every ``resync`` seconds (a Lease
turns Expired, then Dead, by time alone), writes what :func:`~..sharding.assign.moves`
decides:

* an assignment sets the Host's shard label, the HostState's first (the new owner opens
  the host's book from its HostState, so it should be in that owner's cache before the
  Host is), and takes the drain label away;
* a drain sets the Host's drain label; the owner lets go (removes both labels) when its
  reconcile of the host comes round, and the host is then assigned.

Each write carries the resourceVersion it was decided on: a Host that changed since is
decided again on the next round, never written blind. One sharder acts at a time (the
replicas elect it by Lease); it keeps no state of its own, so a new one takes over from
the labels as they are.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..api.objects import Obj
from ..cluster.interface import HOSTS, HOSTSTATES, LEASES, ApiError, Cluster, split_key
from ..sharding.assign import Act, Labels, Move, moves
from ..sharding.leases import DRAIN_LABEL, LEASE_PREFIX, SHARD_LABEL, Shard, shard_of
from .informer import Informer, InformerSet
from .outages import log_failure

log = logging.getLogger(__name__)

SHARDER_LEASE = "hoststate-sharder"  # held by the replica that runs the sharder


def labels_of(host: Obj) -> Labels:
    labels = host["metadata"].get("labels") or {}
    return Labels(str(labels.get(SHARD_LABEL) or ""), DRAIN_LABEL in labels)


class Sharder:
    def __init__(
        self,
        cluster: Cluster,
        *,
        lease_namespace: str,
        namespaces: tuple[str, ...] | None = None,
        resync: float = 2.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cluster = cluster
        self.resync = resync
        self.clock = clock
        self.hosts = InformerSet(cluster, HOSTS, namespaces, handlers=[self._on_host])
        self.leases = Informer(cluster, LEASES, lease_namespace, handlers=[self._poke])
        self._changed = threading.Event()
        # key -> (labels, resourceVersion): all a round reads of a Host, kept as they come
        self._seen: dict[str, tuple[Labels, str]] = {}
        self._seen_lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.rounds = 0
        self.written = 0

    def _poke(self, key: str, obj: Obj | None) -> None:
        self._changed.set()

    def _on_host(self, key: str, host: Obj | None) -> None:
        with self._seen_lock:
            if host is None:
                self._seen.pop(key, None)
            else:
                version = str(host["metadata"]["resourceVersion"])
                known = self._seen.get(key)
                if known is None or int(version) >= int(known[1]):  # never an older copy
                    self._seen[key] = (labels_of(host), version)
        self._changed.set()

    def shards(self) -> list[Shard]:
        now = self.clock()
        return [
            shard_of(lease, now)
            for lease in self.leases.items()
            if str(lease["metadata"]["name"]).startswith(LEASE_PREFIX)
        ]

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
        with self._seen_lock:
            seen = dict(self._seen)
        decided = moves({key: labels for key, (labels, _) in seen.items()}, self.shards())
        done = [move for move in decided if self._write(move, seen[move.key][1])]
        self.rounds += 1
        self.written += len(done)
        return done

    def _write(self, move: Move, version: str) -> bool:
        namespace, name = split_key(move.key)
        try:
            if move.act is Act.DRAIN:
                labels: dict[str, str | None] = {DRAIN_LABEL: "true"}
            else:
                labels = {SHARD_LABEL: move.to, DRAIN_LABEL: None}
                self._label_hoststate(namespace, name, move.to)
            patch = {"metadata": {"labels": labels, "resourceVersion": version}}
            written = self.cluster.patch(HOSTS, namespace, name, patch)
        except ApiError as err:  # changed since (409), or gone (404): decided again
            log.debug("sharding %s: %s not written: %s", move.key, move.act, err)
            return False
        self._on_host(move.key, written)  # decided from this copy until the watch tells more
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
