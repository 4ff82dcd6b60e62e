"""The work queue must keep client-go's guarantees: de-duplication, one worker per item,
delays where the earliest wins, exponential back-off, prompt shutdown and metrics."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from state_controller.runtime.machinery.workqueue import DUE_BURST, QueueMetricsSink, WorkQueue


def drain(queue: WorkQueue[str]) -> list[str]:
    items = []
    while (item := queue.get(timeout=0)) is not None:
        items.append(item)
    return items


def test_adds_are_de_duplicated_and_ordered() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for item in ["a", "b", "a", "c", "b"]:
        queue.add(item)
    assert len(queue) == 3
    assert drain(queue) == ["a", "b", "c"]


def test_item_added_while_processing_is_queued_once_when_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert queue.get() == "a"
    queue.add("a")
    queue.add("a")
    assert len(queue) == 0  # not handed to a second worker while the first has it
    assert queue.get(timeout=0.01) is None
    queue.done("a")
    assert len(queue) == 1
    assert queue.get() == "a"
    queue.done("a")
    assert queue.get(timeout=0.01) is None


def test_no_two_workers_hold_the_same_item() -> None:
    queue: WorkQueue[int] = WorkQueue()
    holding: set[int] = set()
    lock = threading.Lock()
    overlaps: list[int] = []
    processed: Counter[int] = Counter()

    def worker() -> None:
        while (item := queue.get()) is not None:
            with lock:
                if item in holding:
                    overlaps.append(item)
                holding.add(item)
            time.sleep(0.0005)
            with lock:
                holding.discard(item)
                processed[item] += 1
            queue.done(item)

    workers = [threading.Thread(target=worker) for _ in range(8)]
    for w in workers:
        w.start()
    for _ in range(300):
        for item in range(5):
            queue.add(item)
    deadline = time.monotonic() + 5
    while (len(queue) or holding) and time.monotonic() < deadline:
        time.sleep(0.01)
    queue.shutdown()
    for w in workers:
        w.join(2)
    assert overlaps == []
    assert set(processed) == set(range(5))


def test_get_times_out_with_none() -> None:
    queue: WorkQueue[str] = WorkQueue()
    started = time.monotonic()
    assert queue.get(timeout=0.05) is None
    assert time.monotonic() - started >= 0.04


def test_add_after_delivers_in_due_order() -> None:
    queue: WorkQueue[str] = WorkQueue()
    started = time.monotonic()  # before the adds: no item is due before its delay from here
    queue.add_after("late", 0.6)
    queue.add_after("early", 0.4)
    queue.add_after("now", 0)
    assert queue.get(timeout=0) == "now"
    if time.monotonic() - started < 0.4:  # a busy machine may have let "early" come due
        assert len(queue) == 0
    assert queue.get(timeout=2) == "early"
    assert queue.get(timeout=2) == "late"
    assert time.monotonic() - started >= 0.6
    queue.shutdown()


def test_add_after_earliest_time_wins() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("a", 0.03)
    queue.add_after("a", 10)  # later: ignored
    started = time.monotonic()
    assert queue.get(timeout=1) == "a"
    assert time.monotonic() - started < 1
    queue.done("a")

    queue.add_after("b", 10)
    queue.add_after("b", 0.02)  # earlier: replaces
    assert queue.get(timeout=1) == "b"
    queue.done("b")
    assert queue.get(timeout=0.05) is None  # and fires once only
    queue.shutdown()


def test_a_superseded_schedule_never_fires() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("a", 0.1)
    queue.add_after("a", 0.02)  # replaces the 0.1 entry
    assert queue.get(timeout=1) == "a"
    queue.done("a")
    queue.add_after("a", 1.0)  # the stale 0.1 entry must not deliver this one early
    assert queue.get(timeout=0.15) is None
    assert queue.get(timeout=2) == "a"
    queue.shutdown()


def ready(queue: WorkQueue[str], count: int) -> None:
    """Wait (up to 5 s) until ``count`` items are ready: the timer moved the due ones in."""
    deadline = time.monotonic() + 5
    while len(queue) < count:
        assert time.monotonic() < deadline, f"{len(queue)} ready, not {count}"
        time.sleep(0.001)


def test_due_polls_are_served_before_items_added_by_events() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for i in range(3):
        queue.add(f"event-{i}")
    queue.add_after("poll-a", 0.001)
    queue.add_after("poll-b", 0.002)
    ready(queue, 5)
    assert drain(queue) == ["poll-a", "poll-b", "event-0", "event-1", "event-2"]
    queue.shutdown()


def test_events_are_not_starved_by_a_run_of_due_polls() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("event-0")
    queue.add("event-1")
    for i in range(DUE_BURST * 2):
        queue.add_after(f"poll-{i}", 0.001)
    ready(queue, DUE_BURST * 2 + 2)
    order = drain(queue)
    assert order.index("event-0") == DUE_BURST
    assert order.index("event-1") == 2 * DUE_BURST + 1
    assert len(order) == DUE_BURST * 2 + 2


def came_due(queue: WorkQueue[str]) -> None:
    """Wait (up to 5 s) until the timer has moved every scheduled item in."""
    deadline = time.monotonic() + 5
    while queue._waiting:
        assert time.monotonic() < deadline, "the timer never fired"
        time.sleep(0.001)


def test_an_item_waiting_for_an_event_moves_ahead_when_it_comes_due_and_stays_single() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("other")
    queue.add("host")
    queue.add_after("host", 0.001)
    came_due(queue)
    assert len(queue) == 2
    assert drain(queue) == ["host", "other"]  # once, and first
    queue.shutdown()


def test_an_item_that_comes_due_while_processed_is_queued_as_due_when_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("host")
    assert queue.get(timeout=0) == "host"
    queue.add("event-0")
    queue.add_after("host", 0.001)
    came_due(queue)
    assert len(queue) == 1  # still one worker per item
    queue.done("host")
    assert drain(queue) == ["host", "event-0"]
    queue.shutdown()


def test_an_event_limit_keeps_a_worker_for_polls_that_come_due() -> None:
    queue: WorkQueue[str] = WorkQueue(event_limit=1)
    queue.add("event-0")
    queue.add("event-1")
    assert queue.get(timeout=0) == "event-0"
    assert queue.get(timeout=0.01) is None  # the one event item allowed is being processed
    queue.add_after("poll", 0.001)
    assert queue.get(timeout=5) == "poll"  # a poll is never held by the limit
    queue.done("poll")
    queue.done("event-0")
    assert queue.get(timeout=0) == "event-1"
    queue.add_after("again", 0)  # work that goes on at once is due, not an event
    assert queue.get(timeout=0) == "again"
    queue.shutdown()


def test_a_getter_blocked_by_the_event_limit_wakes_when_an_event_item_is_done() -> None:
    queue: WorkQueue[str] = WorkQueue(event_limit=1)
    queue.add("event-0")
    queue.add("event-1")
    assert queue.get(timeout=0) == "event-0"
    got: list[str | None] = []
    getter = threading.Thread(target=lambda: got.append(queue.get(timeout=10)))
    getter.start()
    queue.done("event-0")
    getter.join(timeout=10)
    assert got == ["event-1"]
    queue.shutdown()


def test_rate_limited_delays_grow_exponentially_and_forget_resets() -> None:
    queue: WorkQueue[str] = WorkQueue(base_delay=0.02, max_delay=0.1)
    delays = []
    for _ in range(5):
        started = time.monotonic()
        queue.add_rate_limited("a")
        assert queue.get(timeout=1) == "a"
        delays.append(time.monotonic() - started)
        queue.done("a")
    assert queue.num_requeues("a") == 5
    for delay, expected in zip(delays, [0.02, 0.04, 0.08, 0.1, 0.1], strict=True):
        assert delay >= expected - 0.002
    assert delays[4] < 0.25  # capped: uncapped it would be 0.32
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    started = time.monotonic()
    queue.add_rate_limited("a")
    assert queue.get(timeout=1) == "a"
    assert time.monotonic() - started < 0.09  # back to base_delay, not max_delay
    queue.shutdown()


def test_huge_failure_counts_stay_capped() -> None:
    queue: WorkQueue[str] = WorkQueue(base_delay=0.005, max_delay=0.01)
    queue._failures["a"] = 5000  # as if it failed for a very long time
    queue.add_rate_limited("a")
    assert queue.get(timeout=1) == "a"
    queue.shutdown()


def test_shutdown_unblocks_getters_and_rejects_adds() -> None:
    queue: WorkQueue[str] = WorkQueue()
    results: list[str | None] = []
    getters = [threading.Thread(target=lambda: results.append(queue.get())) for _ in range(3)]
    for g in getters:
        g.start()
    time.sleep(0.02)
    queue.add_after("later", 10)  # the timer thread must stop too
    queue.shutdown()
    for g in getters:
        g.join(1)
        assert not g.is_alive()
    assert results == [None, None, None]
    assert queue.shutting_down
    assert queue._timer is not None and not queue._timer.is_alive()
    queue.add("x")
    assert len(queue) == 0
    assert queue.get() is None


def test_get_after_shutdown_returns_none_even_with_items_left() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.shutdown()
    assert queue.get() is None


class RecordingSink:
    """What the queue tells its metrics, in order; ``kinds``: the kind each call was of."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[float, ...]]] = []
        self.kinds: list[str] = []

    def added(self, kind: str, depth: int) -> None:
        self.calls.append(("added", (depth,)))
        self.kinds.append(kind)

    def got(self, kind: str, wait_seconds: float, depth: int) -> None:
        self.calls.append(("got", (wait_seconds, depth)))
        self.kinds.append(kind)

    def finished(self, kind: str, work_seconds: float) -> None:
        self.calls.append(("finished", (work_seconds,)))
        self.kinds.append(kind)

    def retried(self, kind: str) -> None:
        self.calls.append(("retried", ()))
        self.kinds.append(kind)


