"""A sharded replica's side of the sharder's handshake (runtime/shards/sharder.py).

A replica reconciles a Host only while the Host carries its shard label. One its cache
still holds under another label (the watch not yet told) is not its own; one carrying
the drain label is let go: the replica drops the host's book, removes the HostState's
shard label (if the HostState is its own), then the Host's shard and drain labels, with
the resourceVersion it read, so that the sharder assigns the host anew. This runs inside
the host's reconcile, so the reconcile under way (a key is never reconciled twice at
once) has ended before.

The Host's label alone is not proof: whoever may edit a Host (its tenant) may write it.
The sharder labels the HostState (the controller's own object) before the Host, and the
old owner unlabels it before it lets the Host go, so a Host labelled with this shard
whose HostState names another shard was not given to it: that shard has not let go, and
this replica leaves the host alone and takes its label off (:func:`decline`), for the
sharder to decide. This is asked once
per host taken in (:func:`claimed_by`): a HostState labelled with this shard is in its
cache already, and a new host has none yet (404).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from enum import Enum

from ...api.objects import Obj
from ...cluster.interface import HOSTS, HOSTSTATES, Cluster, Conflict, NotFound, split_key
from ...sharding.leases import DRAIN_LABEL, SHARD_LABEL

log = logging.getLogger(__name__)


class Ownership(Enum):
    OURS = "ours"
    OTHERS = "others"
    DRAINED = "drained"  # ours until we let go
    NOT_GIVEN = "not given"  # labelled ours, but the HostState names another shard


def ownership(host: Obj, shard: str, claimed: Callable[[], str] = lambda: "") -> Ownership:
    """Whether the host is this shard's: its label names the shard and ``claimed`` (the
    shard its HostState names, "" when none) names no other."""
    labels = host["metadata"].get("labels") or {}
    if labels.get(SHARD_LABEL) != shard:
        return Ownership.OTHERS
    if DRAIN_LABEL in labels:
        return Ownership.DRAINED
    other = claimed()
    if other and other != shard:
        meta = host["metadata"]
        log.info(
            "%s/%s: labelled %s by someone other than the sharder while its HostState names "
            "shard %s; left alone, its label given back to the sharder",
            meta.get("namespace"),
            meta["name"],
            shard,
            other,
        )
        return Ownership.NOT_GIVEN
    return Ownership.OURS


def decline(cluster: Cluster, host: Obj) -> Obj | None:
    """Remove the shard label from a Host this shard was not given (its HostState names
    another), with the resourceVersion read: the sharder then puts it back on its owner,
    or, that owner dead, gives it to a live shard, which is told so by the HostState's
    label. Without this a Host relabelled onto the ring's choice while its HostState names
    a dead shard would stay with no one. The answer, for the cache; None when the Host
    changed since (the sharder was first) or is gone."""
    meta = host["metadata"]
    patch = {
        "metadata": {
            "labels": {SHARD_LABEL: None},
            "resourceVersion": meta.get("resourceVersion", ""),
        }
    }
    try:
        return cluster.patch(HOSTS, meta.get("namespace"), meta["name"], patch)
    except (Conflict, NotFound):
        return None


def claimed_by(cluster: Cluster, own_hoststate: Obj | None, key: str) -> str:
    """The shard the host's HostState names: this replica's own copy (its cache holds
    only HostStates labelled with its shard), else the server's ("" when there is none).
    The server's copy is not put in the cache: it may be another shard's."""
    found = own_hoststate
    if found is None:
        namespace, name = split_key(key)
        try:
            found = cluster.get(HOSTSTATES, namespace, name)
        except NotFound:
            return ""
    return str((found["metadata"].get("labels") or {}).get(SHARD_LABEL) or "")


def let_go(cluster: Cluster, host: Obj, shard: str, own_hoststate: Obj | None = None) -> Obj:
    """Remove the labels that make the host ours: the HostState's (``own_hoststate``, this
    replica's cached copy, if it is ours: another shard's is not touched), then the Host's
    (the answer, for the cache). A Host changed since it was read is a conflict: decided
    again."""
    meta = host["metadata"]
    namespace, name = meta.get("namespace"), meta["name"]
    mine = own_hoststate is not None and claimed_by(cluster, own_hoststate, "") == shard
    if mine:
        with contextlib.suppress(NotFound):
            unlabel = {"metadata": {"labels": {SHARD_LABEL: None}}}
            cluster.patch(HOSTSTATES, namespace, name, unlabel)
    labels = {SHARD_LABEL: None, DRAIN_LABEL: None}
    patch = {"metadata": {"labels": labels, "resourceVersion": meta.get("resourceVersion", "")}}
    answer = cluster.patch(HOSTS, namespace, name, patch)
    log.info("%s/%s: drained from shard %s; let go", namespace, name, shard)
    return answer
