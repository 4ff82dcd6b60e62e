"""A folder laid out as the kubelet mounts a Secret volume, and updated as it updates one.

The kubelet writes each version of the Secret into a timestamped folder, points the
``..data`` symlink at it, and exposes every key as a symlink through ``..data``; an
update writes a new folder and swaps ``..data`` atomically (a rename), so a reader sees
the old files or the new ones, never a mix. Tests that read credentials "from a mounted
Secret" use this layout, not flat files.
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

_versions = itertools.count(1)


def write_secret_volume(folder: Path, files: dict[str, str]) -> Path:
    """Create ``folder`` holding ``files``, or swap it to them if it exists."""
    folder.mkdir(parents=True, exist_ok=True)
    version = folder / f"..2026_11_23_00_00_00.{next(_versions):09d}"
    version.mkdir()
    for name, text in files.items():
        (version / name).write_text(text)
    data = folder / "..data"
    old = folder / os.readlink(data) if data.is_symlink() else None
    swap = folder / "..data_tmp"
    swap.symlink_to(version.name)
    os.replace(swap, data)  # the atomic switch to the new version
    if old is not None:  # and the kubelet removes the one before
        shutil.rmtree(old)
    for name in files:
        link = folder / name
        if not link.is_symlink():
            link.symlink_to(f"..data/{name}")
    return folder
