"""The state directory of a bootstrap: the only place its books live until the pivot.

``cluster.db``
    the embedded store (Hosts, Secrets, HostStates, Events), written through at every
    API call, and beside its objects the simulated machines (when the provisioner is
    the simulated one); a process killed at any moment leaves both as they were.
``bootstrap.json``
    when the bootstrap began: the controller reports its mode since then, across
    restarts.
``lock``
    held (``flock``) by the one process that uses the directory: a second bootstrap, or
    a pivot while the bootstrap still runs, is refused instead of writing behind the
    running controller's back. The kernel lets it go when the process dies, even by
    ``kill -9``.
``pivot.json``
    written when a pivot begins moving the hosts out: from then on they belong to the
    cluster, and a bootstrap on this directory is refused rather than bringing back (and
    provisioning again) hosts that moved.

The directory (0700) and every file in it (0600, the store's ``-wal`` and ``-shm`` too)
are readable by their owner only: the store holds the BMC Secrets.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from pathlib import Path
from types import TracebackType

from ..api.private_files import write_private


class StateDirError(ValueError):
    """The state directory cannot be used now; the message says why and what to do."""


class StateDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock_fd: int | None = None

    @property
    def store(self) -> Path:
        return self.path / "cluster.db"

    @property
    def exists(self) -> bool:
        return self.store.exists()

    def started_at(self) -> float:
        """When the bootstrap began (now, the first time)."""
        try:
            return float(json.loads((self.path / "bootstrap.json").read_text())["startedAt"])
        except (OSError, ValueError, KeyError, TypeError):
            began = time.time()
            self._write("bootstrap.json", {"startedAt": began})
            return began

    def mark_pivot(self, target: str) -> None:
        """The hosts begin to move into ``target``: they are the cluster's from now on."""
        self._write("pivot.json", {"target": target, "startedAt": time.time()})

    def pivoted_into(self) -> str | None:
        """Where a pivot moved (or began to move) the hosts; None when none did."""
        try:
            return str(json.loads((self.path / "pivot.json").read_text())["target"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _write(self, name: str, data: dict[str, object]) -> None:
        """Whole or not at all: written beside, then renamed over."""
        write_private(self.path / name, json.dumps(data) + "\n")

    def lock(self, purpose: str) -> StateDir:
        """Hold the directory for this process, or say who holds it."""
        try:
            self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.path.chmod(0o700)  # the store holds BMC credentials
            fd = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as err:
            raise StateDirError(
                f"--state-dir {self.path}: {err.strerror or err}; pass a writable directory"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise StateDirError(f"--state-dir {self.path}: cannot lock it ({err})") from None
            raise StateDirError(
                f"--state-dir {self.path} is in use by {holder}; stop it first "
                f"(Ctrl-C) to {purpose}"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"state-controller {purpose} (pid {os.getpid()})\n".encode(), 0)
        self._lock_fd = fd
        return self

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the lock
            self._lock_fd = None

    def __enter__(self) -> StateDir:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.unlock()
