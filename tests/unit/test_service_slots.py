"""Servicing slots: a freed slot wakes as many waiting hosts as slots are free, the longest
waiting first; a woken host that no longer wants one, or is gone, or never answers passes
its wake on or has it again; nobody is left waiting beside a free slot."""

from __future__ import annotations

from state_controller.runtime.servicing.slots import WOKEN_FOR, ServiceSlots

POOL = "worker"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def slots_with_a_line(per_pool: int = 2, waiting: int = 5) -> tuple[ServiceSlots, list[str], Clock]:
    woken: list[str] = []
    clock = Clock()
    slots = ServiceSlots(per_pool, woken.append, clock)
    for i in range(per_pool):
        assert slots.may_start(f"run-{i}", POOL)
        slots.settle(f"run-{i}", POOL, active=True)
    for i in range(waiting):
        clock.now += 1
        assert not slots.may_start(f"wait-{i}", POOL)
        slots.settle(f"wait-{i}", POOL, active=False)
    assert woken == []
    return slots, woken, clock


def test_a_freed_slot_wakes_one_host_the_longest_waiting() -> None:
    slots, woken, _ = slots_with_a_line()
    slots.settle("run-0", POOL, active=False)
    assert woken == ["wait-0"]
    slots.settle("run-1", POOL, active=True)  # still running: nothing more to wake
    assert woken == ["wait-0"]
    assert slots.may_start("wait-0", POOL)
    slots.settle("wait-0", POOL, active=True)
    assert woken == ["wait-0"] and slots.running(POOL) == 2


def test_a_woken_host_that_no_longer_asks_passes_its_wake_on_and_leaves_the_line() -> None:
    slots, woken, _ = slots_with_a_line()
    slots.settle("run-0", POOL, active=False)
    slots.settle("wait-0", POOL, active=False)  # woken, but its spec no longer asks
    assert woken == ["wait-0", "wait-1"]
    slots.settle("run-1", POOL, active=False)
    assert woken == ["wait-0", "wait-1", "wait-2"]  # wait-0 is out of the line


def test_a_deleted_woken_host_passes_its_wake_on_and_an_unanswered_wake_is_sent_again() -> None:
    slots, woken, clock = slots_with_a_line()
    slots.settle("run-0", POOL, active=False)
    slots.forget("wait-0")
    assert woken == ["wait-0", "wait-1"]
    slots.settle("run-1", POOL, active=True)
    assert woken == ["wait-0", "wait-1"]  # wait-1 has its wake
    clock.now += WOKEN_FOR + 1  # and never reconciles (a lost wake)
    slots.settle("run-1", POOL, active=True)
    assert woken == ["wait-0", "wait-1", "wait-1"]


def test_a_refused_host_keeps_its_place_and_a_deleted_runner_frees_its_slot() -> None:
    slots, woken, _ = slots_with_a_line(per_pool=1, waiting=3)
    assert not slots.may_start("wait-1", POOL)  # asks again: still second in line
    slots.settle("wait-1", POOL, active=False)
    slots.forget("run-0")
    assert woken == ["wait-0"]
    assert slots.may_start("wait-0", POOL)
    slots.settle("wait-0", POOL, active=False)  # its run ended at once
    assert woken == ["wait-0", "wait-1"]
