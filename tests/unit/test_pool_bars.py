"""Each NodePool in a rollout on the live screen: rich's bar of its machines updated, and
when the rollout is expected to end as the pool's estimate says, read from the NodePool
alone; no estimate says why, a late pool is marked, and all of it fits the screen."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console
from rich.progress_bar import ProgressBar

from state_controller.api.timefmt import rfc3339
from state_controller.screens.live import frame
from state_controller.screens.pools import NO_ESTIMATE, pool_bars, read_pool
from testbed.clocks import T0 as NOW

ENDS, LATE = NOW + 3600, NOW + 4500


def hhmm(at: float) -> str:
    import time

    return time.strftime("%H:%M", time.gmtime(at))


def pool(
    name: str, updated: int, machines: int, *, estimate: bool = True, late: bool = False
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "machineCount": machines,
        "updatedMachineCount": updated,
        "updatingMachineCount": 1 if updated < machines else 0,
    }
    if estimate:
        status["estimate"] = {
            "endsAt": rfc3339(ENDS),
            "lateAt": rfc3339(LATE),
            "endsBy": hhmm(ENDS),
            "madeAt": rfc3339(NOW),
        }
        on_schedule = "False" if late else "True"
        status["conditions"] = [{"type": "OnSchedule", "status": on_schedule}]
    return {"metadata": {"name": name}, "status": status}


def text(renderable: Any, width: int = 120) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(renderable)
    return out.getvalue().rstrip("\n").split("\n")


def bars_of(table: Any) -> list[ProgressBar]:
    return [c for c in table.columns[1].cells if isinstance(c, ProgressBar)]


def test_a_pool_half_updated_shows_its_bar_at_half_and_when_it_ends() -> None:
    table = pool_bars([pool("worker", 10, 20)], 120)
    assert table is not None
    (bar,) = bars_of(table)
    assert bar.percentage_completed == 50
    (line,) = text(table)
    assert line.startswith("worker ") and "10/20" in line and "50%" in line
    assert f"ends ~{hhmm(ENDS)} UTC, late bound {hhmm(LATE)} UTC" in line
    assert "LATE" not in line


def test_a_pool_with_no_estimate_says_why() -> None:
    table = pool_bars([pool("infra", 1, 4, estimate=False)], 120)
    assert table is not None
    (line,) = text(table)
    assert "1/4" in line and "25%" in line
    assert "no estimate yet: too few whole updates learned" in line
    assert read_pool(pool("infra", 1, 4, estimate=False)).eta == NO_ESTIMATE


def test_a_pool_behind_schedule_is_marked() -> None:
    table = pool_bars([pool("ok", 2, 4), pool("slow", 1, 4, late=True)], 120)
    assert table is not None
    ok, slow = text(table)
    assert ok.startswith("ok ") and "LATE" not in ok
    assert slow.startswith("slow ") and "LATE: ends ~" in slow
    assert read_pool(pool("slow", 1, 4, late=True)).late
    assert bars_of(table)[1].complete_style == "bold red"


def test_only_pools_in_a_rollout_get_a_bar() -> None:
    assert pool_bars([pool("done", 4, 4, estimate=False)], 120) is None
    assert pool_bars([pool("empty", 0, 0, estimate=False)], 120) is None
    table = pool_bars([pool("done", 4, 4, estimate=False), pool("worker", 0, 4)], 120)
    assert table is not None and [ln.split()[0] for ln in text(table)] == ["worker"]


def test_an_estimate_a_day_away_says_so() -> None:
    far = pool("far", 0, 4)
    far["status"]["estimate"]["endsAt"] = rfc3339(NOW + 2 * 86400)
    assert read_pool(far).eta.startswith("ends ~>24h, late bound ")


@pytest.mark.parametrize("size", [(120, 40), (80, 24), (60, 15), (40, 12), (30, 8)])
def test_the_screen_shows_the_bars_where_they_fit(size: tuple[int, int]) -> None:
    width, height = size
    pools = [pool("infra", 1, 4, estimate=False), pool("worker", 10, 20, late=True)]
    footer = ["metrics: http://127.0.0.1:1/metrics"]
    view = frame([], width=width, height=height, pools=pools, footer=footer, now=NOW)
    out = io.StringIO()
    Console(file=out, width=width, height=height, color_system=None).print(view)
    lines = out.getvalue().rstrip("\n").split("\n")
    assert len(lines) <= height and max(len(line) for line in lines) <= width, "\n".join(lines)
    assert lines[-1].startswith("metrics: http")
    shown = "\n".join(lines)
    if width >= 80:  # the screen the docs show, and a common terminal
        assert "LATE: ends ~" in shown and NO_ESTIMATE in shown and "50%" in shown
        assert "━" in shown  # rich's bar
