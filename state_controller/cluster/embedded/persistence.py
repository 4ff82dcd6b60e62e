"""Sqlite persistence of the embedded store: write-through of every change, and loading.

With a path, :class:`~state_controller.cluster.embedded.store.EmbeddedCluster` keeps one row
per object (its serialized body) and writes each API call's changes in one transaction
through :class:`SqliteFile`; :func:`load` reads the rows back when a store is opened, also
read-only from another process while a running store writes the file. The file holds
Secrets: it is its owner's only, and a deleted row is overwritten
(:mod:`~state_controller.api.private_files`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from state_controller.api.private_files import connect_private
from state_controller.cluster.embedded.semantics import Key

SECRETS = "secrets"  # the rows a checkpoint follows the removal of


class SqliteFile:
    """Write-through sqlite persistence; every call is made under the cluster's lock."""

    def __init__(self, path: Path) -> None:
        self._db = connect_private(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        # the WAL cut to nothing when a checkpoint lets it start over, not left at its
        # largest with old frames (a deleted Secret's among them) past the new ones
        self._db.execute("PRAGMA journal_size_limit=0")
        # both tables in one transaction: a reader in another process sees neither or both
        self._db.executescript(
            "BEGIN;"
            "CREATE TABLE IF NOT EXISTS objects (resource TEXT NOT NULL, namespace TEXT NOT NULL,"
            " name TEXT NOT NULL, body BLOB NOT NULL, PRIMARY KEY (resource, namespace, name));"
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "COMMIT;"
        )
        self._pending: list[tuple[Key, bytes | None]] = []
        self._scrub = False  # a Secret removed or replaced: checkpoint after the commit

    def put(self, key: Key, body: bytes, *, replacing: bool = False) -> None:
        self._pending.append((key, body))
        self._scrub = self._scrub or (replacing and key[0] == SECRETS)

    def remove(self, key: Key) -> None:
        self._pending.append((key, None))
        self._scrub = self._scrub or key[0] == SECRETS

    def flush(self, resource_version: int) -> None:
        """One transaction per API call, so a cascade of deletions lands atomically.

        The counter row is written only when something was removed: a stored body carries
        its own resourceVersion, and loading takes the highest of both, so after a put the
        row would be redundant (and it costs a third of a status write).

        A Secret removed or replaced is followed by a checkpoint (passive: it never waits
        for a reader): the database file then holds zeros where the Secret was
        (``secure_delete``), and the WAL that still holds it starts over, cut to nothing,
        at the next write.
        """
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        removed = False
        scrub, self._scrub = self._scrub, False
        self._db.execute("BEGIN")
        try:
            for key, body in pending:
                if body is None:
                    removed = True
                    self._db.execute(
                        "DELETE FROM objects WHERE resource=? AND namespace=? AND name=?", key
                    )
                else:
                    self._db.execute(
                        "INSERT OR REPLACE INTO objects VALUES (?,?,?,?)", (*key, body)
                    )
            if removed:
                self._db.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('resourceVersion', ?)",
                    (str(resource_version),),
                )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        if scrub:
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def close(self) -> None:
        self._db.close()


def load(path: Path, read_only: bool) -> tuple[list[tuple[Key, bytes]], int]:
    """All stored rows and the resourceVersion counter they were written at."""
    if read_only:
        if not path.exists():
            raise FileNotFoundError(path)
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    else:
        db = connect_private(path)
    try:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if not {"objects", "meta"} <= tables:  # not yet created (or by an older writer)
            return [], 0
        rows = [
            ((str(r), str(ns), str(n)), bytes(b))
            for r, ns, n, b in db.execute("SELECT resource, namespace, name, body FROM objects")
        ]
        meta = db.execute("SELECT value FROM meta WHERE key='resourceVersion'").fetchone()
        return rows, int(meta[0]) if meta else 0
    finally:
        db.close()
