"""What the sharder does with each host: a pure function of the hosts' labels and the
shards' health.

* no owner: assigned to the ring's choice among the Ready shards;
* owned by a Dead shard, or by a replica with no Lease at all: assigned anew, at once
  (its owner stopped acting before its Lease could turn Dead);
* owned by an Expired shard: left alone until the Lease turns Dead or is renewed;
* owned by a Ready shard the ring no longer names: drained (the drain label), so that the
  owner finishes the reconcile it is in and lets go, removing both labels; the host is then
  unowned and assigned. It is never relabelled while its owner may still act on it;
* relabelled by someone other than the controller (the label went from a shard that is
  still Ready or Expired straight to another, or to none with no drain): the label is put
  back at once (one patch), before anything else is decided for it. The shard it names
  never took the host in (runtime/shards/member.py checks the HostState), so nobody let go
  and no drain is needed: a tenant's flip costs its own patch and this one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from .leases import Health, Shard
from .ring import Ring


@dataclass(frozen=True)
class Labels:
    shard: str = ""  # the owner named by the shard label ("" when none)
    draining: bool = False  # the drain label is set


class Act(StrEnum):
    ASSIGN = "assign"  # set the shard label to ``to``
    DRAIN = "drain"  # set the drain label; the owner lets go
    RESTORE = "restore"  # put the shard label back to ``to``, its owner (nothing else)


@dataclass(frozen=True)
class Move:
    key: str
    act: Act
    to: str = ""  # the new owner (ASSIGN)
    was: str = ""  # the owner it had ("" when none)


def ring_of(shards: Iterable[Shard]) -> Ring:
    return Ring.of(s.name for s in shards if s.health == Health.READY)


def moves(
    hosts: Mapping[str, Labels],
    shards: Iterable[Shard],
    relabelled: Mapping[str, str] | None = None,
) -> list[Move]:
    """What to write so that every host has one live owner, the ring's choice;
    ``relabelled``: the hosts whose shard label someone else changed, and the shard it
    named before."""
    health = {s.name: s.health for s in shards}
    ring = ring_of(Shard(name, h, None) for name, h in health.items())
    if not ring.shards:
        return []  # no replica to give anything to: wait for one
    out: list[Move] = []
    for key, labels in hosts.items():
        before = (relabelled or {}).get(key, "")
        if (
            before
            and before != labels.shard
            and health.get(before) in (Health.READY, Health.EXPIRED)
        ):
            out.append(Move(key, Act.RESTORE, before, labels.shard))
            continue
        owner = ring.owner(key) or ""
        state = health.get(labels.shard, Health.DEAD) if labels.shard else None
        if state is None or state == Health.DEAD:
            out.append(Move(key, Act.ASSIGN, owner, labels.shard))
        elif state == Health.READY and labels.shard != owner and not labels.draining:
            out.append(Move(key, Act.DRAIN, was=labels.shard))
    return out
