"""A picture of the live screen for the docs: one frame saved as SVG (rich's export),
marked with a digest of the code that draws it, so a test can tell a picture drawn by
an older screen from a current one.

rich draws a run of spaces as nothing at all (only a background, if it has one), so a
picture's text, copied or searched or read aloud, ran the cells of a row together
(``host-0004host-0004``). Before the export, each plain run of spaces is given to the
text before it, so every row is one text run with its spaces, as on a terminal.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable
from pathlib import Path

from rich.console import Console, RenderableType
from rich.segment import Segment, Segments
from rich.style import Style

SIZE = (120, 40)  # the terminal the docs show: columns, lines
# The files that decide how a frame looks, relative to the package: read as bytes for
# the digest, not imported (demo/watch.py chooses the frame and writes its footer).
DRAWN_BY = (
    "screens/live.py",
    "screens/rows.py",
    "screens/progress.py",
    "screens/pools.py",
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
    console.print(Segments(spaces_kept(console.render(renderable))))
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


def _plain(style: Style | None) -> bool:
    """Whether spaces in ``style`` look like spaces in any other plain style."""
    return style is None or not (
        (style.bgcolor is not None and not style.bgcolor.is_default)
        or style.reverse
        or style.underline
        or style.strike
    )


def spaces_kept(segments: Iterable[Segment]) -> list[Segment]:
    """``segments`` with each plain run of spaces joined to the plain text before it on
    its line, so that the SVG's text keeps the spaces between a row's cells."""
    out: list[Segment] = []
    for segment in segments:
        text, style, control = segment
        before = out[-1] if out else None
        if (
            before is not None
            and not control
            and not before.control
            and text
            and not text.strip(" ")
            and "\n" not in before.text
            and _plain(style)
            and _plain(before.style)
        ):
            out[-1] = Segment(before.text + text, before.style)
        else:
            out.append(segment)
    return out
