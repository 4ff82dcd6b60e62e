"""Reading the image's lock files (tools/image/*.lock, written by tools/image/lock.sh):
requirement lines `name==version` with `--hash=sha256:...` options, continued with a
backslash, and `#` comments."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_LOCK = ROOT / "tools" / "image" / "requirements.lock"
BUILD_LOCK = ROOT / "tools" / "image" / "build-requirements.lock"

_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})\b")


@dataclass(frozen=True)
class Pin:
    requirement: Requirement
    hashes: tuple[str, ...]

    @property
    def version(self) -> str | None:
        """The version of a `==` pin, else None."""
        [*specifiers] = self.requirement.specifier
        if len(specifiers) == 1 and specifiers[0].operator == "==":
            return specifiers[0].version
        return None


def read(path: Path) -> dict[str, Pin]:
    """Each requirement of a lock file by its normalized name."""
    text = re.sub(r"\\\n", " ", path.read_text())  # join continued lines
    pins: dict[str, Pin] = {}
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        requirement = Requirement(line.split(" --", 1)[0])
        name = canonicalize_name(requirement.name)
        assert name not in pins, f"{path.name}: {name} twice"
        pins[name] = Pin(requirement, tuple(_HASH.findall(line)))
    return pins
