"""The live screen's frame, drawn without a terminal: at every size it fits (rich's
full screen would crop, silently, what does not), the rows that need attention come
first with their whole reason, and a message is shown as written, never read as markup."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from state_controller.api.timefmt import rfc3339
from state_controller.screens.live import Bars, frame
from state_controller.screens.rows import all_settled
from testbed.clocks import T0 as NOW

BLOCKED = (
    "draining: 1 pod left, eviction blocked by PodDisruptionBudget metal/db-[/dev/sda] "
    "(it allows no disruption since 2026-11-25T14:52:15Z) [bold]not markup[/bold]"
)


def hoststate(name: str, *, step: str = "", stuck: bool = False, moving: bool = False) -> Any:
    status: dict[str, Any] = {
        "phase": "Updating" if step else "Provisioned",
        "provisioning": {"state": "provisioned", "enteredAt": rfc3339(NOW - 600)},
        "conditions": [
            {"type": "Stuck", "status": str(stuck), "message": "longer than the 5s allowed"},
            {"type": "Progressing", "status": str(moving or bool(step))},
        ],
    }
    if step:
        message = BLOCKED if stuck else "draining: 2 pods left"
        status["update"] = {"step": step, "enteredAt": rfc3339(NOW - 30), "message": message}
    return {"metadata": {"name": name}, "spec": {"host": name, "node": name}, "status": status}


FLEET = (
    [hoststate(f"stuck-{i:02d}", step="draining", stuck=True) for i in range(6)]
    + [hoststate(f"moving-{i:02d}", step="draining") for i in range(14)]
    + [hoststate(f"done-{i:02d}") for i in range(30)]
)
POOLS = [
    {"metadata": {"name": n}, "status": {"machineCount": 25, "updatedMachineCount": 3}}
    for n in ("infra", "worker")
]
FOOTER = ["[ 12.0s] update: 30/50 nodes at their new config", "metrics: http://127.0.0.1:1/metrics"]


def drawn(width: int, height: int) -> list[str]:
    bars = Bars()
    bars.set("provisioned", 50, 50)
    bars.set("updated", 30, 50)
    view = frame(FLEET, width=width, height=height, pools=POOLS, bars=bars, footer=FOOTER, now=NOW)
    out = io.StringIO()
    Console(file=out, width=width, height=height, color_system=None).print(view)
    return out.getvalue().rstrip("\n").split("\n")


@pytest.mark.parametrize("size", [(120, 40), (80, 24), (60, 15), (40, 12), (30, 8)])
def test_every_size_fits_and_keeps_the_metrics_line(size: tuple[int, int]) -> None:
    width, height = size
    lines = drawn(width, height)
    assert len(lines) <= height, "\n".join(lines)
    assert max(len(line) for line in lines) <= width, "\n".join(lines)
    assert lines[-1].startswith("metrics: http"), "\n".join(lines)
    assert any("attention" in line.lower() for line in lines)  # counted, at least


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
def test_attention_first_with_the_whole_reason_as_written(size: tuple[int, int]) -> None:
    lines = drawn(*size)
    assert lines[0] == "NEEDS ATTENTION (6)"
    assert lines[1].startswith("stuck-00 ") and "stuck 30s (5s allowed)" in lines[1]
    reason = []
    for line in lines[2:]:
        if not line.startswith("  "):
            break
        reason.append(line.strip())
    assert " ".join(reason) == BLOCKED  # brackets and all, wrapped but whole
    assert any(line.startswith("moving-00 ") for line in lines)
    assert any("settled: 30 provisioned" in line for line in lines)


def test_settled_only_when_every_hoststate_of_the_fleet_says_so() -> None:
    """A screen may call the fleet settled only once each of its HostStates is there and
    settled: the books get there first, a HostState one write later."""

    def placed(item: Any) -> Any:
        item["metadata"]["namespace"] = "metal"
        return item

    keys = {"metal/a", "metal/b"}
    done = [placed(hoststate("a")), placed(hoststate("b"))]
    assert all_settled(done, keys)
    assert not all_settled(done[:1], keys)  # b's HostState not written yet
    assert not all_settled([done[0], placed(hoststate("b", moving=True))], keys)
    assert not all_settled([done[0], placed(hoststate("b", stuck=True))], keys)
    others = [*done, placed(hoststate("c", moving=True))]
    assert all_settled(others, keys)  # a host outside the fleet does not hold it back
