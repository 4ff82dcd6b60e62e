"""The servicing runs under way in the whole fleet: which Host holds a slot of which pool,
and which shard answers for it, kept on one Lease every replica reads and writes.

``--servicing-max-unavailable`` bounds the runs of a node pool, and a pool's Hosts are
spread over every shard; counted by each replica alone, N shards would run up to N times
the limit. So, sharded, a slot is taken by writing a claim here, with the resourceVersion
the claims were read at (two replicas taking the last slot at once: one write wins, the
other reads again and finds the pool full). The record is one annotation of the Lease
``hoststate-servicing`` in the controller's namespace, a JSON object of host key to
``{"pool": …, "shard": …}``; the Lease's own spec is unused (nobody holds it).

A claim is the Host's, not the replica's: the Host's owner writes it when the run starts,
writes it again under its own name if the Host came to it mid-run, and takes it away when
the run ends, whoever wrote it. A replica a Host left takes its claim away only if the
Host is gone (deleted): a Host that moved is mid-run under its new owner. A claim
counts while its shard is alive or only expired (its hosts have not moved yet); a dead
shard's (or one no Lease stands for) counts no more, and is dropped at the next write,
so a replica that died mid-run frees its pool within the time its hosts take to move.

These functions only read and build the record; ``runtime/servicing/fleet_slots.py`` reads the Lease
from a watch and writes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ..api.objects import Obj

LEDGER_LEASE = "hoststate-servicing"  # in the controller's namespace (--leader-election-namespace)
CLAIMS_ANNOTATION = "hoststate.io/servicing-claims"
# claims kept at most: an object's annotations may hold 256 KiB, a claim takes about 80
# bytes, and a fleet has far fewer runs under way than this
CLAIMS_MAX = 2000


@dataclass(frozen=True, slots=True)
class Claim:
    pool: str  # the node pool whose slot it holds ("" for a host with no Node)
    shard: str  # the shard that answers for the run


Claims = Mapping[str, Claim]  # host key (namespace/name) -> its claim


def read_claims(lease: Obj | None) -> dict[str, Claim]:
    """The claims a ledger Lease holds (none when there is no Lease yet). An entry not of
    the form the controller writes is passed over: it holds no slot."""
    annotations = ((lease or {}).get("metadata") or {}).get("annotations") or {}
    try:
        raw: Any = orjson.loads(annotations.get(CLAIMS_ANNOTATION) or "{}")
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(raw, dict):
        return {}
    claims: dict[str, Claim] = {}
    for key, entry in raw.items():
        if isinstance(entry, dict):
            pool, shard = entry.get("pool"), entry.get("shard")
            if isinstance(pool, str) and isinstance(shard, str) and shard:
                claims[key] = Claim(pool, shard)
    return claims


def held(claims: Claims, pool: str, live: Callable[[str], bool], *, but: str = "") -> int:
    """How many slots of ``pool`` are held, by the claims of live shards (``but`` one host's)."""
    return sum(1 for key, c in claims.items() if c.pool == pool and key != but and live(c.shard))


def with_claim(
    claims: Claims, key: str, claim: Claim, live: Callable[[str], bool]
) -> dict[str, Claim]:
    """The claims with ``key``'s set to ``claim``, and those of dead shards dropped."""
    kept = {k: c for k, c in claims.items() if live(c.shard) and k != key}
    kept[key] = claim
    return kept


def without_claim(claims: Claims, key: str, live: Callable[[str], bool]) -> dict[str, Claim]:
    """The claims without ``key``'s, and those of dead shards dropped."""
    return {k: c for k, c in claims.items() if live(c.shard) and k != key}


def claims_patch(claims: Claims, resource_version: str) -> Obj:
    """A merge patch writing ``claims``, refused if the Lease changed since it was read."""
    body = {k: {"pool": c.pool, "shard": c.shard} for k, c in sorted(claims.items())}
    return {
        "metadata": {
            "resourceVersion": resource_version,
            "annotations": {CLAIMS_ANNOTATION: orjson.dumps(body).decode()},
        }
    }


def ledger_lease(namespace: str, claims: Claims) -> Obj:
    """A new ledger Lease holding ``claims``."""
    patch = claims_patch(claims, "")
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": LEDGER_LEASE,
            "namespace": namespace,
            "annotations": patch["metadata"]["annotations"],
            "labels": {"app.kubernetes.io/name": "hoststate"},
        },
        "spec": {},
    }
