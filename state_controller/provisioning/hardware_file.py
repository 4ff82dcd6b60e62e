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
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
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
        )


class HardwareFileError(ValueError):
    """The file cannot be used; the message names it and says what to do."""


class HardwareFile:
    """The machines of one simulated backend, in a sqlite file (created when missing)."""

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
        except (OSError, sqlite3.Error) as err:
            raise HardwareFileError(
                f"{self.path}: cannot keep the simulated machines there ({err}); "
                "pass a writable path"
            ) from None
        self._lock = threading.Lock()
        self._written: dict[str, str] = {}
        self.rows_written = 0  # for tests and benchmarks

    def load(self) -> Iterator[MachineRecord]:
        try:
            rows = self._db.execute("SELECT address, body FROM simulated_machines").fetchall()
        except sqlite3.Error as err:
            raise HardwareFileError(
                f"{self.path}: not a file of simulated machines ({err}); "
                "pass another path or remove it"
            ) from None
        for address, body in rows:
            self._written[address] = body
            yield MachineRecord.parse(address, body)

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

    def close(self) -> None:
        with self._lock:
            self._db.close()
