"""The archive krew installs for ``kubectl hoststate`` (``plugins/krew/hoststate.yaml``).

The plugin is Python, installed with the ``hoststate`` package (``pip install
hoststate``, which puts ``kubectl-hoststate`` on PATH by itself). For krew, the archive
holds one small POSIX shell launcher, ``kubectl-hoststate``, that runs the installed
package's plugin (``python3 -m state_controller.plugin.main``; ``$HOSTSTATE_PYTHON``
names another interpreter, a virtualenv's) and says how to install the package when it
is missing. The archive is a zip with its one member stored uncompressed, at a fixed
date and mode, so the same launcher always makes the same bytes and the manifest's
sha256 can be checked against it (tests/unit/test_plugin.py).

``python -m state_controller.plugin.krew DIR`` writes the archive into DIR (to attach to
the release the manifest's ``uri`` names) and prints its path, its sha256 and the
manifest's lines that name it (``version``, ``uri``, ``sha256``), to paste into
``plugins/krew/hoststate.yaml`` when the version changes.
"""

from __future__ import annotations

import hashlib
import io
import sys
import zipfile
from pathlib import Path

BIN = "kubectl-hoststate"
LAUNCHER = """\
#!/bin/sh
# kubectl hoststate, as krew installs it: runs the plugin of the hoststate Python package.
# HOSTSTATE_PYTHON names the interpreter that has it (a virtualenv's), else python3.
python="${HOSTSTATE_PYTHON:-python3}"
if ! "$python" -c 'import state_controller.plugin.main' >/dev/null 2>&1; then
  echo "kubectl hoststate: $python has no hoststate package; install it with" \\
    "'pip install hoststate' (or set HOSTSTATE_PYTHON to a python that has it)" >&2
  exit 1
fi
exec "$python" -m state_controller.plugin.main "$@"
"""
FIXED_DATE = (2020, 1, 1, 0, 0, 0)  # zip dates start in 1980; any fixed one will do
RELEASES = "https://github.com/hoststate/hoststate/releases/download"  # + /vX.Y.Z/archive


def archive_name(version: str) -> str:
    """``kubectl-hoststate-v0.1.0.zip``."""
    return f"{BIN}-v{version.removeprefix('v')}.zip"


def archive() -> bytes:
    """The zip krew unpacks: the launcher alone, executable, the same bytes every time."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as z:
        member = zipfile.ZipInfo(BIN, date_time=FIXED_DATE)
        member.create_system = 3  # unix, so the mode below is read
        member.external_attr = 0o100755 << 16
        member.compress_type = zipfile.ZIP_STORED
        z.writestr(member, LAUNCHER)
    return out.getvalue()


def sha256() -> str:
    """The archive's sha256, as the manifest gives it."""
    return hashlib.sha256(archive()).hexdigest()


def uri(version: str) -> str:
    """Where the release of ``version`` serves the archive (the manifest's ``uri``)."""
    tag = f"v{version.removeprefix('v')}"
    return f"{RELEASES}/{tag}/{archive_name(version)}"


def manifest_lines(version: str) -> str:
    """The lines of plugins/krew/hoststate.yaml that name the archive of ``version``."""
    return (
        f"  version: v{version.removeprefix('v')}\n"
        f"      uri: {uri(version)}\n"
        f"      sha256: {sha256()}\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Write the archive into the directory named; print its path and sha256, and the
    manifest's lines to paste."""
    from .. import __version__

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print(
            "usage: python -m state_controller.plugin.krew DIR (the directory to write "
            f"{archive_name(__version__)} into)",
            file=sys.stderr,
        )
        return 2
    path = Path(args[0]) / archive_name(__version__)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(archive())
    except OSError as err:
        print(f"cannot write {path}: {err}; name a directory you can write to", file=sys.stderr)
        return 1
    print(f"{path} sha256 {sha256()}")
    print("plugins/krew/hoststate.yaml names it with (spec.version, then in spec.platforms[0]):")
    print(manifest_lines(__version__), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
