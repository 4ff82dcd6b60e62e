"""Which machines exist, by name and UID, and which Hosts read which Secret.

The controller's event handlers ask this, from informer and worker threads, to know
whom an event concerns: the Hosts to reconcile when a Secret changes; the machine a
Node names by a Host's name or a BareMetalHost's UID (``updates.links``); whether a
book's key is a Host's or an observed BareMetalHost's. It holds keys and names only,
never objects.

Nearly every name, UID and Secret is one Host's: such an entry holds the key itself,
and a set only once a second key joins it (an empty set takes 216 bytes; four per
Host were a kilobyte each, measured at 2,000 hosts).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection

from ...api.objects import Obj
from ...cluster.interface import split_key
from ...updates.links import UID


class MachineIndex:
    def __init__(self, host_exists: Callable[[str], bool]) -> None:
        self._host_exists = host_exists  # is a Host of this key in the cache
        self._lock = threading.Lock()
        self._named: dict[str, Keys] = {}  # name, and "uid:<uid>" -> machine keys
        self._uid_of: dict[str, str] = {}  # key -> the UID indexed for it
        self._observed: set[str] = set()  # keys of the observed BareMetalHosts
        self._by_secret: dict[str, Keys] = {}  # Secret key -> Host keys
        # Host key -> the keys of the Secrets it reads (BMC credentials, data for its OS)
        self._secret_of_host: dict[str, Keys] = {}

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
            known = key in _each(self._named.get(name))
            if obj is not None:
                _add(self._named, name, key)
                if uid:
                    self._uid_of[key] = uid
                    self._named[UID + uid] = key
            elif key not in self._observed and not self._host_exists(key):
                _discard(self._named, name, key)
                uid = self._uid_of.pop(key, "")
                if self._named.get(UID + uid) == key:
                    del self._named[UID + uid]
            if known == (key in _each(self._named.get(name))):
                return []
        return [name, UID + uid] if uid else [name]

    def named(self, name: str) -> list[str]:
        """The keys of the machines with this name (or ``uid:<uid>``)."""
        with self._lock:
            return sorted(_each(self._named.get(name)))

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
            for old in _each(self._secret_of_host.get(key)):
                _discard(self._by_secret, old, key)
            if secret is None:
                self._secret_of_host.pop(key, None)
                return
            now = {secret} if isinstance(secret, str) else set(secret)
            now.discard("")
            self._secret_of_host[key] = _keys(now)
            for name in now:
                _add(self._by_secret, name, key)

    def readers(self, secret: str) -> list[str]:
        """The Hosts that read this Secret."""
        with self._lock:
            return list(_each(self._by_secret.get(secret)))

    def is_host(self, key: str) -> bool:
        """A Host known to the index (its HostState's events concern it)."""
        with self._lock:
            return key in self._secret_of_host


Keys = str | set[str]  # one key, or several


def _each(keys: Keys | None) -> Collection[str]:
    if keys is None:
        return ()
    return (keys,) if isinstance(keys, str) else keys


def _keys(keys: Collection[str]) -> Keys:
    return next(iter(keys)) if len(keys) == 1 else set(keys)


def _add(index: dict[str, Keys], name: str, key: str) -> None:
    held = index.get(name)
    if held is None:
        index[name] = key
    elif isinstance(held, str):
        if held != key:
            index[name] = {held, key}
    else:
        held.add(key)


def _discard(index: dict[str, Keys], name: str, key: str) -> None:
    held = index.get(name)
    if held is None or held == key:
        index.pop(name, None)
    elif not isinstance(held, str):
        held.discard(key)
        if len(held) == 1:
            index[name] = next(iter(held))
