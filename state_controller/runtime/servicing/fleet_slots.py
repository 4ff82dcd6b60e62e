"""Sharded, the servicing slots of each pool are counted across every replica, on the
ledger Lease (:mod:`..sharding.service_claims` says what it holds and why).

One watch of the Leases in the controller's namespace serves both what this needs: the
ledger, and the shards' own Leases, which say whose claims still count (judged as the
sharder judges them). A claim is written with the resourceVersion its Lease was read at;
a conflict is read again and decided anew, so two replicas never both take the last slot
of a pool. Asking costs no write when the watch already shows the pool full, and keeping
or giving back a slot costs none when the Lease already says so; a host's reconciles
otherwise never touch it.

Every change of these Leases (a claim taken away, a shard dying) is passed to
``on_change``: the replica wakes its hosts waiting for a slot, as many as are free. A
slot freed elsewhere thus wakes a waiter here within one watch event.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ...api.objects import Obj
from ...cluster.interface import (
    HOSTS,
    LEASES,
    AlreadyExists,
    ApiError,
    Cluster,
    Conflict,
    NotFound,
    split_key,
)
from ...sharding.leases import Health
from ...sharding.members import Members, judged_shards
from ...sharding.service_claims import (
    CLAIMS_MAX,
    LEDGER_LEASE,
    Claim,
    Claims,
    claims_patch,
    held,
    ledger_lease,
    read_claims,
    with_claim,
    without_claim,
)
from ..machinery.informer import Informer
from ..machinery.outages import log_failure

log = logging.getLogger(__name__)

TRIES = 5  # writes tried against others' at once before the host waits for the next change


class FleetSlots:
    def __init__(
        self,
        cluster: Cluster,
        *,
        namespace: str,
        shard: str,
        members: Members | None,
        per_pool: int,
        on_change: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.shard = shard
        self.members = members
        self.per_pool = per_pool
        self.on_change = on_change
        self.clock = clock
        self.leases = Informer(cluster, LEASES, namespace, handlers=[self._on_lease])
        self._key = f"{namespace}/{LEDGER_LEASE}"
        self._parsed: tuple[int | None, dict[str, Claim]] = (None, {})
        self._write_lock = threading.Lock()  # this replica's writes, one at a time

    def _on_lease(self, key: str, obj: Obj | None) -> None:
        self.on_change()

    # -- reading ------------------------------------------------------------------------

    def claims(self) -> dict[str, Claim]:
        """The claims as the watch last showed them (parsed once per resourceVersion)."""
        version = self.leases.version(self._key)
        cached_version, cached = self._parsed
        if version != cached_version or version is None:
            cached = read_claims(self.leases.get(self._key))
            self._parsed = (version, cached)
        return dict(cached)

    def live(self) -> Callable[[str], bool]:
        """Whether a shard's claims count now: its Lease alive, or only expired."""
        shards = judged_shards(self.leases.items(), self.members, self.clock())

        def counts(shard: str) -> bool:
            found = shards.get(shard)
            return found is not None and found.health != Health.DEAD

        return counts

    def free(self, pool: str) -> int:
        """Slots of ``pool`` no live shard holds, as the watch shows them."""
        return self.per_pool - held(self.claims(), pool, self.live())

    # -- writing ------------------------------------------------------------------------

    def claim(self, key: str, pool: str) -> bool:
        """Take a slot of ``pool`` for ``key`` if one is free fleet-wide (or it holds one)."""
        return self._write(key, pool, limit=True)

    def hold(self, key: str, pool: str) -> None:
        """``key``'s run is under way here: claimed under this shard whatever the count (a
        run begun under another owner, or before a restart, cannot be taken back)."""
        if self.claims().get(key) != Claim(pool, self.shard):
            self._write(key, pool, limit=False)

    def release(self, key: str) -> None:
        """``key``'s run is over: its claim taken away, whichever shard wrote it (this
        replica owns the Host now: a claim written by its owner before is its own)."""
        if key in self.claims():
            self._write(key, None, limit=False)

    def let_go(self, key: str) -> None:
        """``key`` left this replica: deleted (its claim goes) or moved to another shard
        (its claim stays: the run goes on under the new owner, who writes it again)."""
        found = self.claims().get(key)
        if found is None or found.shard != self.shard:
            return
        namespace, name = split_key(key)
        try:
            self.cluster.get(HOSTS, namespace, name)
        except NotFound:
            self._write(key, None, limit=False)
        except ApiError as err:
            log_failure(log, err, "servicing ledger: reading Host %s", key)

    def _write(self, key: str, pool: str | None, *, limit: bool) -> bool:
        """Set (``pool``) or take away (None) ``key``'s claim; False when the pool is full
        (``limit``), the ledger is at its bound, or the API server could not be written."""
        mine = Claim(pool, self.shard) if pool is not None else None
        with self._write_lock:
            for _ in range(TRIES):
                lease = self.leases.get(self._key)
                claims, live = read_claims(lease), self.live()
                if claims.get(key) == mine:
                    return True
                if mine is not None:
                    if limit and held(claims, mine.pool, live, but=key) >= self.per_pool:
                        return False
                    if key not in claims and len(claims) >= CLAIMS_MAX:
                        log.warning("servicing ledger full (%d claims): %s waits", CLAIMS_MAX, key)
                        return False
                    wanted = with_claim(claims, key, mine, live)
                else:
                    wanted = without_claim(claims, key, live)
                try:
                    written = self._send(lease, wanted)
                except (Conflict, AlreadyExists, NotFound):
                    self._refresh()
                    continue
                except ApiError as err:
                    log_failure(log, err, "servicing ledger %s: writing %s's claim", self._key, key)
                    return False
                self.leases.mutate(written)
                return True
        log.info("servicing ledger: %s's claim lost %d races in a row; it waits", key, TRIES)
        return False

    def _send(self, lease: Obj | None, claims: Claims) -> Obj:
        if lease is None:
            return self.cluster.create(LEASES, ledger_lease(self.namespace, claims))
        version = str(lease["metadata"]["resourceVersion"])
        return self.cluster.patch(
            LEASES, self.namespace, LEDGER_LEASE, claims_patch(claims, version)
        )

    def _refresh(self) -> None:
        """Read the ledger from the API server (the watch may not have caught up)."""
        try:
            self.leases.mutate(self.cluster.get(LEASES, self.namespace, LEDGER_LEASE))
        except NotFound:
            self.leases.forget(self._key)
        except ApiError as err:
            log_failure(log, err, "servicing ledger %s: reading it", self._key)
