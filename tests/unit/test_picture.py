"""The picture of the demo's screen in the README and the docs: made by the code that
draws the screen today, from a real run with faults, during the rollout."""

from __future__ import annotations

import html
import re
from pathlib import Path

from state_controller.screens.picture import drawn_by, save_svg, screen_digest

ROOT = Path(__file__).resolve().parents[2]
PICTURE = ROOT / "docs" / "images" / "demo.svg"


def _text(svg: str) -> str:
    """The terminal's text in a rich SVG (its spaces are non-breaking)."""
    runs = re.findall(r"<text [^>]*>([^<]*)</text>", svg)
    return html.unescape(" ".join(runs)).replace("\xa0", " ")


def test_the_picture_is_drawn_by_the_current_screen() -> None:
    assert drawn_by(PICTURE) == screen_digest(), (
        "the live screen changed since docs/images/demo.svg was made; run scripts/docs-samples"
    )


def test_the_picture_shows_a_rollout_with_nodes_that_need_attention() -> None:
    text = _text(PICTURE.read_text())
    assert "NEEDS ATTENTION" in text and "MACHINES" in text and "settled:" in text
    assert re.search(r"(stuck|degraded) \d+s", text)


def test_the_readme_and_the_docs_show_it() -> None:
    assert "docs/images/demo.svg" in (ROOT / "README.md").read_text()
    assert "images/demo.svg" in (ROOT / "docs" / "index.md").read_text()


def test_a_saved_picture_keeps_the_spaces_between_a_rows_cells(tmp_path: Path) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, show_edge=False)
    for name in ("NAME", "NODE", "STATE"):
        table.add_column(name, no_wrap=True)
    table.add_row(Text("host-0004", style="red"), "host-0004", "draining", style="yellow")
    save_svg(table, tmp_path / "p.svg", "t")
    runs = re.findall(r"<text [^>]*>([^<]*)</text>", (tmp_path / "p.svg").read_text())
    joined = "".join(html.unescape(r).replace("\xa0", " ") for r in runs)
    assert re.search(r"host-0004 +host-0004 +draining", joined), joined
