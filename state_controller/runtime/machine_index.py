"""Which machines exist, by name and UID, and which Hosts read which Secret.

The controller's event handlers ask this, from informer and worker threads, to know
whom an event concerns: the Hosts to reconcile when a Secret changes; the machine a
Node names by a Host's name or a BareMetalHost's UID (``updates.links``); whether a
book's key is a Host's or an observed BareMetalHost's. It holds keys and names only,
never objects.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection

from ..api.objects import Obj
from ..cluster.interface import split_key
from ..updates.links import UID


class MachineIndex:
    def __init__(self, host_exists: Callable[[str], bool]) -> None:
        self._host_exists = host_exists  # is a Host of this key in the cache
        self._lock = threading.Lock()
        self._named: dict[str, set[str]] = {}  # name, and "uid:<uid>" -> machine keys
        self._uid_of: dict[str, str] = {}  # key -> the UID indexed for it
        self._observed: set[str] = set()  # keys of the observed BareMetalHosts
        self._by_secret: dict[str, set[str]] = {}  # Secret key -> Host keys
        # Host key -> the keys of the Secrets it reads (BMC credentials, data for its OS)
        self._secret_of_host: dict[str, frozenset[str]] = {}

    # -- machines ------------------------------------------------------------------------

    def machine(self, key: str, obj: Obj | None, *, observed: bool = False) -> list[str]:
        """A Host (or, ``observed``, a BareMetalHost) came, changed or went (``obj``
        None); the names whose machines changed, for the Nodes that link by them."""
        _, name = split_key(key)
        uid = str(((obj or {}).get("metadata") or {}).get("uid") or "")
        with self._lock:
            if observed and obj is not None:
                self._observed.add(key)
            elif observed:
                self._observed.discard(key)
            keys = self._named.setdefault(name, set())
            known = key in keys
            if obj is not None:
                keys.add(key)
                if uid:
                    self._uid_of[key] = uid
                    self._named[UID + uid] = {key}
            elif key not in self._observed and not self._host_exists(key):
                keys.discard(key)
                uid = self._uid_of.pop(key, "")
                if self._named.get(UID + uid) == {key}:
                    del self._named[UID + uid]
            if known == (key in keys):
                return []
        return [name, UID + uid] if uid else [name]

    def named(self, name: str) -> list[str]:
        """The keys of the machines with this name (or ``uid:<uid>``)."""
        with self._lock:
            return sorted(self._named.get(name, ()))

    def observed(self, key: str) -> bool:
        """An observed BareMetalHost's key, with no Host of ours of that key."""
        with self._lock:
            seen = key in self._observed
        return seen and not self._host_exists(key)

    # -- Secrets -------------------------------------------------------------------------

    def secret(self, key: str, secret: str | Collection[str] | None) -> None:
        """The Secrets the Host ``key`` reads now (``""`` or empty: none; None: the Host is
        gone)."""
        with self._lock:
            before = self._secret_of_host.get(key, frozenset())
            for old in before:
                self._by_secret.get(old, set()).discard(key)
            if secret is None:
                self._secret_of_host.pop(key, None)
                return
            now = frozenset([secret] if isinstance(secret, str) else secret) - {""}
            self._secret_of_host[key] = now
            for name in now:
                self._by_secret.setdefault(name, set()).add(key)

    def readers(self, secret: str) -> list[str]:
        """The Hosts that read this Secret."""
        with self._lock:
            return list(self._by_secret.get(secret, ()))

    def is_host(self, key: str) -> bool:
        """A Host known to the index (its HostState's events concern it)."""
        with self._lock:
            return key in self._secret_of_host
