"""A pool's rollout in a few numbers, as a MachineConfigPool counts its machines.

The counts are built from shares (:class:`~..api.controller_status.PoolShare`): what
the books of one replica can tell about the Nodes they follow. One replica has one
share of every pool; shards each have theirs, and the replica that keeps the NodePools
adds them up. The counts a Node's object alone tells (how many, how many not Ready or
cordoned) are read from the Nodes, which every replica watches, so a Node between two
shards (its Host moving) is never missing from them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..api.controller_status import ConfigCount, PoolShare
from ..api.timefmt import parse_rfc3339, rfc3339_ms
from ..api.updates import UpdateStep, in_progress
from ..books.records import UpdateCursor
from .signals import NodeSignals


def down(node: NodeSignals) -> bool:
    """Unavailable whatever its update: not Ready, or cordoned."""
    return node.ready != "True" or node.unschedulable


def pool_share(pool: str, members: Iterable[tuple[NodeSignals, UpdateCursor]]) -> PoolShare:
    """The share of ``pool`` told by these Nodes, each with its update as a book has it.

    The target is the configuration of the update that began last (a MachineConfigPool
    knows its target; here it is read from the Nodes): "" when no update named one
    (none seen yet, or kubelet upgrades with no agent to name them).
    """
    at_rest: Counter[str] = Counter()
    updating = degraded = busy = 0
    target, began = "", None
    for node, update in members:
        started = update.started_at
        if started is not None and update.desired and (began is None or started > began):
            target, began = update.desired, started
        if update.step == UpdateStep.UPDATED:
            at_rest[update.current] += 1
        elif update.step == UpdateStep.DEGRADED:
            degraded += 1
        elif in_progress(update.step):
            updating += 1
        if in_progress(update.step) and not down(node):
            busy += 1
    return PoolShare(
        pool=pool,
        target=target,
        target_since=rfc3339_ms(began) if began is not None else "",
        updated=[ConfigCount(config=c, machines=n) for c, n in sorted(at_rest.items())],
        updating=updating,
        degraded=degraded,
        busy=busy,
    )


def pool_status(shares: Iterable[PoolShare], *, machines: int, down: int) -> dict[str, object]:
    """The NodePool status of a pool of ``machines`` Nodes, ``down`` of them not Ready or
    cordoned, from every share of it.

    Updated: at rest at the pool's target configuration (any, if none is known), so a
    node the rollout has not reached yet is not counted; updating: an update in progress
    and not degraded; unavailable: not Ready, cordoned, or updating (degraded included):
    it cannot be counted on for work.
    """
    shares = list(shares)
    started = [(parse_rfc3339(s.target_since) or 0.0, s.target) for s in shares if s.target]
    target = max(started)[1] if started else ""
    updated = sum(c.machines for s in shares for c in s.updated if target in ("", c.config))
    return {
        "desiredConfig": target,
        "machineCount": machines,
        "updatedMachineCount": updated,
        "updatingMachineCount": sum(s.updating for s in shares),
        "degradedMachineCount": sum(s.degraded for s in shares),
        "unavailableMachineCount": down + sum(s.busy for s in shares),
    }


def pool_summary(members: Iterable[tuple[NodeSignals, UpdateCursor | None]]) -> dict[str, object]:
    """The NodePool status of these Nodes, each with its update (None: not read yet), all
    told by one replica."""
    members = list(members)
    told = [(node, update) for node, update in members if update is not None]
    return pool_status(
        [pool_share("", told)],
        machines=len(members),
        down=sum(1 for node, _ in members if down(node)),
    )
