"""A shard is a replica holding its own Lease; how alive it is, read from that Lease.

Each replica holds a Lease named ``hoststate-shard-<its shard name>``, renewed as leader
election renews (the official client's, on a Lease of its own). From the Lease
alone, at an instant:

* ``Ready`` — renewed within its duration: it owns hosts and is given new ones;
* ``Expired`` — not renewed for one duration: maybe slow, maybe gone. It is given no new
  hosts, and its own stay where they are (moving them now could make two owners);
* ``Dead`` — not renewed for twice its duration, or released (its holder left on a clean
  stop), or taken by the sharder: its hosts are moved. A replica stops acting once it
  fails to renew for ``renew_deadline`` (shorter than the duration), so by then it has
  long stopped.

Before it moves the hosts of a shard that died by time, the sharder takes its Lease (the
holder becomes ``sharder/<its identity>``, renewed now), as timebertt's sharder does: the
write proves the sharder still reaches the API server with a Lease it read, and a holder
that was only cut off and comes back finds its Lease held by another, fails to renew,
and exits instead of acting on hosts already moved. Once no host names the shard, the
sharder deletes the Lease, so a replica of that name starting again takes it at once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum

from ..api.objects import Obj
from ..api.timefmt import parse_rfc3339

LEASE_PREFIX = "hoststate-shard-"  # a replica's Lease: this, then its shard's name
SHARD_LABEL = "hoststate.io/shard"  # on a Host and its HostState: the replica that owns it
DRAIN_LABEL = "hoststate.io/drain"  # on a Host its owner must let go of before it moves
TAKEN_PREFIX = "sharder/"  # a dead shard's Lease holder once the sharder took it ('/' is
# in no shard's name, a label value)


class Health(StrEnum):
    READY = "Ready"
    EXPIRED = "Expired"
    DEAD = "Dead"


@dataclass(frozen=True)
class Shard:
    name: str  # the Lease's name: the replica's identity
    health: Health
    renewed: float | None  # the last renew, epoch seconds (None: never renewed)
    holder: str = ""  # the Lease's holderIdentity

    @property
    def taken(self) -> bool:
        """The sharder holds this shard's Lease: the shard is dead and its hosts move."""
        return self.holder.startswith(TAKEN_PREFIX)

    @property
    def died_holding(self) -> bool:
        """Dead by time with a holder of its own: its Lease must be taken before its hosts
        move (a released Lease has no holder to come back)."""
        return self.health == Health.DEAD and bool(self.holder) and not self.taken


def micro_time(ts: float) -> str:
    """A Lease's MicroTime: RFC 3339 with six fraction digits, as the API server writes it."""
    whole, micro = divmod(round(ts * 1_000_000), 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{micro:06d}Z"


def shard_of(lease: Obj, now: float) -> Shard:
    """A shard's health from its Lease at ``now``."""
    name = str(lease["metadata"]["name"]).removeprefix(LEASE_PREFIX)
    spec = lease.get("spec") or {}
    renewed = parse_rfc3339(spec.get("renewTime") or spec.get("acquireTime"))
    duration = float(spec.get("leaseDurationSeconds") or 0)
    holder = str(spec.get("holderIdentity") or "")
    if not holder or renewed is None or duration <= 0 or holder.startswith(TAKEN_PREFIX):
        return Shard(name, Health.DEAD, renewed, holder)  # released, never held, or taken
    if now < renewed + duration:
        return Shard(name, Health.READY, renewed, holder)
    if now < renewed + 2 * duration:
        return Shard(name, Health.EXPIRED, renewed, holder)
    return Shard(name, Health.DEAD, renewed, holder)
