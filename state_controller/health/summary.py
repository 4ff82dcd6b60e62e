"""One replica's entry, and the object's status made of every entry and the Leases.

Every replica that reconciles computes its own entry (its share of the books, its
caches, its provisioner as it sees it) and the whole status around it: the other
entries as the object holds them, with a shard whose Lease is Dead (or gone) left out,
the totals, and the conditions. The replicas thus agree on everything but their own
entry, and one that finds the object already as it would write it writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..api.controller_status import (
    ControllerCondition,
    HostStateControllerStatus,
    LastOutage,
    Member,
    PoolShare,
    ProvisionerHealth,
)
from ..api.hoststate import Mode
from ..api.timefmt import parse_rfc3339, rfc3339
from ..sharding.leases import Health, Shard

AS_EXPECTED = "AsExpected"
CACHES_NOT_SYNCED = "CachesNotSynced"
NO_REPLICA = "NoReplica"
SHARD_NOT_RENEWED = "ShardNotRenewed"
REBALANCING = "Rebalancing"
PROVISIONER_UNREACHABLE = "ProvisionerUnreachable"


@dataclass(frozen=True)
class ProvisionerSeen:
    """The provisioner as one replica's calls found it."""

    backend: str
    api_version: str = ""
    reachable: bool = True
    outage_started: float | None = None  # epoch seconds
    outage_ended: float | None = None
    outage_message: str = ""

    def health(self) -> ProvisionerHealth:
        outage = None
        if self.outage_started is not None:
            ended = rfc3339(self.outage_ended) if self.outage_ended is not None else None
            outage = LastOutage(
                started=rfc3339(self.outage_started), ended=ended, message=self.outage_message
            )
        return ProvisionerHealth(
            backend=self.backend,
            api_version=self.api_version,
            reachable=self.reachable,
            last_outage=outage,
        )


@dataclass(frozen=True)
class Share:
    """What one replica keeps: counted from its books and caches."""

    hosts: int = 0
    nodes: int = 0
    draining: int = 0
    stuck: int = 0
    failed: int = 0
    pools: tuple[PoolShare, ...] = ()  # sharded: its part of each node pool's counts


def member_entry(
    *,
    name: str,
    shard: str,
    since: float,
    synced: bool,
    share: Share,
    version: str,
    provisioner: ProvisionerSeen,
) -> dict[str, Any]:
    """This replica's entry, as the status holds it."""
    member = Member(
        name=name,
        shard=shard,
        lease=Health.READY.value if shard else "",
        since=rfc3339(since),
        caches_synced=synced,
        hosts=share.hosts,
        nodes=share.nodes,
        draining=share.draining,
        stuck=share.stuck,
        failed=share.failed,
        version=version,
        provisioner=provisioner.health(),
        pools=list(share.pools),
    )
    entry = member.model_dump(by_alias=True, exclude_none=True)
    if not share.pools:  # not sharded, or no Node followed: nothing to add up
        del entry["pools"]
    return entry


def controller_status(
    *,
    mine: Mapping[str, Any],
    others: Sequence[Mapping[str, Any]],
    shards: Mapping[str, Shard] | None,
    mode: Mode,
    mode_since: float,
    version: str,
    before: Mapping[str, Any] | None,
    now: float,
) -> dict[str, Any]:
    """The whole status: ``mine`` beside ``others`` (the entries the object holds).

    ``shards`` (None when not sharded) is every shard's health by name: an entry whose
    shard is Dead or has no Lease is dropped, the rest show their Lease. Not sharded,
    one replica reconciles, so ``others`` (a former pod's entry) are dropped. The
    conditions keep their transition times from ``before`` while their status holds.
    """
    members = [dict(mine)]
    if shards is not None:
        for entry in others:
            if entry.get("name") == mine["name"]:
                continue
            shard = shards.get(str(entry.get("shard") or entry.get("name")))
            if shard is None or shard.health == Health.DEAD:
                continue
            members.append({**entry, "lease": shard.health.value})
    members.sort(key=lambda m: str(m["name"]))
    models = [Member.model_validate(m) for m in members]
    conditions = _conditions(models, before, now)
    status = HostStateControllerStatus(
        mode=mode,
        mode_since=_mode_since(mode, mode_since, before),
        version=version,
        replicas=len(models),
        ready_replicas=sum(1 for m in models if _ready(m)),
        hosts=sum(m.hosts for m in models),
        nodes=sum(m.nodes for m in models),
        stuck=sum(m.stuck for m in models),
        failed=sum(m.failed for m in models),
        provisioner=_provisioner(models),
        members=[],
    )
    out = status.model_dump(by_alias=True, exclude_none=True)
    out["members"] = members
    out["conditions"] = conditions
    return out


