"""What the Ironic provisioner remembers between polls of the same host.

Lost on restart, and that is fine: without it a re-inspection is trusted, an adoption is
reported as a first one, credentials are sent once more, and the next call reads the node
again. Ironic masks passwords, so what it has is known only from what this process sent:
a salted fingerprint of the BMC address and credentials, never the password itself.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
import time

from ..provisioner import HostView
from .attempt import NodeRead

FRESH_FOR = 1.0  # seconds a node read stays good for the next operation on the same host
_MISSING = object()


class Memory:
    """Per node (by uuid) or per host (by key), thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._salt = os.urandom(16)
        self._inspect_base: dict[str, object] = {}  # node -> inspection_finished_at at start
        self._adopting: set[str] = set()
        self._recreated: set[str] = set()  # nodes created anew for hosts Ironic had lost
        self._power_target: dict[str, str] = {}  # node -> power target we asked for
        self._credentials: dict[str, str] = {}  # node -> fingerprint of what Ironic has
        self._service_digest: dict[str, str] = {}  # node -> the plan of the run we asked for
        # The node as the last completed operation read it, for the next call within
        # FRESH_FOR seconds (register, then the state's action: one read, not two).
        # Any write to the node, or an operation that did not complete, drops it.
        self._fresh: dict[str, NodeRead] = {}

    # -- the last read ------------------------------------------------------------------

    def take_fresh(self, key: str, *, fresh_for: float) -> NodeRead | None:
        """The read the last call on this host left, if younger than ``fresh_for``;
        taken either way (a call that does not leave its own read leaves none)."""
        with self._lock:
            fresh = self._fresh.pop(key, None)
        if fresh is not None and time.monotonic() - fresh[0] < fresh_for:
            return fresh
        return None

    def keep_read(self, key: str, read: NodeRead | None) -> None:
        with self._lock:
            if read is None:
                self._fresh.pop(key, None)
            else:
                self._fresh[key] = read

    # -- credentials --------------------------------------------------------------------

    def remember_credentials(self, uuid: str, host: HostView) -> None:
        with self._lock:
            self._credentials[uuid] = self._fingerprint(host)

    def knows_credentials(self, uuid: str, host: HostView) -> bool:
        with self._lock:
            return self._credentials.get(uuid) == self._fingerprint(host)

    def _fingerprint(self, host: HostView) -> str:
        text = "\0".join((host.bmc_address, host.credentials.username, host.credentials.password))
        return hmac.new(self._salt, text.encode(), hashlib.sha256).hexdigest()

    # -- inspection ---------------------------------------------------------------------

    def inspection_started(self, uuid: str, finished_at: object) -> None:
        """A re-inspection starts: done once ``inspection_finished_at`` differs from now's."""
        with self._lock:
            self._inspect_base[uuid] = finished_at

    def inspection_done(self, uuid: str, finished_at: object) -> bool:
        """True (and forgotten) once an inspection finished after the one it started from."""
        with self._lock:
            if not finished_at or finished_at == self._inspect_base.get(uuid, _MISSING):
                return False
            self._inspect_base.pop(uuid, None)
            return True

    # -- adoption -----------------------------------------------------------------------

    def recreated(self, uuid: str) -> None:
        """The node was created anew for a host that had one Ironic no longer has."""
        with self._lock:
            self._recreated.add(uuid)

    def adoption_asked(self, uuid: str) -> None:
        with self._lock:
            self._adopting.add(uuid)

    def adoption_done(self, uuid: str) -> tuple[bool, bool]:
        """(adopted by this process, for a node Ironic had lost); forgotten after."""
        with self._lock:
            adopted = uuid in self._adopting
            self._adopting.discard(uuid)
            lost = uuid in self._recreated
            self._recreated.discard(uuid)
        return adopted, lost

    # -- power --------------------------------------------------------------------------

    def power_asked(self, uuid: str, target: str) -> None:
        with self._lock:
            self._power_target[uuid] = target

    def power_target(self, uuid: str) -> str | None:
        with self._lock:
            return self._power_target.get(uuid)

    def power_answered(self, uuid: str) -> None:
        with self._lock:
            self._power_target.pop(uuid, None)

    # -- servicing ----------------------------------------------------------------------

    def service_asked(self, uuid: str, digest: str) -> None:
        with self._lock:
            self._service_digest[uuid] = digest

    def service_digest(self, uuid: str) -> str | None:
        """The plan of the last run asked of the node (None: none since this started)."""
        with self._lock:
            return self._service_digest.get(uuid)

    def service_ended(self, uuid: str) -> None:
        with self._lock:
            self._service_digest.pop(uuid, None)

    def forget(self, uuid: str, key: str) -> None:
        """The node is gone (deleted, or the host detached)."""
        with self._lock:
            for memory in (
                self._inspect_base,
                self._power_target,
                self._credentials,
                self._service_digest,
            ):
                memory.pop(uuid, None)
            self._adopting.discard(uuid)
            self._recreated.discard(uuid)
            self._fresh.pop(key, None)
