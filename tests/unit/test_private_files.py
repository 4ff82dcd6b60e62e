"""The files that hold BMC Secrets are their owner's alone, and a deleted Secret is gone
from their bytes.

The embedded store's sqlite file (``demo --store``, ``bootstrap --state-dir``), its
``-wal`` and ``-shm``, the bootstrap's state directory and the simulated hardware's file
are made 0600 (the directory 0700), whatever the umask, and a Secret deleted from the
store is overwritten in the file (``PRAGMA secure_delete``), not left in a free page.
"""

from __future__ import annotations

import base64
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from state_controller.bootstrap.state_dir import StateDir
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import SECRETS
from state_controller.provisioning.hardware_file import HardwareFile, MachineRecord
from state_controller.simulation.fleet import secret_manifest

PASSWORD = "hunter2-gone-for-good"
FORMS = (PASSWORD.encode(), base64.b64encode(PASSWORD.encode()))


@pytest.fixture(autouse=True)
def permissive_umask() -> Iterator[None]:
    """The usual umask (022), which left every one of these files readable by all."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def _modes(folder: Path) -> dict[str, str]:
    return {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in sorted(folder.iterdir())}


def _machine(address: str) -> MachineRecord:
    return MachineRecord(address, True, None, "node-1", False, None, {}, "")


def _write_secret(store: EmbeddedCluster, name: str = "bmc", password: str = PASSWORD) -> None:
    store.create(SECRETS, secret_manifest("metal", name, "admin", password))


def test_the_stores_files_are_0600(tmp_path: Path) -> None:
    store = EmbeddedCluster(tmp_path / "cluster.db")
    _write_secret(store)
    hardware = HardwareFile(tmp_path / "cluster.db")  # beside the objects, as demo --store
    hardware.save(_machine("ipmi://192.0.2.1"))
    modes = _modes(tmp_path)
    assert set(modes) == {"cluster.db", "cluster.db-wal", "cluster.db-shm"}
    assert set(modes.values()) == {"0o600"}, modes
    store.close()


def test_a_file_left_readable_by_an_older_version_is_made_0600(tmp_path: Path) -> None:
    db = tmp_path / "cluster.db"
    sqlite3.connect(db).close()
    db.chmod(0o644)
    EmbeddedCluster(db).close()
    assert _modes(tmp_path)["cluster.db"] == "0o600"


def test_the_simulated_hardware_file_is_0600(tmp_path: Path) -> None:
    hardware = HardwareFile(tmp_path / "machines" / "hardware.db")
    hardware.save(_machine("ipmi://192.0.2.1"))
    assert _modes(tmp_path) == {"machines": "0o700"}
    modes = _modes(tmp_path / "machines")
    assert set(modes) == {"hardware.db", "hardware.db-wal", "hardware.db-shm"}
    assert set(modes.values()) == {"0o600"}, modes


def test_every_file_of_the_state_directory_is_0600(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state").lock("bootstrap")
    state.started_at()
    store = EmbeddedCluster(state.store)
    _write_secret(store)
    HardwareFile(state.store).save(_machine("ipmi://192.0.2.1"))
    state.mark_pivot("https://target.example:6443")
    assert _modes(tmp_path) == {"state": "0o700"}
    modes = _modes(state.path)
    assert set(modes) >= {"cluster.db", "cluster.db-wal", "cluster.db-shm", "lock"}
    assert set(modes) >= {"bootstrap.json", "pivot.json"}
    assert set(modes.values()) == {"0o600"}, modes
    store.close()
    state.unlock()


def _raw(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(db.parent.iterdir()) if p.is_file())


def test_a_deleted_secret_is_gone_from_the_file_after_a_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    connect = sqlite3.connect

    def default_off(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        """A sqlite built without SQLITE_SECURE_DELETE (Debian's has it, others not)."""
        db: sqlite3.Connection = connect(*args, **kwargs)
        db.execute("PRAGMA secure_delete=OFF")
        return db

    monkeypatch.setattr(sqlite3, "connect", default_off)
    db = tmp_path / "cluster.db"
    store = EmbeddedCluster(db)
    _write_secret(store, "before", "pw-of-another-host")  # the page stays in use
    _write_secret(store, "gone")
    _write_secret(store, "after", "pw-of-a-third-host")
    with connect(db) as other:  # as sqlite does every 1000 pages: the Secret in the file
        other.execute("PRAGMA wal_checkpoint(PASSIVE)")
    assert [form for form in FORMS if form in db.read_bytes()]  # the check sees it there
    store.delete(SECRETS, "metal", "gone")
    # The deletion is followed by a checkpoint: the database file has zeros where the
    # Secret was. The WAL still holds the frames that wrote it until it starts over, cut
    # to nothing, at the next write.
    assert not [form for form in FORMS if form in db.read_bytes()]
    _write_secret(store, "next", "pw-of-a-fourth-host")
    assert not [form for form in FORMS if form in _raw(db)]
    store.close()
    assert not [form for form in FORMS if form in _raw(db)]


def test_a_second_connection_in_one_process_keeps_sqlite_locks(tmp_path: Path) -> None:
    """The store opened twice in one process (the simulated hardware shares its file),
    written in a loop while another process reads it in a loop, as the bootstrap tests and
    ``state-controller get`` do: opening a file sqlite holds dropped sqlite's POSIX locks,
    the reader truncated the ``-shm`` under the writer, and the writer died of SIGBUS
    within a second (3 runs of 3). The writer runs in its own process, so that its crash
    is a failed assertion here, not pytest's."""
    db = tmp_path / "cluster.db"
    writer = f"""
import subprocess, sys, time
from pathlib import Path
from state_controller.api.private_files import connect_private
path = Path({str(db)!r})
first = connect_private(path, isolation_level=None)
first.execute("PRAGMA journal_mode=WAL")
first.execute("CREATE TABLE t (x)")
second = connect_private(path, isolation_level=None)  # the second door
reader = subprocess.Popen([sys.executable, "-c", '''
import sqlite3, time
end = time.monotonic() + 3
while time.monotonic() < end:
    db = sqlite3.connect({db.resolve().as_uri() + "?mode=ro"!r}, uri=True)
    db.execute("SELECT count(*) FROM t").fetchone()
    db.close()
'''])
end, n = time.monotonic() + 3, 0
while time.monotonic() < end:
    first.execute("INSERT INTO t VALUES (?)", (n,))
    n += 1
assert reader.wait() == 0
print("wrote", n)
"""
    done = subprocess.run(
        [sys.executable, "-c", writer], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # -7: SIGBUS
    assert done.stdout.startswith("wrote ")
