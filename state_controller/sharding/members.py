"""Which Leases stand for shards: only those of the replicas the operator runs.

Anyone who may write Leases in the controller's namespace could otherwise make a shard
up: were any Lease named ``hoststate-shard-<anything>`` a live shard whatever its holder
and duration, 12 such Leases with ``leaseDurationSeconds: 2147483647`` would take 234 of
300 Hosts to shards no replica runs, for decades. So a Lease is judged against what the
replicas were started with (``--shards``, ``--lease-duration``), never on its word:

* its name must be one of the configured shards', else it is no shard at all (ignored;
  hosts labelled with its name are given to a live shard at once);
* its holder must be of the form the controller writes: ``<shard>_<8 hex digits>`` for
  the shard's own replica (:func:`identity_for`), ``sharder/<member's identity>`` once
  the sharder took it, or none (released). Any other holder is not believed: the shard
  is dead, its Lease is taken and its hosts move;
* its renew may not lie ahead of now by more than one duration (clocks differ by less),
  else it is not believed either (a renew dated next year would keep it Ready);
* a duration longer than the configured one is cut to it: a Lease cannot make itself
  live longer than a replica of this installation would. A shorter one only makes it
  die sooner, and is kept (a replica started with a shorter ``--lease-duration`` during
  a rolling change of it must not lose its hosts under it).

Only the controller's ServiceAccount should write these Leases (manifests/sharded/
grants their writes by name); these checks keep a Lease written by anyone else from
deciding where hosts go for longer than a Lease of the controller's own could.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..api.objects import Obj
from ..api.timefmt import parse_rfc3339
from .leases import LEASE_PREFIX, TAKEN_PREFIX, Health, Shard, shard_of

IDENTITY = re.compile(r"^(?P<shard>[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)_[0-9a-f]{8}$")
ORDINAL = re.compile(r"^(?P<stem>.+)-(?P<ordinal>0|[1-9][0-9]*)$")


def identity_for(shard: str, token: str) -> str:
    """The holder a replica writes on its Leases: its shard, then 8 hex digits of its own
    (a new one at every start, so that a restarted replica is told from the one before)."""
    return f"{shard}_{token[:8]}"


def shard_names(spec: str, own: str) -> frozenset[str]:
    """The configured shards from ``--shards``: a count N (the StatefulSet's pods: this
    replica's name with its ordinal replaced by 0 to N-1) or the names, comma-separated.
    A ValueError names what is wrong and how to fix it."""
    spec = spec.strip()
    if not spec:
        raise ValueError(
            "--shards is required with --shard: give the StatefulSet's replica count "
            "(e.g. --shards=3) or every replica's shard name, comma-separated"
        )
    if spec.isdigit():
        match = ORDINAL.match(own)
        if match is None:
            raise ValueError(
                f"--shards {spec}: a count needs --shard named as a StatefulSet's pod "
                f"(<name>-<ordinal>), not {own!r}; or list the shard names instead"
            )
        names = frozenset(f"{match['stem']}-{i}" for i in range(int(spec)))
    else:
        names = frozenset(n.strip() for n in spec.split(",") if n.strip())
    if own not in names:
        raise ValueError(
            f"--shards {spec}: this replica's --shard {own!r} is not among them; "
            "raise the count (or add the name) to take in every replica the operator runs"
        )
    return names


@dataclass(frozen=True)
class Members:
    """The shards the operator runs and the Lease duration they were started with."""

    names: frozenset[str]
    lease_duration: float

    def is_identity(self, holder: str) -> bool:
        """``holder`` is the form a configured replica writes."""
        match = IDENTITY.match(holder)
        return match is not None and match["shard"] in self.names

    def may_hold_own(self, shard: str, holder: str) -> bool:
        """A holder a shard's own Lease may have: its replica's, the sharder's, or none."""
        if holder.startswith(TAKEN_PREFIX):
            return self.is_identity(holder.removeprefix(TAKEN_PREFIX))
        match = IDENTITY.match(holder)
        return not holder or (match is not None and match["shard"] == shard)

    def may_hold_sharder(self, holder: str) -> bool:
        """A holder the sharder's Lease may have: a configured replica, or none."""
        return not holder or self.is_identity(holder)


def judge(lease: Obj, members: Members, now: float) -> tuple[Shard | None, str]:
    """The shard a Lease stands for (None: no configured shard's), and what in it was not
    believed ("" when all of it was)."""
    name = str(lease["metadata"]["name"]).removeprefix(LEASE_PREFIX)
    if name not in members.names:
        return None, f"{name!r} is none of the configured shards (--shards)"
    spec = lease.get("spec") or {}
    holder = str(spec.get("holderIdentity") or "")
    shard = shard_of(lease, now)
    if not members.may_hold_own(name, holder):
        dead = replace(shard, health=Health.DEAD)
        return dead, f"holder {holder!r} is not a form the controller writes"
    renewed = parse_rfc3339(spec.get("renewTime") or spec.get("acquireTime"))
    if renewed is not None and renewed > now + members.lease_duration:
        dead = replace(shard, health=Health.DEAD, renewed=now)
        return dead, "renewed further ahead of now than one --lease-duration"
    duration = float(spec.get("leaseDurationSeconds") or 0)
    if duration > members.lease_duration:
        cut = {**lease, "spec": {**spec, "leaseDurationSeconds": members.lease_duration}}
        return shard_of(cut, now), (
            f"leaseDurationSeconds {duration:.0f} is longer than --lease-duration "
            f"{members.lease_duration:.0f}; judged on the latter"
        )
    return shard, ""


def judged_shards(leases: Iterable[Obj], members: Members | None, now: float) -> dict[str, Shard]:
    """Every shard the Leases stand for, by name, as the sharder judges them; ``members``
    None (no ``--shards``): every shard Lease on its word. Leases that are no shard's (the
    sharder's, the leader's, the servicing ledger) are passed over."""
    shards: list[Shard] = []
    for lease in leases:
        if not str(lease["metadata"]["name"]).startswith(LEASE_PREFIX):
            continue
        if members is None:
            shards.append(shard_of(lease, now))
        else:
            shard = judge(lease, members, now)[0]
            if shard is not None:
                shards.append(shard)
    return {shard.name: shard for shard in shards}
