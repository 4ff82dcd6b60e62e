"""A sharded replica's side of the sharder's handshake (runtime/sharder.py).

A replica reconciles a Host only while the Host carries its shard label. One its cache
still holds under another label (the watch not yet told) is not its own; one carrying
the drain label is let go: the replica drops the host's book, removes the HostState's
shard label, then the Host's shard and drain labels, with the resourceVersion it read,
so that the sharder assigns the host anew. This runs inside the host's reconcile, so the
reconcile under way (a key is never reconciled twice at once) has ended before.
"""

from __future__ import annotations

import contextlib
import logging
from enum import Enum

from ..api.objects import Obj
from ..cluster.interface import HOSTS, HOSTSTATES, Cluster, NotFound
from ..sharding.leases import DRAIN_LABEL, SHARD_LABEL

log = logging.getLogger(__name__)


class Ownership(Enum):
    OURS = "ours"
    OTHERS = "others"
    DRAINED = "drained"  # ours until we let go


def ownership(host: Obj, shard: str) -> Ownership:
    labels = host["metadata"].get("labels") or {}
    if labels.get(SHARD_LABEL) != shard:
        return Ownership.OTHERS
    return Ownership.DRAINED if DRAIN_LABEL in labels else Ownership.OURS


def let_go(cluster: Cluster, host: Obj, shard: str) -> Obj:
    """Remove the labels that make the host ours: the HostState's, then the Host's (the
    answer, for the cache). A Host changed since it was read is a conflict: decided again."""
    meta = host["metadata"]
    namespace, name = meta.get("namespace"), meta["name"]
    with contextlib.suppress(NotFound):
        cluster.patch(HOSTSTATES, namespace, name, {"metadata": {"labels": {SHARD_LABEL: None}}})
    labels = {SHARD_LABEL: None, DRAIN_LABEL: None}
    patch = {"metadata": {"labels": labels, "resourceVersion": meta.get("resourceVersion", "")}}
    answer = cluster.patch(HOSTS, namespace, name, patch)
    log.info("%s/%s: drained from shard %s; let go", namespace, name, shard)
    return answer
