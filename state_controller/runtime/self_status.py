"""Keep the ``HostStateController`` object: this replica's entry in it, and the whole
status around that entry (:mod:`..health.summary`).

Every replica that reconciles runs one, on a thread of its own: every ``interval``
seconds it counts its books, reads the object (and, sharded, the shards' Leases) from
its caches, and writes the status if it differs, with the resourceVersion it was read
at; on a conflict (another replica wrote first) it reads again and decides anew, never
writing over an entry it has not seen. So a count that moves is written at most once
per interval, and a controller at rest writes nothing. A Lease that expires or dies
changes the status by time alone, which the periodic look notices.

An installation whose CRDs predate the object (no ``hoststatecontrollers`` resource)
is told so once, and the controller runs on without it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..api import API_VERSION
from ..api.controller_status import PoolShare
from ..api.hoststate import Mode
from ..api.objects import Obj
from ..cluster.interface import (
    CONTROLLERS,
    LEASES,
    AlreadyExists,
    ApiError,
    Cluster,
    NotFound,
)
from ..health.summary import (
    ProvisionerSeen,
    Share,
    controller_status,
    member_entry,
    others_pool_shares,
)
from ..sharding.leases import Shard
from ..sharding.members import Members, judged_shards
from .machinery.informer import Informer
from .machinery.outages import log_failure
from .machinery.reporting import Reporter
from .writing.status_writer import OnConflict, Outcome, StatusWriter

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 5.0  # seconds between looks: a count on the object is this late at most


class SelfStatus:
    def __init__(
        self,
        cluster: Cluster,
        *,
        name: str,
        member: str,
        shard: str,
        lease_namespace: str,
        members: Members | None = None,
        share: Callable[[float], Share],
        synced: Callable[[], bool],
        provisioner: Callable[[], ProvisionerSeen],
        mode: Mode,
        version: str,
        reporter: Reporter,
        interval: float = DEFAULT_INTERVAL,
        on_pools: Callable[[set[str]], None] = lambda names: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cluster = cluster
        self.name = name  # the object's: one per installation
        self.member = member  # this replica's entry
        self.shard = shard
        self.members = members  # the configured shards: only their Leases are shown
        self.share = share
        self.synced = synced
        self.provisioner = provisioner
        self.mode = mode
        self.mode_since = clock()
        self.version = version
        self.reporter = reporter
        self.interval = interval
        self.clock = clock
        self.objects = Informer(cluster, CONTROLLERS, None, handlers=[self._on_object])
        self.on_pools = on_pools  # the NodePools whose other shares changed
        self._others_status: dict[str, Any] | None = None  # the object's status last seen
        self._others_pools: dict[str, list[PoolShare]] = {}
        self._pools_lock = threading.Lock()
        self.leases = (
            Informer(cluster, LEASES, lease_namespace, handlers=[self._on_lease]) if shard else None
        )
        self.since = clock()
        self.status: dict[str, Any] = {}  # the status last written or found (metrics read it)
        self.statuses = StatusWriter(cluster, reporter)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if not self._installed():
            return
        self.since = self.clock()
        informers = [self.objects] + ([self.leases] if self.leases is not None else [])
        for informer in informers:
            informer.start()
        self._thread = threading.Thread(target=self._run, name="self-status", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.objects.stop()
        if self.leases is not None:
            self.leases.stop()

    def _on_object(self, key: str, obj: Obj | None) -> None:
        if key == self.name:
            self._note_others((obj or {}).get("status"))

    def _on_lease(self, key: str, obj: Obj | None) -> None:
        """A shard that dies stops counting at once: its Nodes are moving to another
        shard, whose own share will tell them."""
        with self._pools_lock:
            status = self._others_status
        self._note_others(status)

    def _note_others(self, status: dict[str, Any] | None) -> None:
        """Sharded: note the other shards' shares of the NodePools, and say which changed.
        Called on the object's and the Leases' events, and at each look with the status
        written or found (this replica's own write is no event here; a shard may have
        died by time since)."""
        if self.leases is None:
            return
        with self._pools_lock:
            self._others_status = status
        shares = self._judged_others(status)
        with self._pools_lock:
            before, self._others_pools = self._others_pools, shares
        changed = {n for n in before.keys() | shares.keys() if before.get(n) != shares.get(n)}
        if changed:
            self.on_pools(changed)

    def pool_shares(self, pool: str) -> list[PoolShare]:
        """The other shards' shares of the NodePool ``pool`` (none when not sharded),
        judged against the Leases now: a shard that died since the object was read no
        longer counts, though its entry is still on the object until the next look
        writes it away (meanwhile its Nodes are counted by the shard they moved to)."""
        if self.leases is None:
            return []
        with self._pools_lock:
            status = self._others_status
        return self._judged_others(status).get(pool, [])

    def _judged_others(self, status: dict[str, Any] | None) -> dict[str, list[PoolShare]]:
        shards = self._shards(self.clock()) or {}
        return others_pool_shares(status, member=self.member, shards=shards)

    def _installed(self) -> bool:
        try:
            self.cluster.list(CONTROLLERS, None)
        except NotFound:
            log.warning(
                "no %s resource on the API server (CRDs older than this controller): its "
                "own status is not written; apply api/v1alpha1 to have it",
                CONTROLLERS,
            )
            return False
        except ApiError:
            pass  # unreachable now: the informers retry, and the outage is told once
        return True

    def _run(self) -> None:
        informers = [self.objects] + ([self.leases] if self.leases is not None else [])
        while not self._stopping.is_set():
            if all(i.wait_synced(0) for i in informers):
                try:
                    again = self.tick()
                except Exception as err:
                    log_failure(log, err, "writing the controller's status failed; retrying")
                    again = False
                if again:
                    continue  # lost a race to another replica: decide again at once
            self._stopping.wait(self.interval)

    def tick(self) -> bool:
        """Write the status if it differs from the object's. True: another replica wrote
        in between (a conflict), so look again now."""
        now = self.clock()
        current = self.objects.get(self.name)
        before = (current or {}).get("status") or None
        mine = member_entry(
            name=self.member,
            shard=self.shard,
            since=self.since,
            synced=self.synced(),
            share=self.share(now),
            version=self.version,
            provisioner=self.provisioner(),
        )
        status = controller_status(
            mine=mine,
            others=list((before or {}).get("members") or []),
            shards=self._shards(now),
            mode=self.mode,
            mode_since=self.mode_since,
            version=self.version,
            before=before,
            now=now,
        )
        if current is None and before != status:
            current = self._create()
        if current is None:
            return False
        written = self.statuses.write(
            CONTROLLERS, self.objects, current, status, on_conflict=OnConflict.DECIDE_AGAIN
        )
        if written.outcome is Outcome.CONFLICT:
            return True  # another replica wrote first: decide again on what it wrote
        if written.outcome is Outcome.GONE:  # deleted by someone: made again at the next look
            self.objects.forget(self.name)
            return False
        self.status = status
        self._note_others(status)
        return False

    def _shards(self, now: float) -> dict[str, Shard] | None:
        if self.leases is None:
            return None
        return judged_shards(self.leases.items(), self.members, now)

    def _create(self) -> Obj:
        body = {
            "apiVersion": API_VERSION,
            "kind": CONTROLLERS.kind,
            "metadata": {"name": self.name},
            "spec": {},
        }
        try:
            created = self.cluster.create(CONTROLLERS, body)
        except AlreadyExists:
            created = self.cluster.get(CONTROLLERS, None, self.name)
        self.objects.mutate(created)
        return created
