"""At most N servicing runs at a time in each node pool (``--servicing-max-unavailable``).

A host of ``servicingPolicy: rolling`` asks for a slot when its run would start
(:meth:`ServiceSlots.may_start`, called by the machine through ``HostInput.service_slot``)
and holds it while its run is under way; after each of its reconciles the slot is kept or
given back (:meth:`ServiceSlots.settle`), and a host that waited for one in that pool is
queued again. A host with no Node is in the pool ``""``. As a MachineConfigPool's
``maxUnavailable`` does, this bounds how much of a pool is out of service at once.

Slots are counted in memory: after a restart, the runs under way are counted as their
hosts' first reconciles come round, so for those few seconds a waiting host may start
beside them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class ServiceSlots:
    def __init__(self, per_pool: int, wake: Callable[[str], None]) -> None:
        self.per_pool = per_pool
        self.wake = wake  # queues a host's key again
        self._running: dict[str, set[str]] = {}
        self._waiting: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def may_start(self, key: str, pool: str) -> bool:
        """Whether ``key`` may start its run now; if so the slot is its until it settles."""
        with self._lock:
            running = self._running.setdefault(pool, set())
            if key in running or len(running) < self.per_pool:
                running.add(key)
                self._waiting.get(pool, set()).discard(key)
                return True
            self._waiting.setdefault(pool, set()).add(key)
            return False

    def settle(self, key: str, pool: str, *, active: bool) -> None:
        """After a reconcile: keep the slot while the run is under way, else give it back
        and queue the hosts that waited for one in the pool."""
        with self._lock:
            for other, running in self._running.items():
                if other != pool:
                    running.discard(key)  # its Node moved to another pool
            running = self._running.setdefault(pool, set())
            if active:
                running.add(key)
                return
            if key not in running:
                return
            running.discard(key)
            waiting = sorted(self._waiting.get(pool, ()))
        for other in waiting:
            self.wake(other)

    def running(self, pool: str) -> int:
        with self._lock:
            return len(self._running.get(pool, ()))
