"""Learned durations: each step's time, per pool and hardware class, from the books'
records; estimates that say what they rest on and none from too little; each record
learned once, from a book's history on its first read and its journal after."""

from __future__ import annotations

import math
import time

import pytest

from state_controller.api.hoststate import HostStateStatus
from state_controller.api.servicing import ServiceStep
from state_controller.api.states import ProvisioningState as P
from state_controller.api.updates import UpdateStep as S
from state_controller.books.book import Book
from state_controller.books.journal import SLOW, Notice
from state_controller.books.projections import hoststate_status
from state_controller.books.records import ServiceCursor, UpdateCursor
from state_controller.books.restore import restore
from state_controller.books.stuck import StuckPolicy
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTSTATES
from state_controller.cluster.schema import validators
from state_controller.durations.expected import expect, steps_after
from state_controller.durations.keys import (
    ANY,
    PROVISIONING,
    SERVICING,
    UPDATE,
    StepKey,
    hardware_class,
)
from state_controller.durations.learned import Learned
from state_controller.durations.reading import DurationReader, ReadUpTo
from state_controller.durations.window import Window
from state_controller.observability.collectors import BooksCollector
from state_controller.observability.durations import LearnedCollector
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.machinery.informer import Informer
from state_controller.runtime.writing.book_writer import BookWriter
from state_controller.runtime.writing.delivery import Delivery
from testbed.clocks import T0
from testbed.hand_driven import NoReporter

DELL = {"systemVendor": {"manufacturer": "Dell Inc.", "productName": "PowerEdge R750"}}


def test_a_window_keeps_the_last_durations_and_reads_quantiles_between_ranks() -> None:
    window = Window(size=4)
    for seconds in (100, 1, 2, 3, 4):  # the first is let go
        window.add(seconds)
    assert len(window) == 4 and window.count == 5
    assert window.quantile(0.5) == pytest.approx(2.5)
    assert window.quantile(0.0) == 1 and window.quantile(1.0) == 4
    with pytest.raises(ValueError):
        Window().quantile(0.5)


def test_the_hardware_class_is_vendor_and_model_bounded() -> None:
    assert hardware_class(DELL) == "Dell Inc. PowerEdge R750"
    assert hardware_class(None) == ""
    assert hardware_class({"systemVendor": "not a map"}) == ""
    long = {"systemVendor": {"manufacturer": "x" * 100, "productName": "y"}}
    assert len(hardware_class(long)) == 64


def test_an_estimate_rests_on_the_narrowest_key_with_enough_durations_and_says_so() -> None:
    learned = Learned(min_samples=3)
    slow = StepKey(UPDATE, "rebooting", "worker", "Vendor Slow")
    fast = StepKey(UPDATE, "rebooting", "worker", "Vendor Fast")
    assert learned.estimate(slow) is None  # nothing learned: nothing made up
    for seconds in (900, 1000, 1100):
        learned.learn(slow, seconds)
    for seconds in (100, 110):
        learned.learn(fast, seconds)
    own = learned.estimate(slow)
    assert own is not None and own.key == slow and own.median == 1000 and own.samples == 3
    # two of its own are too few: the pool's (every class) stands in, and says it does
    wider = learned.estimate(fast)
    assert wider is not None and wider.key == StepKey(UPDATE, "rebooting", "worker", ANY)
    assert wider.samples == 5 and wider.median == 900
    assert learned.estimate(StepKey(UPDATE, "draining", "worker", "Vendor Fast")) is None
    assert own.words("reboots") == "16m40s-18m0s, from 3 past reboots"


def test_negative_durations_are_not_learned_and_keys_are_bounded() -> None:
    learned = Learned(max_keys=8, min_samples=1)
    learned.learn(StepKey(UPDATE, "draining", "p", "c"), -1)
    assert learned.known() == []
    for i in range(10):
        learned.learn(StepKey(UPDATE, "draining", f"pool-{i}", "c"), i)
    assert len(learned.known()) == 8  # the least recently taught let go first
    assert StepKey(UPDATE, "draining", "pool-9", "c") in learned.known()
    assert StepKey(UPDATE, "draining", "pool-0", "c") not in learned.known()


