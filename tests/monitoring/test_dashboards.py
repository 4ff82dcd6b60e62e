"""The dashboards load through the SDK's model as Grafana's JSON, and read only what a user
chooses: the datasource and the namespace are variables, nothing names a cluster."""

from __future__ import annotations

import re

import pytest
from grafana_foundation_sdk.models import dashboard, prometheus

from state_controller.monitoring.dashboards import DASHBOARDS
from tests.monitoring.dashboards import files, load, queries

VARIABLE = "${datasource}"


def test_one_file_per_dashboard() -> None:
    assert [p.name for p in files()] == sorted(f"hoststate-{n}.json" for n in DASHBOARDS)


@pytest.mark.parametrize("path", files(), ids=lambda p: p.stem)
def test_dashboard_loads_and_every_panel_queries_the_chosen_datasource(path: object) -> None:
    board = load(path)  # type: ignore[arg-type]
    assert board.uid and board.title and board.title.startswith("hoststate / ")
    variables = {v.name: v for v in (board.templating.list_val or [])}
    assert variables["datasource"].type_val == dashboard.VariableType.DATASOURCE
    assert variables["namespace"].type_val == dashboard.VariableType.QUERY
    panels = [p for p in board.panels or [] if isinstance(p, dashboard.Panel)]
    assert len(panels) >= 6
    for panel in board.panels or []:
        if isinstance(panel, dashboard.RowPanel):
            continue
        assert panel.datasource is not None and panel.datasource.uid == VARIABLE, panel.title
        assert panel.targets, f"{panel.title}: no query"
        for target in panel.targets:
            assert isinstance(target, prometheus.Dataquery)
            assert target.datasource is not None and target.datasource.uid == VARIABLE
            assert target.ref_id and target.expr
        assert panel.grid_pos is not None and panel.grid_pos.x + panel.grid_pos.w <= 24
    for title, expr in queries(board):
        # only variables say where: no namespace, host or job is written into a query
        for label in ("namespace", "host", "pool", "job", "instance"):
            for value in re.findall(rf'\b{label}=~?"([^"]*)"', expr):
                assert value.startswith("$"), f"{title}: {label}={value!r} is hard-coded"


def test_hosts_are_chosen_by_namespace_and_host() -> None:
    board = load(next(p for p in files() if p.stem == "hoststate-host"))
    names = [v.name for v in board.templating.list_val or []]
    assert names == ["datasource", "namespace", "host"]
    fleet = load(next(p for p in files() if p.stem == "hoststate-fleet"))
    assert "namespace" in [v.name for v in fleet.templating.list_val or []]
