"""The picture of the demo's screen in the README and the docs: made by the code that
draws the screen today, from a real run with faults, during the rollout."""

from __future__ import annotations

import html
import re
from pathlib import Path

from state_controller.screens.picture import drawn_by, screen_digest

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