def book_with_an_update() -> Book:
    book = Book("metal/host-0", now=T0)
    book.note(now=T0, hardware=DELL, node="worker-0")
    for i, state in enumerate((P.REGISTERING, P.INSPECTING, P.PREPARING, P.AVAILABLE)):
        book.move(state, now=T0 + 10 * i, reason="r")
    book.move(P.PROVISIONED, now=T0 + 100, reason="ProvisioningComplete")
    at = T0 + 200
    for step, spent in ((S.DRAINING, 30), (S.APPLYING, 40), (S.REBOOTING, 300), (S.UPDATED, 0)):
        shown = UpdateCursor(step=step, desired="v2", current="v2" if step == S.UPDATED else "v1")
        book.update_to(shown, now=at, reason=step.name.title())
        at += spent
    return book


def test_a_books_history_is_learned_on_its_first_read_and_each_record_once() -> None:
    learned = Learned(min_samples=1)
    reader = DurationReader(learned, lambda book: "worker")
    book = book_with_an_update()
    up_to = ReadUpTo()
    reader.read(book, [], up_to)  # a restarted controller: the history is all there is
    key = reader.key_of(book, UPDATE, S.REBOOTING.value)
    assert key == StepKey(UPDATE, "rebooting", "worker", "Dell Inc. PowerEdge R750")
    rebooting = learned.estimate(key)
    assert rebooting is not None and rebooting.median == 300 and rebooting.samples == 1
    inspecting = learned.estimate(reader.key_of(book, PROVISIONING, "inspecting"))
    assert inspecting is not None and inspecting.median == 10
    assert learned.estimate(reader.key_of(book, PROVISIONING, "available")) is None  # resting
    entries, _ = book.journal.since(0)
    reader.read(book, entries, up_to)  # the same records from the journal: not again
    again = learned.estimate(key)
    assert again is not None and again.seen == 1
    # a new update: its steps are learned from the journal, once
    mark = book.journal.end
    shown = UpdateCursor(step=S.REBOOTING, desired="v3", current="v2")
    book.update_to(shown, now=T0 + 1000, reason="Rebooting")
    book.update_to(UpdateCursor(step=S.UPDATED, desired="v3", current="v3"), now=T0 + 1500,
                   reason="Updated")  # fmt: skip
    entries, _ = book.journal.since(mark)
    reader.read(book, entries, up_to)
    reader.read(book, entries, up_to)
    both = learned.estimate(key)
    assert both is not None and both.seen == 2 and both.median == 400


def test_the_metrics_show_each_keys_median_late_bound_and_samples() -> None:
    learned = Learned(min_samples=1)
    for seconds in (10, 20, 30):
        learned.learn(StepKey(UPDATE, "draining", "worker", "Dell"), seconds)
    learned.learn(StepKey(UPDATE, "draining", "", ""), 5)  # no pool, no inventory
    families = {f.name: f for f in LearnedCollector(learned).collect()}

    def by_key(name: str) -> dict[tuple[str, str], float]:
        return {
            (s.labels["pool"], s.labels["hardware_class"]): s.value for s in families[name].samples
        }

    median = by_key("hoststate_learned_duration_median_seconds")
    assert median["worker", "Dell"] == 20
    assert by_key("hoststate_learned_duration_late_seconds")["worker", "Dell"] == pytest.approx(28)
    assert median["*", "*"] == 15  # the fleet's (5, 10, 20, 30), for a whole-fleet row
    assert median["unlabeled", "unknown"] == 5  # a label is never empty
    assert by_key("hoststate_learned_duration_samples")["worker", "Dell"] == 3
    for family in families.values():
        for sample in family.samples:
            assert all(sample.labels.values()) and "quantile" not in sample.labels


def updating_book(step: S, *, entered: float) -> Book:
    book = Book("metal/host-0", now=T0)
    book.note(now=T0, hardware=DELL, node="worker-0")
    book.move(P.PROVISIONED, now=T0, reason="ProvisioningComplete")
    book.update_to(UpdateCursor(step=step, desired="v2", current="v1"), now=entered, reason="r")
    return book


