"""A picture of the live screen for the docs: one frame saved as SVG (rich's export),
marked with a digest of the code that draws it, so a test can tell a picture drawn by
an older screen from a current one."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

from rich.console import Console, RenderableType

SIZE = (120, 40)  # the terminal the docs show: columns, lines
# The files that decide how a frame looks, relative to the package: read as bytes for
# the digest, not imported (demo/watch.py chooses the frame and writes its footer).
DRAWN_BY = (
    "screens/live.py",
    "screens/rows.py",
    "screens/progress.py",
    "screens/picture.py",
    "screens/tables.py",
    "api/columns.py",
    "demo/watch.py",
)
MARK = "<!-- hoststate screen {digest} -->"


def screen_digest() -> str:
    """The digest of the modules that decide how a frame looks."""
    h = hashlib.sha256()
    for name in DRAWN_BY:
        h.update((Path(__file__).parents[1] / name).read_bytes())
    return h.hexdigest()[:16]


def save_svg(renderable: RenderableType, path: Path, title: str) -> None:
    width, height = SIZE
    console = Console(
        record=True, width=width, height=height, color_system="truecolor", file=io.StringIO()
    )
    console.print(renderable)
    svg = console.export_svg(title=title)
    head, _, rest = svg.partition("\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{head}\n{MARK.format(digest=screen_digest())}\n{rest}")


def drawn_by(path: Path) -> str | None:
    """The digest a saved picture carries (None: not one of ours)."""
    for line in path.read_text().splitlines()[:3]:
        if line.startswith("<!-- hoststate screen "):
            return line.split()[3]
    return None
