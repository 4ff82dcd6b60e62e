"""At most N servicing runs at a time in each node pool (``--servicing-max-unavailable``).

A host of ``servicingPolicy: rolling`` asks for a slot when its run would start
(:meth:`ServiceSlots.may_start`, called by the machine through ``HostInput.service_slot``)
and holds it while its run is under way; after each of its reconciles the slot is kept or
given back (:meth:`ServiceSlots.settle`). A host with no Node is in the pool ``""``. As a
MachineConfigPool's ``maxUnavailable`` does, this bounds how much of a pool is out of
service at once.

A freed slot wakes as many waiting hosts as there are free slots, the longest waiting
first, not every host that waits. Measured with benchmarks/firmware_rollout_scale.py
(1,000 hosts, 50 at a time): waking all of them at each freed slot queued some 950
reconciles per run that ended, and the backlog put the HostState's ``serviced`` p99 at
16 s behind the machine. A woken host that does not take its slot (its spec changed)
settles without it, and the next waiting host is woken then; one that never reconciles
again (deleted) is forgotten and the next is woken; a wake not answered in ``WOKEN_FOR``
seconds is sent again.

Slots are counted in memory: after a restart, the runs under way are counted as their
hosts' first reconciles come round, so for those few seconds a waiting host may start
beside them.

Sharded, a pool's Hosts are spread over every replica, so each slot is also claimed on
the fleet-wide ledger (:mod:`.fleet_slots`): a host starts only when its replica has a
slot free and the ledger too. A run under way is written there by whichever replica owns
its Host now (one that moved mid-run is claimed by its new owner at its first reconcile
there), and a slot freed by another replica wakes this one's waiting hosts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .fleet_slots import FleetSlots

WOKEN_FOR = 60.0  # seconds a woken host has to reconcile before it is woken again


class ServiceSlots:
    def __init__(
        self,
        per_pool: int,
        wake: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        fleet: FleetSlots | None = None,
    ) -> None:
        self.per_pool = per_pool
        self.wake = wake  # queues a host's key again
        self.clock = clock
        self.fleet = fleet  # sharded: the slots every replica counts
        self._running: dict[str, set[str]] = {}
        self._waiting: dict[str, dict[str, None]] = {}  # in the order they began to wait
        self._woken: dict[str, dict[str, float]] = {}  # woken, not reconciled since: when
        self._asked: set[str] = set()  # asked for a slot in the reconcile under way
        self._lock = threading.Lock()

    def may_start(self, key: str, pool: str) -> bool:
        """Whether ``key`` may start its run now; if so the slot is its until it settles."""
        with self._lock:
            self._asked.add(key)
            running = self._running.setdefault(pool, set())
            if key in running:
                self._waiting.get(pool, {}).pop(key, None)
                return True
            if len(running) >= self.per_pool:
                self._waiting.setdefault(pool, {}).setdefault(key, None)
                return False
            if self.fleet is None:
                running.add(key)
                self._waiting.get(pool, {}).pop(key, None)
                return True
        claimed = self.fleet.claim(key, pool)  # a write: not under the lock
        with self._lock:
            if claimed:
                self._running.setdefault(pool, set()).add(key)
                self._waiting.get(pool, {}).pop(key, None)
            else:
                self._waiting.setdefault(pool, {}).setdefault(key, None)
            return claimed

    def settle(self, key: str, pool: str, *, active: bool) -> None:
        """After a reconcile: keep the slot while the run is under way, else give it back;
        then wake as many waiting hosts of the pool as there are free slots."""
        with self._lock:
            for other, running in self._running.items():
                if other != pool:
                    running.discard(key)  # its Node moved to another pool
            if key not in self._asked:  # it no longer waits for a slot (if it did)
                for waiting in self._waiting.values():
                    waiting.pop(key, None)
            self._asked.discard(key)
            for woken in self._woken.values():
                woken.pop(key, None)
            running = self._running.setdefault(pool, set())
            if active:
                running.add(key)
            else:
                running.discard(key)
        if self.fleet is not None:  # a write only when the ledger says otherwise
            if active:
                self.fleet.hold(key, pool)
            else:
                self.fleet.release(key)
        with self._lock:
            chosen = self._to_wake(pool)
        for other in chosen:
            self.wake(other)

    def forget(self, key: str) -> None:
        """The host is gone (or, sharded, moved to another replica): its slot, its place
        in the line and its wake with it."""
        with self._lock:
            pools = [p for p, r in self._running.items() if key in r]
            pools += [p for p, w in self._woken.items() if key in w]
            for running in self._running.values():
                running.discard(key)
            for waiting in self._waiting.values():
                waiting.pop(key, None)
            for woken in self._woken.values():
                woken.pop(key, None)
        if self.fleet is not None:
            self.fleet.let_go(key)
        with self._lock:
            chosen = [k for pool in set(pools) for k in self._to_wake(pool)]
        for other in chosen:
            self.wake(other)

    def wake_freed(self) -> None:
        """The fleet's slots changed (another replica's run ended, a shard died): wake as
        many waiting hosts of each pool as slots are free."""
        with self._lock:
            chosen = [k for pool in list(self._waiting) for k in self._to_wake(pool)]
        for other in chosen:
            self.wake(other)

    def _to_wake(self, pool: str) -> list[str]:
        """The waiting hosts to wake now, marked woken (under the lock). With nobody
        waiting in the pool it costs nothing: it runs after every reconcile, and counting
        the fleet's free slots reads the shards' Leases."""
        if not self._waiting.get(pool):
            return []
        now = self.clock()
        woken = self._woken.setdefault(pool, {})
        for key, at in list(woken.items()):
            if now - at > WOKEN_FOR:
                del woken[key]
        free = self.per_pool - len(self._running.get(pool, ()))
        if self.fleet is not None:
            free = min(free, self.fleet.free(pool))
        free -= len(woken)
        chosen: list[str] = []
        for key in self._waiting.get(pool, {}):
            if len(chosen) >= free:
                break
            if key not in woken:
                chosen.append(key)
                woken[key] = now
        return chosen

    def running(self, pool: str) -> int:
        with self._lock:
            return len(self._running.get(pool, ()))
