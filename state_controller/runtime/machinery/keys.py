"""The work queue's keys: which kind of book a key names, and the name within its kind.

One queue carries every kind, so that one worker pool, one backoff per key and one
"never twice at once" serve them all; a key's kind is read here and nowhere else. A
Host's key is its ``namespace/name`` (it holds a '/'); the others carry a prefix no
Host key can start with, as a Kubernetes name holds no ':'.
"""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    """What a queue key names; its value labels the reconcile metrics and spans."""

    HOST = "host"  # a Host's book (a Node that runs on it is followed there)
    NODE = "node"  # the book of a Node with no Host
    BAREMETALHOST = "baremetalhost"  # an observed metal3 BareMetalHost's book
    POOL = "pool"  # a node pool's NodePool (counts, not a book)


PREFIXES = {Kind.NODE: "node:", Kind.BAREMETALHOST: "bmh:", Kind.POOL: "pool:"}


def key_of(kind: Kind, name: str) -> str:
    """The queue key of ``name`` (``namespace/name`` for Hosts and BareMetalHosts)."""
    return PREFIXES.get(kind, "") + name


def parse(key: str) -> tuple[Kind, str]:
    """The kind a queue key names and the name within it."""
    for kind, prefix in PREFIXES.items():
        if key.startswith(prefix):
            return kind, key[len(prefix) :]
    return Kind.HOST, key


def kind_of(key: str) -> str:
    """The kind a queue key names, as the metrics label it."""
    return parse(key)[0].value


def node_key(name: str) -> str:
    return key_of(Kind.NODE, name)


def pool_key(pool: str) -> str:
    return key_of(Kind.POOL, pool)


def bmh_key(key: str) -> str:
    return key_of(Kind.BAREMETALHOST, key)
