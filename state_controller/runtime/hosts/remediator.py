"""Remediation inside a Host's reconcile: what the policy says of the host's Node now.

Called twice per reconcile of a host whose pool is remediated: before the machine's step,
to ask it for a power-cycle (``HostInput.power_cycle``) on a verdict reached from what the
book and the Node show at this instant; and after the step and the Node's reading, to keep
the verdict that now holds (an attempt counted, the Node back) and to say when to look
again. A host that was never in trouble costs one reading of its Node's readiness.

The pool's health is the NodeIndex's count of its Nodes not Ready, kept as Node events
arrive: all the Nodes of a pool that lose their reboot at once are counted from the first
verdict on, not as their hosts' reconciles come round. A host held because too much of its
pool is unhealthy is looked at again when a Node of the pool changes (:meth:`held_in`),
not by a timer.
"""

from __future__ import annotations

import threading

from ...books.book import Book
from ...remediation.policy import Action, PoolHealth, Verdict, decide
from ...remediation.situation import (
    Readiness,
    blocked_by,
    settle,
    situation,
    trouble_of,
)
from ...updates.adapters.capi import remediation_hold
from ...updates.signals import NodeSignals
from ..config import ControllerConfig
from ..indexes.nodes import NodeIndex


class Remediator:
    def __init__(self, config: ControllerConfig, nodes: NodeIndex) -> None:
        assert config.remediation is not None
        self.policy = config.remediation
        self.pools = config.remediation_pools
        self.stuck = config.stuck
        self.nodes = nodes
        self._held: dict[str, set[str]] = {}  # pool -> keys of the hosts held in it
        self._lock = threading.Lock()

    def consider(
        self, book: Book, node: NodeSignals | None, *, deleting: bool, now: float
    ) -> Verdict | None:
        """The verdict on the host now, kept in its book (None: not remediated here)."""
        if node is None or (self.pools is not None and node.pool not in self.pools):
            if book.facts.remediation is not None:  # its Node went, or left the pool
                book.note(now=now, remediation=None)
                with self._lock:
                    for keys in self._held.values():
                        keys.discard(book.key)
            return None
        readiness = Readiness(node.ready, node.ready_since, node.info.boot_id)
        trouble, since = trouble_of(book, readiness, self.stuck, now)
        if trouble is None and book.facts.remediation is None:
            return None
        blocked = ""
        if trouble is not None:  # a link the Node itself may have forged: not on its word
            blocked = (
                blocked_by(book, deleting=deleting)
                or remediation_hold(node.capi)
                or self.nodes.link_doubt(node.name)
            )
        size, not_ready = self.nodes.pool_health(node.pool)
        if trouble is not None and node.ready == "True":
            not_ready += 1  # stuck rebooting, yet Ready: unhealthy all the same
        verdict = decide(self.policy, situation(book, trouble, since, blocked=blocked),
                         PoolHealth(size, not_ready), now)  # fmt: skip
        settle(book, verdict, trouble, since, now)
        self._hold(node.pool, book.key, verdict.action is Action.HELD)
        return verdict

    def _hold(self, pool: str, key: str, held: bool) -> None:
        with self._lock:
            if held:
                self._held.setdefault(pool, set()).add(key)
            elif key in self._held.get(pool, ()):
                self._held[pool].discard(key)

    def held_in(self, pool: str) -> list[str]:
        """The hosts held in ``pool``: a change of one of its Nodes may free them."""
        with self._lock:
            return sorted(self._held.get(pool, ()))

    @staticmethod
    def wake_after(verdict: Verdict | None, now: float) -> float | None:
        """Seconds until the host must be looked at again for its remediation."""
        if verdict is None:
            return None
        if verdict.action is Action.POWER_CYCLE:
            return 0.0
        if verdict.retry_at is not None:
            return max(verdict.retry_at - now, 0.0)
        return None
