"""A BareMetalHost handed over to a Host, whose pause was taken away
(runtime/baremetalhosts/handed_over.py): told on the BareMetalHost and on the Host, once
per unpause, with the commands of both ways out; a BareMetalHost paused, never handed
over, or gone is not told, and one paused again and unpaused once more is told again."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext

import pytest

from state_controller.api import annotations as ann
from state_controller.api.baremetalhost import PAUSED
from state_controller.api.objects import Obj
from state_controller.books.journal import Entry, Notice
from state_controller.runtime.baremetalhosts.handed_over import UNPAUSED, UnpauseWatch
from state_controller.runtime.machinery.reporting import NO_SPAN, ReconcileSpan
from testbed.clocks import T0, Clock

NS = "metal"
KEY = f"{NS}/worker-0"
BMH_UID = "bmh-uid-0"


class Told:
    """A reporter that keeps what it was handed: (kind of object, entries)."""

    def __init__(self) -> None:
        self.reports: list[tuple[str, list[Entry]]] = []

    def reconcile_span(self, key: str) -> AbstractContextManager[ReconcileSpan]:
        return nullcontext(NO_SPAN)

    def report(self, host: Obj, entries: Sequence[Entry]) -> None:
        self.reports.append((str(host["kind"]), list(entries)))

    def status_write(self, resource: str, outcome: str) -> None:
        pass

    def reconciled(self, kind: str, result: str, seconds: float) -> None:
        pass


def bmh(**annotations: str) -> Obj:
    meta = {"name": "worker-0", "namespace": NS, "uid": BMH_UID, "annotations": annotations}
    return {"kind": "BareMetalHost", "metadata": meta}


def host(**annotations: str) -> Obj:
    meta = {"name": "worker-0", "namespace": NS, "uid": "host-uid-0", "annotations": annotations}
    return {"kind": "Host", "metadata": meta}


HANDED_OVER = {ann.HANDED_OVER_TO: f"Host {KEY}"}  # adopt's mark, its pause taken away
PAUSED_AGAIN = {ann.HANDED_OVER_TO: f"Host {KEY}", PAUSED: "hoststate.io/adopt"}


@pytest.fixture
def told() -> Told:
    return Told()


@pytest.fixture
def watch(told: Told) -> UnpauseWatch:
    return UnpauseWatch(told, Clock())


def test_an_unpaused_handed_over_host_is_told_on_both_objects_with_both_ways_out(
    told: Told, watch: UnpauseWatch
) -> None:
    watch.look(KEY, bmh(**HANDED_OVER), host())

    assert [kind for kind, _ in told.reports] == ["BareMetalHost", "Host"]
    for _, entries in told.reports:
        (notice,) = entries
        assert isinstance(notice, Notice)
        assert (notice.type, notice.reason, notice.at) == ("Warning", UNPAUSED, T0)
        assert f"kubectl annotate bmh worker-0 -n {NS} {PAUSED}=hoststate.io/adopt" in (
            notice.message
        )
        assert "docs/baremetal-operator.md" in notice.message


def test_the_hosts_adopted_from_alone_is_enough_to_tell(told: Told, watch: UnpauseWatch) -> None:
    watch.look(KEY, bmh(), host(**{ann.ADOPTED_FROM: BMH_UID}))
    assert len(told.reports) == 2


def test_an_unpause_is_told_once_however_often_it_is_looked_at(
    told: Told, watch: UnpauseWatch
) -> None:
    for _ in range(5):
        watch.look(KEY, bmh(**HANDED_OVER), host())
    assert len(told.reports) == 2


def test_paused_again_then_unpaused_is_told_again(told: Told, watch: UnpauseWatch) -> None:
    watch.look(KEY, bmh(**HANDED_OVER), host())
    watch.look(KEY, bmh(**PAUSED_AGAIN), host())
    assert len(told.reports) == 2  # paused: nothing to tell
    watch.look(KEY, bmh(**HANDED_OVER), host())
    assert len(told.reports) == 4


def test_gone_then_back_unpaused_is_told_again(told: Told, watch: UnpauseWatch) -> None:
    watch.look(KEY, bmh(**HANDED_OVER), host())
    watch.look(KEY, None, host())  # the BareMetalHost deleted
    watch.look(KEY, bmh(**HANDED_OVER), None)  # made again, its Host not (yet) there
    assert len(told.reports) == 2
    watch.look(KEY, bmh(**HANDED_OVER), host())
    assert len(told.reports) == 4


@pytest.mark.parametrize(
    ("bmh_notes", "host_notes"),
    [
        (PAUSED_AGAIN, {}),  # still paused
        ({}, {}),  # never handed over: baremetal-operator's own
        ({}, {ann.ADOPTED_FROM: "another-uid"}),  # adopted from another BareMetalHost
    ],
    ids=["paused", "never-handed-over", "adopted-from-another"],
)
def test_a_host_not_both_handed_over_and_unpaused_is_not_told(
    told: Told, watch: UnpauseWatch, bmh_notes: dict[str, str], host_notes: dict[str, str]
) -> None:
    watch.look(KEY, bmh(**bmh_notes), host(**host_notes))
    assert told.reports == []


def test_each_host_is_told_for_itself(told: Told, watch: UnpauseWatch) -> None:
    watch.look(KEY, bmh(**HANDED_OVER), host())
    other = bmh(**HANDED_OVER)
    other["metadata"]["name"] = "worker-1"
    watch.look(f"{NS}/worker-1", other, host())
    messages = [entries[0].message for _, entries in told.reports]
    assert len(messages) == 4
    assert f"{NS}/worker-1" in messages[2] and f"{NS}/worker-0" in messages[0]