def taught(**steps: tuple[float, ...]) -> tuple[Learned, DurationReader]:
    learned = Learned()
    reader = DurationReader(learned, lambda book: "worker")
    for step, durations in steps.items():
        for seconds in durations:
            learned.learn(
                StepKey(UPDATE, step.replace("_", " "), "worker", "Dell Inc. PowerEdge R750"),
                seconds,
            )
    return learned, reader


def test_what_to_expect_is_the_step_and_the_steps_left_from_their_learned_durations() -> None:
    learned, reader = taught(
        draining=(60, 60, 60, 60, 120),  # median 60, late bound 96
        applying_update=(30,) * 5,  # no spread
        rebooting=(600, 600, 600, 600, 900),  # median 600, late bound 780
    )  # resuming, cordoning: never seen, so they add nothing
    book = updating_book(S.DRAINING, entered=T0 + 100)
    expected = expect(book, learned, reader.key_of)
    assert expected is not None
    assert (expected.kind, expected.step, expected.entered_at) == (UPDATE, "draining", T0 + 100)
    assert expected.step_ends_at == T0 + 160
    assert expected.step_late_at - T0 == pytest.approx(196)
    assert expected.ends_at == T0 + 100 + 60 + 30 + 600
    assert expected.late_at - T0 == pytest.approx(790 + math.hypot(36, 180))
    assert expected.samples == 5 and expected.basis == "pool worker, Dell Inc. PowerEdge R750"


def test_nothing_is_expected_of_a_step_without_enough_durations_or_at_rest() -> None:
    learned, reader = taught(draining=(60,) * 4)
    assert expect(updating_book(S.DRAINING, entered=T0), learned, reader.key_of) is None
    learned.learn(StepKey(UPDATE, "draining", "other", "x"), 60)  # the fleet has 5 now
    wider = expect(updating_book(S.DRAINING, entered=T0), learned, reader.key_of)
    assert wider is not None and wider.basis == "the fleet"
    assert expect(updating_book(S.PENDING, entered=T0), learned, reader.key_of) is None


def test_the_time_a_failed_apply_held_its_machine_is_learned_and_nothing_expected_of_it() -> None:
    """``update degraded`` ends when someone acts, not when a step would: its time is
    learned (a rollout allows for it as often as it came), but a degraded host is given no
    end of its step, nor told slow against it."""
    learned, reader = taught(update_degraded=(1800,) * 5)
    book = updating_book(S.DEGRADED, entered=T0 + 100)
    assert expect(book, learned, reader.key_of) is None
    book.update_to(UpdateCursor(step=S.APPLYING, desired="v2", current="v1"), now=T0 + 400,
                   reason="r")  # fmt: skip
    up_to = ReadUpTo()
    reader.read(book, [], up_to)
    degraded = learned.exact(reader.key_of(book, UPDATE, "update degraded"))
    assert degraded is not None and degraded.seen == 6 and min(learned.ring(degraded.key)[1]) == 300


def test_the_steps_left_follow_each_operations_order() -> None:
    book = updating_book(S.DRAINING, entered=T0)
    assert steps_after(book, UPDATE, "draining") == ("applying update", "rebooting", "resuming")
    assert steps_after(book, UPDATE, "reloading CRI-O") == ("resuming",)
    assert steps_after(book, PROVISIONING, "inspecting") == ("preparing",)  # goal: available
    book.note_seen(now=T0, goal=P.PROVISIONED)
    assert steps_after(book, PROVISIONING, "inspecting") == ("preparing", "provisioning")
    assert steps_after(book, PROVISIONING, "powering off before delete") == ("deleting",)
    book.service = ServiceCursor(
        step=ServiceStep.APPLYING_SETTINGS,
        tasks=("applying 2 settings", "updating firmware bios (1 of 2)",
               "updating firmware bmc (2 of 2)", "configuring RAID: 1 volume"),
    )  # fmt: skip
    assert steps_after(book, SERVICING, "applying settings") == (
        "updating firmware", "updating firmware", "configuring RAID", "service rebooting",
        "verifying service",
    )  # fmt: skip
    assert steps_after(book, SERVICING, "service rebooting") == ("verifying service",)


