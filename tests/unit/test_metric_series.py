"""The per-host families keep one series per host for its whole life; the families that
name a state (stuck, in error) exist only while the host is so, and leave with it."""

from __future__ import annotations

from typing import Any

from state_controller.api.states import ErrorType
from state_controller.api.states import ProvisioningState as P
from state_controller.api.updates import UpdateStep
from state_controller.books.book import Book
from state_controller.books.records import UpdateCursor
from state_controller.books.stuck import StuckPolicy
from state_controller.observability.collectors import STATE_CODES, STEP_CODES, BooksCollector
from state_controller.observability.pool_collector import PoolsCollector
from testbed.clocks import T0, Clock

LIFE = [P.REGISTERING, P.INSPECTING, P.PREPARING, P.AVAILABLE, P.PROVISIONING, P.PROVISIONED]


def scrape(
    collector: BooksCollector | PoolsCollector,
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in collector.collect():
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def per_host(series: Any, name: str) -> set[Any]:
    return {labels for (metric, labels) in series if metric == name}


def test_a_host_lifecycle_keeps_one_series_per_host_and_drops_stuck_and_error_series() -> None:
    clock = Clock()
    books = {f"ns/host-{i}": Book(f"ns/host-{i}", now=T0) for i in range(10)}
    collector = BooksCollector(lambda: books, StuckPolicy({P.INSPECTING: 60}), clock)
    seen: set[Any] = set()
    for state in LIFE:
        clock.advance(10)
        for book in books.values():
            book.move(state, now=clock.now, reason="r")
        series = scrape(collector)
        seen |= set(series)
        if state == P.INSPECTING:  # held there past the threshold, one host failing
            clock.advance(61)
            books["ns/host-3"].fail(ErrorType.INSPECTION, "BMC said no", now=clock.now, reason="F")
            series = scrape(collector)
            seen |= set(series)
            stuck = per_host(series, "hoststate_host_stuck_seconds")
            assert len(stuck) == 10 and all(("state", "inspecting") in s for s in stuck)
            [error] = per_host(series, "hoststate_host_consecutive_errors")
            assert ("host", "host-3") in error and ("type", "inspection error") in error
            assert all(label != "message" for label, _ in error)  # unbounded: never a label
            counted = (("namespace", "ns"), ("type", "inspection error"))
            assert series[("hoststate_hosts_in_error", counted)] == 1
            assert (
                series[("hoststate_stuck_hosts", (("namespace", "ns"), ("state", "inspecting")))]
                == 10
            )
            books["ns/host-3"].recover(now=clock.now, reason="R")
        else:
            assert per_host(series, "hoststate_host_stuck_seconds") == set()
            assert per_host(series, "hoststate_host_consecutive_errors") == set()
    final = scrape(collector)
    key = ("hoststate_host_state", (("host", "host-0"), ("namespace", "ns")))
    assert final[key] == STATE_CODES[P.PROVISIONED]
    # over the whole life: one series per host, not one per host and state
    for name in ("hoststate_host_state", "hoststate_host_state_entered_timestamp_seconds"):
        assert len({labels for (metric, labels) in seen if metric == name}) == 10
    assert not [s for s in seen if any(value == "" for _, value in s[1])]  # no empty label


def test_a_node_stuck_in_a_step_has_a_series_until_it_moves_on() -> None:
    clock = Clock()
    book = Book("ns/host-0", now=T0)
    book.move(P.PROVISIONED, now=T0, reason="r")
    book.note(now=T0, node="worker-0")
    collector = BooksCollector(
        lambda: {"ns/host-0": book}, StuckPolicy(step_thresholds={UpdateStep.DRAINING: 600}), clock
    )
    book.update_to(UpdateCursor(step=UpdateStep.DRAINING, desired="v2"), now=T0, reason="D")
    clock.now = T0 + 599
    assert per_host(scrape(collector), "hoststate_node_update_stuck_seconds") == set()
    clock.now = T0 + 900
    series = scrape(collector)
    labels = (
        ("hoststate", "host-0"),
        ("namespace", "ns"),
        ("node", "worker-0"),
        ("step", "draining"),
    )
    assert series[("hoststate_node_update_stuck_seconds", labels)] == 900
    node = labels[:3]
    assert series[("hoststate_node_update_step", node)] == STEP_CODES[UpdateStep.DRAINING]
    book.update_to(UpdateCursor(step=UpdateStep.REBOOTING, desired="v2"), now=clock.now, reason="R")
    series = scrape(collector)
    assert per_host(series, "hoststate_node_update_stuck_seconds") == set()
    assert series[("hoststate_node_update_step", node)] == STEP_CODES[UpdateStep.REBOOTING]


def test_every_state_and_step_has_its_own_code() -> None:
    assert set(STATE_CODES) == set(P) and len(set(STATE_CODES.values())) == len(P)
    assert set(STEP_CODES) == set(UpdateStep) and len(set(STEP_CODES.values())) == len(UpdateStep)


def test_nodepool_counts_are_read_from_the_nodepools() -> None:
    pools: list[dict[str, Any]] = [
        {"metadata": {"name": "worker"}, "status": {"machineCount": 8, "updatedMachineCount": 3,
         "updatingMachineCount": 5, "degradedMachineCount": 1, "unavailableMachineCount": 5}},
        {"metadata": {"name": "infra"}},  # no status written yet: all 0
    ]  # fmt: skip
    series = scrape(PoolsCollector(lambda: pools))
    worker, infra = (("pool", "worker"),), (("pool", "infra"),)
    assert series[("hoststate_nodepool_machines", worker)] == 8
    assert series[("hoststate_nodepool_updated_machines", worker)] == 3
    assert series[("hoststate_nodepool_updating_machines", worker)] == 5
    assert series[("hoststate_nodepool_degraded_machines", worker)] == 1
    assert series[("hoststate_nodepool_unavailable_machines", worker)] == 5
    assert series[("hoststate_nodepool_machines", infra)] == 0


def test_a_pool_of_its_own_times_its_nodes_and_counts_those_stuck() -> None:
    from state_controller.books.stuck import stuck_policy

    clock = Clock()
    books = {}
    for i, pool in enumerate(("worker", "infra")):
        book = Book(f"ns/host-{i}", now=T0)
        book.move(P.PROVISIONED, now=T0, reason="r")
        book.note(now=T0, node=f"{pool}-0", pool=pool)
        book.update_to(UpdateCursor(step=UpdateStep.REBOOTING, desired="v2"), now=T0, reason="R")
        books[book.key] = book
    policy = stuck_policy(["rebooting=10m", "infra:rebooting=40m"])
    collector = BooksCollector(lambda: books, policy, clock)
    clock.now = T0 + 15 * 60  # the worker's reboot is stuck, the infra node's is not
    series = scrape(collector)
    stuck = per_host(series, "hoststate_node_update_stuck_seconds")
    assert stuck == {
        (("hoststate", "host-0"), ("namespace", "ns"), ("node", "worker-0"), ("step", "rebooting"))
    }
    assert series[("hoststate_nodepool_stuck_machines", (("pool", "worker"),))] == 1
    assert series[("hoststate_nodepool_stuck_machines", (("pool", "infra"),))] == 0
    clock.now = T0 + 41 * 60
    series = scrape(collector)
    assert series[("hoststate_nodepool_stuck_machines", (("pool", "infra"),))] == 1
