"""Where the simulated hardware is kept between runs: one sqlite row per machine.

The table lives beside the objects in the embedded store's file (``demo --store``,
``bootstrap --state-dir``), or in a file of its own (``run --simulated-hardware``).

A real backend remembers its nodes when the controller restarts (Ironic has its
database); simulated machines kept only in memory would be new hardware at every
start, and every provisioned host would read as adopted and powered on again.
With a file, :class:`~.simulated.SimulatedProvisioner` loads its machines when it
starts and writes a machine's row whenever the machine changes, in one
transaction, so a process killed at any moment leaves every machine as it last
was: registered, half-way through an inspection, or deployed.

An operation in progress is kept with the wall-clock time it ends, so one that
should have ended while the process was down is over when it starts again.

sqlite (in the standard library, one row written per change, safe against a
kill) rather than a JSON file rewritten whole at every change: a thousand hosts
make a few thousand changes, and rewriting every machine at each one would cost
quadratic time.

The file is its owner's only (0600, its folder 0700 when this makes it): the machines'
rows sit beside the BMC Secrets when it is the embedded store's file.

**One file, several processes.** Replicas of ``run --shard`` sharing one file share one
backend, as replicas sharing one Ironic do: a Host moved from one to another finds its
machine where the first left it (registered, half-way through a deployment), not new
hardware to adopt. The file, not a process's memory, is then the truth:
:meth:`HardwareFile.changing` reads a machine's row and writes it back in one
transaction begun with ``BEGIN IMMEDIATE`` (sqlite's write lock taken first, waited for
up to the 30 s busy timeout). Measured with three processes making 5,000 such changes
each on 50 rows (about a third of them writing): a plain ``BEGIN`` failed 18% of them
with "database is locked" (a read transaction that must become a write one is refused
at once when another process wrote meanwhile; the busy timeout does not apply), reading
and writing outside a transaction lost 2% of the increments; ``BEGIN IMMEDIATE`` lost
none and failed none, 10 µs a change at the median, 0.2 ms at the 99th percentile (WAL:
readers never wait, a commit without a change costs no write).

The file also says when the backend refuses every call (:meth:`HardwareFile.refuse`):
an outage of the shared backend, for tests and soak runs, seen by every process.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..api.private_files import connect_private, private_dir


@dataclass(frozen=True, slots=True)
class MachineRecord:
    """A simulated machine as it is kept: what the hardware and the backend know."""

    address: str
    powered_on: bool
    disk_image: dict[str, Any] | None
    node_id: str
    node_active: bool
    busy: tuple[str, float] | None  # (operation, wall-clock time it ends)
    started: dict[str, int]  # operations started on this machine, by name
    finished: str  # the last operation that ended well
    # what the deployed OS and the backend's record were given, and the reboots so far:
    # the backend's memory of the machine, which another process sharing it reads too
    config_drive: dict[str, Any] | None = None
    custom_deploy: str | None = None
    registered_with: dict[str, Any] = field(default_factory=dict)
    reboots: tuple[str, ...] = ()

    def body(self) -> str:
        return json.dumps(
            {
                "poweredOn": self.powered_on,
                "diskImage": self.disk_image,
                "nodeID": self.node_id,
                "nodeActive": self.node_active,
                "busy": list(self.busy) if self.busy else None,
                "started": dict(sorted(self.started.items())),
                "finished": self.finished,
                "configDrive": self.config_drive,
                "customDeploy": self.custom_deploy,
                "registeredWith": self.registered_with,
                "reboots": list(self.reboots),
            },
            sort_keys=True,
        )

    @classmethod
    def parse(cls, address: str, body: str) -> MachineRecord:
        data = json.loads(body)
        busy = data.get("busy")
        return cls(
            address=address,
            powered_on=bool(data.get("poweredOn")),
            disk_image=data.get("diskImage"),
            node_id=str(data.get("nodeID") or ""),
            node_active=bool(data.get("nodeActive")),
            busy=(str(busy[0]), float(busy[1])) if busy else None,
            started=Counter({str(k): int(v) for k, v in (data.get("started") or {}).items()}),
            finished=str(data.get("finished") or ""),
            config_drive=data.get("configDrive"),
            custom_deploy=data.get("customDeploy"),
            registered_with=dict(data.get("registeredWith") or {}),
            reboots=tuple(str(r) for r in data.get("reboots") or ()),
        )


class HardwareFileError(ValueError):
    """The file cannot be used; the message names it and says what to do."""


class HardwareFile:
    """The machines of one simulated backend, in a sqlite file (created when missing);
    several processes may share it (see the module's docstring)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            private_dir(self.path.parent)
            self._db = connect_private(
                self.path, check_same_thread=False, isolation_level=None, timeout=30.0
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS simulated_machines"
                " (address TEXT PRIMARY KEY, body TEXT NOT NULL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS simulated_backend"
                " (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
        except (OSError, sqlite3.Error) as err:
            raise HardwareFileError(
                f"{self.path}: cannot keep the simulated machines there ({err}); "
                "pass a writable path"
            ) from None
        self._lock = threading.RLock()
        self._written: dict[str, str] = {}  # each row as this process last read or wrote it
        self.rows_written = 0  # for tests and benchmarks

    def load(self) -> Iterator[MachineRecord]:
        """The machines whose rows changed since this process last read or wrote them:
        every one the first time."""
        try:
            with self._lock:
                rows = self._db.execute("SELECT address, body FROM simulated_machines").fetchall()
        except sqlite3.Error as err:
            raise HardwareFileError(
                f"{self.path}: not a file of simulated machines ({err}); "
                "pass another path or remove it"
            ) from None
        for address, body in rows:
            if self._written.get(address) != body:
                self._written[address] = body
                yield MachineRecord.parse(address, body)

    @contextmanager
    def changing(self, address: str) -> Iterator[MachineRecord | None]:
        """One machine under the file's write lock, until the block ends: its row if
        another process changed it since this one last read or wrote it, else None (as
        left here, or no row yet). :meth:`save` inside the block writes in the same
        transaction, committed at its end (rolled back if the block raises)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(
                    "SELECT body FROM simulated_machines WHERE address = ?", (address,)
                ).fetchone()
                record = None
                if row is not None and self._written.get(address) != row[0]:
                    self._written[address] = row[0]
                    record = MachineRecord.parse(address, row[0])
                yield record
            except BaseException:
                self._db.execute("ROLLBACK")
                self._written.pop(address, None)  # read again, as the file holds it
                raise
            self._db.execute("COMMIT")

    def save(self, record: MachineRecord) -> None:
        """Write the machine's row if it differs from what the file holds."""
        body = record.body()
        with self._lock:
            if self._written.get(record.address) == body:
                return
            self._db.execute(
                "INSERT OR REPLACE INTO simulated_machines (address, body) VALUES (?, ?)",
                (record.address, body),
            )
            self._written[record.address] = body
            self.rows_written += 1

    def refuse(self, seconds: float, why: str = "refused for a test") -> None:
        """Every process on this file answers each call as unreachable for ``seconds``
        from now (0: ends a refusal), saying ``why``."""
        value = json.dumps({"until": time.time() + seconds, "why": why})
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO simulated_backend (name, value) VALUES ('refused', ?)",
                (value,),
            )

    def refusal(self) -> str | None:
        """Why the backend refuses every call now; None while it answers."""
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM simulated_backend WHERE name = 'refused'"
            ).fetchone()
        if row is None:
            return None
        data = json.loads(row[0])
        return str(data["why"]) if time.time() < float(data["until"]) else None

    def close(self) -> None:
        with self._lock:
            self._db.close()