def others_pool_shares(
    status: Mapping[str, Any] | None, *, member: str, shards: Mapping[str, Shard]
) -> dict[str, list[PoolShare]]:
    """The other shards' shares of each NodePool (by its name), as the object holds them:
    a shard whose Lease is Dead or gone is left out (its Nodes are another's by now)."""
    found: dict[str, list[PoolShare]] = {}
    for entry in (status or {}).get("members") or []:
        name = str(entry.get("name") or "")
        shard = shards.get(str(entry.get("shard") or name))
        if name == member or shard is None or shard.health == Health.DEAD:
            continue
        for share in entry.get("pools") or []:
            parsed = PoolShare.model_validate(share)
            found.setdefault(parsed.pool, []).append(parsed)
    return found


def _mode_since(mode: Mode, since: float, before: Mapping[str, Any] | None) -> str:
    """Since when the installation runs in this mode: kept from the object while the mode
    holds. Each replica knows only when it started; replicas started in different
    seconds would otherwise write their own time over each other's at every look."""
    if before and before.get("mode") == mode.value and before.get("modeSince"):
        return str(before["modeSince"])
    return rfc3339(since)


def _ready(member: Member) -> bool:
    return member.caches_synced and member.lease in ("", Health.READY.value)


def _provisioner(members: Sequence[Member]) -> ProvisionerHealth | None:
    """Reachable only if every replica reaches it; the outage that began last."""
    if not members:
        return None
    seen = [m.provisioner for m in members]
    outages = [p.last_outage for p in seen if p.last_outage is not None]
    latest = max(outages, key=lambda o: parse_rfc3339(o.started) or 0.0, default=None)
    versions = sorted({p.api_version for p in seen if p.api_version})
    return ProvisionerHealth(
        backend=seen[0].backend,
        api_version=versions[0] if versions else "",
        reachable=all(p.reachable for p in seen),
        last_outage=latest,
    )


def _conditions(
    members: Sequence[Member], before: Mapping[str, Any] | None, now: float
) -> list[dict[str, str]]:
    written = {str(c.get("type")): c for c in (before or {}).get("conditions") or []}
    hosts = sum(m.hosts for m in members)
    unsynced = [m.name for m in members if not m.caches_synced]
    expired = [m for m in members if m.lease == Health.EXPIRED.value]
    orphaned = [m for m in expired if m.hosts]
    draining = sum(m.draining for m in members)
    unreachable = [m for m in members if not m.provisioner.reachable]

    available: tuple[str, str, str]
    if not members:
        available = ("False", NO_REPLICA, "no replica reconciles")
    elif unsynced:
        available = ("False", CACHES_NOT_SYNCED, f"caches not synced on {_names(unsynced)}")
    elif orphaned:
        stranded = sum(m.hosts for m in orphaned)
        available = (
            "False",
            SHARD_NOT_RENEWED,
            f"{stranded} hosts wait for shard {_names([m.name for m in orphaned])}, whose "
            "Lease expired; they move once it has been expired as long again",
        )
    else:
        replicas = (
            "1 replica reconciles" if len(members) == 1 else f"{len(members)} replicas reconcile"
        )
        available = ("True", AS_EXPECTED, f"{replicas} {hosts} hosts")

    progressing: tuple[str, str, str]
    if draining or expired:
        moving = f"{draining} hosts being let go of" if draining else "a shard's hosts to move"
        progressing = ("True", REBALANCING, f"hosts move between shards: {moving}")
    else:
        progressing = ("False", AS_EXPECTED, "every host is with the shard the ring names")

    degraded: tuple[str, str, str]
    if unreachable:
        seen = unreachable[0].provisioner
        outage = seen.last_outage
        detail = f" since {outage.started}: {outage.message}" if outage is not None else ""
        degraded = (
            "True",
            PROVISIONER_UNREACHABLE,
            f"{seen.backend} does not answer {_names([m.name for m in unreachable])}{detail}",
        )
    elif expired:
        degraded = (
            "True",
            SHARD_NOT_RENEWED,
            f"shard {_names([m.name for m in expired])} has not renewed its Lease",
        )
    else:
        degraded = ("False", AS_EXPECTED, "the provisioner answers and every Lease is renewed")

    out = []
    for kind, (status, reason, message) in (
        (ControllerCondition.AVAILABLE, available),
        (ControllerCondition.PROGRESSING, progressing),
        (ControllerCondition.DEGRADED, degraded),
    ):
        old = written.get(kind.value) or {}
        since = old.get("lastTransitionTime")
        if not since or old.get("status") != status:
            since = rfc3339(now)
        out.append(
            {
                "type": kind.value,
                "status": status,
                "lastTransitionTime": str(since),
                "reason": reason,
                "message": message[:4096],
            }
        )
    return out


def _names(names: Sequence[str]) -> str:
    return ", ".join(sorted(names))
