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

Sharded, each replica counts the runs of the Hosts it owns: a pool spread over N shards
may have up to N times the limit under way, and a Host that moves mid-run is counted by
its new owner only from its first reconcile there (docs/scale.md says to set the flag
with that in mind). A fleet-wide count would need every shard's runs per pool, which
today only the controller's status carries for rollouts (5 s late at most), so it is
not done here; a tenant who flips a Host's shard label does not move it (the sharder
puts the label back, and the shard it named never takes the Host in).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

WOKEN_FOR = 60.0  # seconds a woken host has to reconcile before it is woken again


class ServiceSlots:
    def __init__(
        self,
        per_pool: int,
        wake: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_pool = per_pool
        self.wake = wake  # queues a host's key again
        self.clock = clock
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
            if key in running or len(running) < self.per_pool:
                running.add(key)
                self._waiting.get(pool, {}).pop(key, None)
                return True
            self._waiting.setdefault(pool, {}).setdefault(key, None)
            return False

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
            chosen = self._to_wake(pool)
        for other in chosen:
            self.wake(other)

    def forget(self, key: str) -> None:
        """The host is gone: its slot, its place in the line and its wake with it."""
        with self._lock:
            pools = [p for p, r in self._running.items() if key in r]
            pools += [p for p, w in self._woken.items() if key in w]
            for running in self._running.values():
                running.discard(key)
            for waiting in self._waiting.values():
                waiting.pop(key, None)
            for woken in self._woken.values():
                woken.pop(key, None)
            chosen = [k for pool in set(pools) for k in self._to_wake(pool)]
        for other in chosen:
            self.wake(other)

    def _to_wake(self, pool: str) -> list[str]:
        """The waiting hosts to wake now, marked woken (under the lock)."""
        now = self.clock()
        woken = self._woken.setdefault(pool, {})
        for key, at in list(woken.items()):
            if now - at > WOKEN_FOR:
                del woken[key]
        free = self.per_pool - len(self._running.get(pool, ())) - len(woken)
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
