"""Reading the committed dashboards as Grafana would: through grafana-foundation-sdk's model
(no Grafana server is offered by Debian or PyPI to run on loopback)."""

from __future__ import annotations

import json
from pathlib import Path

from grafana_foundation_sdk.cog import plugins
from grafana_foundation_sdk.models import dashboard, prometheus

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "dashboards"
plugins.register_default_plugins()  # panel options and queries decode to their own types


def load(path: Path) -> dashboard.Dashboard:
    return dashboard.Dashboard.from_json(json.loads(path.read_text()))


def files() -> list[Path]:
    return sorted(FOLDER.glob("*.json"))


def queries(board: dashboard.Dashboard) -> list[tuple[str, str]]:
    """(panel title, PromQL) of every query of every panel."""
    found = []
    for panel in board.panels or []:
        if isinstance(panel, dashboard.Panel):
            for target in panel.targets or []:
                assert isinstance(target, prometheus.Dataquery), panel.title
                found.append((panel.title or "", target.expr))
    return found
