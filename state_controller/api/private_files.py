"""Files that hold BMC Secrets: readable by their owner only, and scrubbed of what is deleted.

The embedded store's sqlite file and the simulated hardware's file are opened through
:func:`connect_private`, the bootstrap's small files written through
:func:`write_private`. A file is made 0600 before sqlite opens it, whatever the umask;
sqlite then gives its ``-wal`` and ``-shm`` the mode of the database file. A file left
0644 by an older version is made 0600 when it is opened again.

``PRAGMA secure_delete=ON`` overwrites a deleted row with zeros in its page, so a deleted
Secret does not linger in a free page or cell. Debian's sqlite is built with it on; other
builds are not, so it is asked for. The WAL keeps the frames that wrote the Secret until
the next checkpoint (sqlite makes one every 1000 pages and when the last connection
closes), which copies the zeroed pages back into the database file.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

FILE_MODE = 0o600
DIR_MODE = 0o700
_SIDE_FILES = ("", "-wal", "-shm", "-journal")


def private_dir(path: Path) -> None:
    """``path`` made (parents too) and, when this call made it, 0700."""
    if not path.is_dir():
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        path.chmod(DIR_MODE)  # mkdir's mode is cut by the umask


def private_file(path: Path) -> None:
    """``path`` made 0600 if missing, and made 0600 if an older version left it wider.

    A file that exists is never opened here, only changed by name: sqlite holds POSIX
    locks on the database and its ``-shm``, and closing *any* descriptor of a file drops
    every lock the process holds on it. Opening the store a second time in one process
    (the simulated hardware keeps its machines in the same file) would leave the ``-shm``
    unlocked, and a reader in another process (``state-controller get``, a test) would
    take itself for the first connection and truncate it under the writer: SIGBUS, at
    once in a loop of reads.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    except FileExistsError:
        found = os.lstat(path)
        if not stat.S_ISREG(found.st_mode):
            raise OSError(f"{path} is not a regular file") from None
        if stat.S_IMODE(found.st_mode) != FILE_MODE:
            os.chmod(path, FILE_MODE)
        return
    try:
        os.fchmod(fd, FILE_MODE)  # the umask may have cut the mode asked for
    finally:
        os.close(fd)  # a file this call made: nobody holds a lock on it yet


def connect_private(path: Path, **kwargs: Any) -> sqlite3.Connection:
    """A sqlite connection to ``path``, its files 0600, with ``secure_delete`` on."""
    for suffix in _SIDE_FILES:
        side = path.with_name(path.name + suffix)
        if not suffix or side.exists():
            private_file(side)
    db: sqlite3.Connection = sqlite3.connect(path, **kwargs)
    db.execute("PRAGMA secure_delete=ON")
    return db


def write_private(path: Path, text: str) -> None:
    """``text`` in ``path``, whole or not at all (written beside, renamed over), 0600."""
    part = path.with_name(f".{path.name}.part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    with os.fdopen(fd, "w") as out:
        os.fchmod(fd, FILE_MODE)  # a part left by an older version
        out.write(text)
    os.replace(part, path)
