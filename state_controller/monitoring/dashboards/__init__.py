"""Grafana dashboards as code (grafana-foundation-sdk), written to ``dashboards/*.json``
by ``state-controller gen dashboards``; a test fails when the files and the code differ."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from grafana_foundation_sdk.builders.dashboard import Dashboard
from grafana_foundation_sdk.cog.encoder import JSONEncoder

from . import controller, fleet, host, rollout

FOLDER = Path("dashboards")
DASHBOARDS: dict[str, Callable[[], Dashboard]] = {
    "fleet": fleet.dashboard,
    "host": host.dashboard,
    "rollout": rollout.dashboard,
    "controller": controller.dashboard,
}


def render(name: str) -> str:
    """The JSON model of one dashboard, as Grafana imports it."""
    return JSONEncoder(sort_keys=True, indent=2).encode(DASHBOARDS[name]().build()) + "\n"


def write(root: Path) -> list[Path]:
    folder = root / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in DASHBOARDS:
        path = folder / f"hoststate-{name}.json"
        path.write_text(render(name))
        written.append(path)
    return written