def test_metrics_sink_sees_adds_waits_work_and_retries() -> None:
    sink = RecordingSink()
    _: QueueMetricsSink = sink  # structural check
    queue: WorkQueue[str] = WorkQueue(sink=sink)
    queue.add("a")
    queue.add("b")
    queue.add("a")  # de-duplicated: not an add
    time.sleep(0.02)
    assert queue.get() == "a"
    time.sleep(0.02)
    queue.done("a")
    queue.add_after("c", 0)  # a delayed add is not a retry (as in client-go)
    names = [name for name, _ in sink.calls]
    assert names == ["added", "added", "got", "finished", "added"]
    queue.add_rate_limited("d")  # a rate-limited add is
    assert [name for name, _ in sink.calls][5:] == ["retried"]
    assert sink.calls[1][1] == (2,)  # depth after the second add
    wait, depth = sink.calls[2][1]
    assert wait >= 0.015 and depth == 1
    assert sink.calls[3][1][0] >= 0.015


def test_each_kind_of_item_is_counted_as_a_queue_of_its_own() -> None:
    sink = RecordingSink()
    queue: WorkQueue[str] = WorkQueue(sink=sink, kind_of=lambda item: item.split(":")[0])
    for item in ("node:a", "pool:x", "node:b", "node:c"):
        queue.add(item)
    assert list(zip(sink.kinds, sink.calls, strict=True)) == [
        ("node", ("added", (1,))),
        ("pool", ("added", (1,))),  # its own depth, not the queue's 2
        ("node", ("added", (2,))),
        ("node", ("added", (3,))),
    ]
    assert queue.get() == "node:a"
    assert (sink.kinds[-1], sink.calls[-1][1][1]) == ("node", 2)
    assert queue.get() == "pool:x"
    assert (sink.kinds[-1], sink.calls[-1][1][1]) == ("pool", 0)
    assert queue.unfinished_work_seconds("pool") >= 0.0
    pool_first = queue.longest_running_seconds("pool")  # taken after node:a, read first
    assert queue.longest_running_seconds("node") >= pool_first
    queue.done("pool:x")
    assert queue.longest_running_seconds("pool") == 0.0 < queue.longest_running_seconds()
    queue.add_rate_limited("pool:x")
    assert (sink.kinds[-1], sink.calls[-1][0]) == ("pool", "retried")
    queue.shutdown()


def test_dirty_item_counts_as_added_when_it_is_queued_again() -> None:
    sink = RecordingSink()
    queue: WorkQueue[str] = WorkQueue(sink=sink)
    queue.add("a")
    queue.get()
    queue.add("a")
    assert [name for name, _ in sink.calls] == ["added", "got"]
    queue.done("a")
    assert sink.calls[-1] == ("added", (1,))


def test_unfinished_and_longest_running_work() -> None:
    queue: WorkQueue[str] = WorkQueue()
    assert queue.unfinished_work_seconds() == 0.0
    assert queue.longest_running_seconds() == 0.0
    queue.add("a")
    queue.add("b")
    queue.get()
    time.sleep(0.5)  # b starts 0.5 s after a: the two reads below may be 0.25 s apart
    queue.get()
    time.sleep(0.02)
    longest = queue.longest_running_seconds()
    unfinished = queue.unfinished_work_seconds()
    assert longest >= 0.52
    assert unfinished >= longest + 0.02
    assert unfinished < 2 * longest
    queue.done("a")
    queue.done("b")
    assert queue.unfinished_work_seconds() == pytest.approx(0.0)