def test_the_estimate_is_made_once_per_step_kept_in_the_status_and_read_back() -> None:
    learned, reader = taught(draining=(60,) * 5, rebooting=(600,) * 5)
    book = updating_book(S.DRAINING, entered=T0 + 100)
    reader.expect(book, T0 + 101)
    made = book.seen.expected
    assert made is not None and made.ends_at == T0 + 760
    for _ in range(5):  # other machines teach: what was said for this step stands
        learned.learn(reader.key_of(book, UPDATE, "draining"), 6000)
    reader.expect(book, T0 + 102)
    assert book.seen.expected is made
    shown = hoststate_status(book, StuckPolicy(), T0 + 102)["estimate"]
    assert shown["endsBy"] == time.strftime("%H:%M", time.gmtime(T0 + 760))
    assert shown["samples"] == 5 and shown["step"] == "draining"
    HostStateStatus.model_validate(hoststate_status(book, StuckPolicy(), T0 + 102))
    again = restore(book.key, None, hoststate_status(book, StuckPolicy(), T0 + 102), now=T0 + 103)
    assert again.seen.expected == made  # the times are whole milliseconds here
    book.update_to(UpdateCursor(step=S.REBOOTING, desired="v2", current="v1"), now=T0 + 200,
                   reason="r")  # fmt: skip
    reader.expect(book, T0 + 200)
    rebooting = book.seen.expected
    assert rebooting is not None and rebooting.step == "rebooting"
    book.update_to(UpdateCursor(step=S.UPDATED, desired="v2", current="v2"), now=T0 + 800,
                   reason="r")  # fmt: skip
    reader.expect(book, T0 + 800)
    assert book.seen.expected is None and "estimate" not in hoststate_status(
        book, StuckPolicy(), T0 + 800
    )


def slow_book(learned: Learned, reader: DurationReader, *, entered: float) -> Book:
    book = updating_book(S.DRAINING, entered=entered)
    reader.expect(book, entered)
    return book


def test_a_step_past_its_usual_late_bound_is_slow_told_once_and_timed() -> None:
    learned, reader = taught(draining=(60, 60, 60, 60, 120))  # 1m0s-1m36s usually
    book = slow_book(learned, reader, entered=T0 + 100)
    policy = StuckPolicy()
    before = hoststate_status(book, policy, T0 + 150)["conditions"]
    slow = next(c for c in before if c["type"] == "Slow")
    assert (slow["status"], slow["reason"]) == ("False", "AsUsual")
    assert slow["message"] == (
        "draining takes 1m0s-1m36s on machines like it (pool worker, Dell Inc. PowerEdge "
        "R750), from 5 past durations"
    )
    types = [c["type"] for c in before]
    assert types.index("Slow") == types.index("Stuck") + 1
    after = hoststate_status(book, policy, T0 + 200)["conditions"]
    late = next(c for c in after if c["type"] == "Slow")
    assert (late["status"], late["reason"]) == ("True", "SlowerThanUsual")
    assert late["message"].startswith("in draining since ")
    assert hoststate_status(book, policy, T0 + 900)["conditions"] == after  # no rewrite
    HostStateStatus.model_validate(hoststate_status(book, policy, T0 + 200))

    cluster = EmbeddedCluster(validators=validators())
    try:
        writer = BookWriter(
            cluster, Informer(cluster, HOSTSTATES, "metal"), ControllerConfig(), NoReporter(),
            reader,
        )  # fmt: skip
        delivery = Delivery()
        assert writer.wake_after(book, T0 + 150) == pytest.approx(46)  # its late bound
        for now in (T0 + 150, T0 + 197, T0 + 250):
            writer.notice_timers(book, delivery, now)
        entries, _ = book.journal.since(0)
        (told,) = [e for e in entries if isinstance(e, Notice) and e.reason == SLOW]
        assert told.type == "Normal" and told.state == "draining" and told.at == T0 + 197
    finally:
        cluster.close()

    gauges = {
        f.name: f
        for f in BooksCollector(lambda: {book.key: book}, policy, lambda: T0 + 206).collect()
    }
    (series,) = gauges["hoststate_host_slow_seconds"].samples
    assert series.labels["step"] == "draining" and series.value == pytest.approx(10)
