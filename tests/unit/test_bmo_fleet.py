"""The played baremetal-operator's fleet, write by write: the order of its states, and its
error count as baremetal-operator keeps it (raised by each failure, kept while it tries
again, reset by a success)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import BAREMETALHOSTS
from state_controller.cluster.schema import validators
from state_controller.simulation.bmo_fleet import (
    DEPLOY_ERROR,
    BmoFault,
    PlayedFleet,
    choose_bmo_faults,
)

NS = "metal"


@pytest.fixture
def store() -> Iterator[EmbeddedCluster]:
    embedded = EmbeddedCluster(validators=validators())
    yield embedded
    embedded.close()


def walk(store: EmbeddedCluster, fleet: PlayedFleet, steps: int) -> dict[str, list[dict[str, Any]]]:
    """Each host's status after each tick, a minute of the operator's time apart."""
    fleet.create()
    seen: dict[str, list[dict[str, Any]]] = {}
    now = 1_800_000_000.0
    for _ in range(steps):
        now += 60
        fleet.tick(now)
        for bmh in store.list(BAREMETALHOSTS, NS)[0]:
            status = bmh.get("status") or {}
            if status and (seen.get(bmh["metadata"]["name"]) or [{}])[-1] != status:
                seen.setdefault(bmh["metadata"]["name"], []).append(status)
    return seen


def test_a_failing_deploy_counts_its_errors_until_the_success_resets_them(
    store: EmbeddedCluster,
) -> None:
    fleet = PlayedFleet(store, NS, 1, faults={"host-0000": BmoFault.PROVISIONING_ERROR})
    [writes] = walk(store, fleet, 12).values()
    shown = [
        (
            s["provisioning"]["state"],
            s["operationalStatus"],
            s.get("errorType", ""),
            s["errorCount"],
        )
        for s in writes
    ]
    assert shown == [
        ("registering", "OK", "", 0),
        ("inspecting", "OK", "", 0),
        ("preparing", "OK", "", 0),
        ("available", "OK", "", 0),
        ("provisioning", "OK", "", 0),
        ("provisioning", "error", "provisioning error", 1),
        ("provisioning", "OK", "", 1),  # tried again: the error cleared, the count kept
        ("provisioning", "error", "provisioning error", 2),
        ("provisioning", "OK", "", 2),
        ("provisioned", "OK", "", 0),
    ]
    assert writes[5]["errorMessage"] == DEPLOY_ERROR
    assert [s["poweredOn"] for s in writes] == [False] + [True] * 9
    assert "register" in writes[1]["operationHistory"]
    assert set(writes[-1]["operationHistory"]["provision"]) == {"start", "end"}


def test_an_inspection_that_hangs_holds_until_the_hold_or_for_ever(store: EmbeddedCluster) -> None:
    faults = {"host-0000": BmoFault.STUCK_INSPECTING}
    fleet = PlayedFleet(store, NS, 1, faults=faults, attempts=0)
    [writes] = walk(store, fleet, 20).values()
    assert [s["provisioning"]["state"] for s in writes] == ["registering", "inspecting"]


def test_a_critical_bmc_is_bmos_healthy_condition_from_registration_on(
    store: EmbeddedCluster,
) -> None:
    fleet = PlayedFleet(store, NS, 1, faults={"host-0000": BmoFault.HEALTH_CRITICAL})
    [writes] = walk(store, fleet, 10).values()
    healthy = [
        next((c["status"], c["reason"]) for c in s["conditions"] if c["type"] == "Healthy")
        for s in writes
    ]
    assert healthy == [("Unknown", "Unknown")] + [("False", "CriticalError")] * 5
    assert writes[-1]["provisioning"]["state"] == "provisioned"  # BMO provisions it all the same


def test_each_fault_kind_is_dealt_and_replayed_by_its_seed() -> None:
    names = [f"host-{i:04d}" for i in range(8)]
    faults = choose_bmo_faults(names, 0.5, tuple(BmoFault), seed=3)
    assert sorted(faults.values()) == sorted(BmoFault)
    assert faults == choose_bmo_faults(names, 0.5, tuple(BmoFault), seed=3)  # replayed
    assert choose_bmo_faults(names, 0.5, (), seed=3) == {}
