"""A shard is a replica holding its own Lease; how alive it is, read from that Lease.

Each replica holds a Lease named ``hoststate-shard-<its shard name>``, renewed as leader
election renews (the official client's, on a Lease of its own). From the Lease
alone, at an instant:

* ``Ready`` — renewed within its duration: it owns hosts and is given new ones;
* ``Expired`` — not renewed for one duration: maybe slow, maybe gone. It is given no new
  hosts, and its own stay where they are (moving them now could make two owners);
* ``Dead`` — not renewed for twice its duration, or released (its holder left on a clean
  stop): its hosts are moved. A replica stops acting once it fails to renew for
  ``renew_deadline`` (shorter than the duration), so by then it has long stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ..api.objects import Obj
from ..api.timefmt import parse_rfc3339

LEASE_PREFIX = "hoststate-shard-"  # a replica's Lease: this, then its shard's name
SHARD_LABEL = "hoststate.io/shard"  # on a Host and its HostState: the replica that owns it
DRAIN_LABEL = "hoststate.io/drain"  # on a Host its owner must let go of before it moves


class Health(StrEnum):
    READY = "Ready"
    EXPIRED = "Expired"
    DEAD = "Dead"


@dataclass(frozen=True)
class Shard:
    name: str  # the Lease's name: the replica's identity
    health: Health
    renewed: float | None  # the last renew, epoch seconds (None: never renewed)


def shard_of(lease: Obj, now: float) -> Shard:
    """A shard's health from its Lease at ``now``."""
    name = str(lease["metadata"]["name"]).removeprefix(LEASE_PREFIX)
    spec = lease.get("spec") or {}
    renewed = parse_rfc3339(spec.get("renewTime") or spec.get("acquireTime"))
    duration = float(spec.get("leaseDurationSeconds") or 0)
    if not spec.get("holderIdentity") or renewed is None or duration <= 0:
        return Shard(name, Health.DEAD, renewed)  # released, or never held
    if now < renewed + duration:
        return Shard(name, Health.READY, renewed)
    if now < renewed + 2 * duration:
        return Shard(name, Health.EXPIRED, renewed)
    return Shard(name, Health.DEAD, renewed)
