"""What every reconcile of a book ends with (runtime/writing/book_writer.py): the
HostState made once (owned by its Host, labelled with its shard when sharded), its
``spec.node`` kept naming the book's Node and its status written only when it differs;
a stuck state told once, with how long and the last error; the stuck timer's delay;
and only the journal's new entries handed to the reporter."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from state_controller.api import API_VERSION
from state_controller.api import annotations as ann
from state_controller.api.objects import Obj
from state_controller.api.states import ErrorType
from state_controller.api.states import ProvisioningState as S
from state_controller.books.book import Book
from state_controller.books.journal import STUCK, Entry, Notice
from state_controller.books.stuck import StuckPolicy
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, HOSTSTATES
from state_controller.cluster.schema import validators
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.machinery.informer import Informer
from state_controller.runtime.writing.book_writer import BookWriter, hoststate_of_host
from state_controller.runtime.writing.delivery import Delivery
from state_controller.sharding.leases import SHARD_LABEL
from state_controller.simulation.fleet import host_manifest
from testbed.clocks import T0
from testbed.hand_driven import StatusWrites

NS = "metal"
KEY = f"{NS}/host-0000"
REGISTERING_LIMIT = 60.0


class Reported(StatusWrites):
    """The status writes and every report, as (object's name, entries)."""

    def __init__(self) -> None:
        super().__init__()
        self.reports: list[tuple[str, list[Entry]]] = []

    def report(self, host: Obj, entries: Sequence[Entry]) -> None:
        self.reports.append((str(host["metadata"]["name"]), list(entries)))


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    store = EmbeddedCluster(validators=validators())
    yield store
    store.close()


@pytest.fixture
def host(cluster: EmbeddedCluster) -> Obj:
    return cluster.create(HOSTS, host_manifest(NS, 0))


@pytest.fixture
def reporter() -> Reported:
    return Reported()


@pytest.fixture
def writer(cluster: EmbeddedCluster, reporter: Reported) -> BookWriter:
    config = ControllerConfig(stuck=StuckPolicy(thresholds={S.REGISTERING: REGISTERING_LIMIT}))
    return BookWriter(cluster, Informer(cluster, HOSTSTATES, NS), config, reporter)


def registering(now: float = T0) -> Book:
    book = Book(KEY, now=now)
    book.move(S.REGISTERING, now=now, reason="Registering")
    return book


def stuck_notices(book: Book) -> list[Notice]:
    entries, _ = book.journal.since(0)
    return [e for e in entries if isinstance(e, Notice) and e.reason == STUCK]


def test_a_hosts_hoststate_is_its_namesake_owned_by_it_and_labelled_with_its_shard(
    host: Obj,
) -> None:
    body = hoststate_of_host(host, shard="b")
    meta = body["metadata"]
    assert (meta["namespace"], meta["name"]) == (NS, "host-0000")
    assert meta["labels"] == {ann.HOST_LABEL: "host-0000", SHARD_LABEL: "b"}
    (owner,) = meta["ownerReferences"]
    assert owner == {
        "apiVersion": API_VERSION,
        "kind": "Host",
        "name": "host-0000",
        "uid": host["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": False,  # the controller may not block its Host's deletion
    }
    assert body["spec"] == {"host": "host-0000", "node": ""}
    assert SHARD_LABEL not in hoststate_of_host(host)["metadata"]["labels"]  # not sharded


def test_the_hoststate_is_made_once_and_its_status_written_only_when_it_differs(
    cluster: EmbeddedCluster, host: Obj, writer: BookWriter, reporter: Reported
) -> None:
    book, delivery = registering(), Delivery()

    first = writer.write_hoststate(KEY, book, delivery, T0, lambda: hoststate_of_host(host))
    assert cluster.get(HOSTSTATES, NS, "host-0000")["status"] == first["status"]
    assert first["status"]["provisioning"]["state"] == "registering"
    assert delivery.confirmed_seq == book.last_seq == 1
    assert writer.hoststates.get(KEY) == first  # cached: the next reconcile reads it

    again = writer.write_hoststate(KEY, book, delivery, T0 + 1, lambda: pytest.fail("made twice"))
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert reporter.writes == [("hoststates", "written"), ("hoststates", "unchanged")]

    book.move(S.INSPECTING, now=T0 + 2, reason="Registered")
    moved = writer.write_hoststate(KEY, book, delivery, T0 + 2, lambda: hoststate_of_host(host))
    assert moved["status"]["provisioning"]["state"] == "inspecting"
    assert reporter.writes[-1] == ("hoststates", "written")
    assert delivery.confirmed_seq == 2


def test_spec_node_follows_the_books_node(
    cluster: EmbeddedCluster, host: Obj, writer: BookWriter
) -> None:
    book, delivery = registering(), Delivery()
    writer.write_hoststate(KEY, book, delivery, T0, lambda: hoststate_of_host(host))
    assert cluster.get(HOSTSTATES, NS, "host-0000")["spec"]["node"] == ""

    book.note(now=T0 + 1, node="node-7")
    writer.write_hoststate(KEY, book, delivery, T0 + 1, lambda: hoststate_of_host(host))
    assert cluster.get(HOSTSTATES, NS, "host-0000")["spec"]["node"] == "node-7"


def test_a_hoststate_made_meanwhile_by_another_is_taken_not_failed(
    cluster: EmbeddedCluster, host: Obj, writer: BookWriter
) -> None:
    there = cluster.create(HOSTSTATES, hoststate_of_host(host))
    taken = writer.create(HOSTSTATES, writer.hoststates, hoststate_of_host(host))
    assert taken["metadata"]["uid"] == there["metadata"]["uid"]
    assert writer.hoststates.get(KEY) == taken


def test_a_stuck_state_is_told_once_with_how_long_and_the_last_error(
    writer: BookWriter,
) -> None:
    book, delivery = registering(), Delivery()
    book.fail(ErrorType.REGISTRATION, "BMC said no", now=T0 + 5, reason="RegistrationFailed")
    assert writer.wake_after(book, T0 + 10) == REGISTERING_LIMIT - 10

    writer.notice_stuck(book, delivery, T0 + REGISTERING_LIMIT - 1)  # not yet
    assert stuck_notices(book) == []

    for late in (90, 91, 300):
        writer.notice_stuck(book, delivery, T0 + late)
    (notice,) = stuck_notices(book)
    assert notice.type == "Warning"
    assert notice.message == (
        "host has been registering for 1m30s, longer than the 1m0s allowed; last error: BMC said no"
    )
    assert writer.wake_after(book, T0 + 90) is None  # stuck already: no timer


def test_a_node_stuck_in_its_pool_is_told_with_the_pools_limit_and_what_is_usual(
    cluster: EmbeddedCluster, reporter: Reported
) -> None:
    from state_controller.api.updates import UpdateStep
    from state_controller.books.records import Expected, UpdateCursor
    from state_controller.books.stuck import stuck_policy

    config = ControllerConfig(stuck=stuck_policy(["worker:draining=30m"]))
    writer = BookWriter(cluster, Informer(cluster, HOSTSTATES, NS), config, reporter)
    book, delivery = registering(), Delivery()
    book.note(now=T0, node="worker-0", pool="worker")
    draining = UpdateCursor(UpdateStep.DRAINING, T0 + 60, "v2", "v1")
    book.update_to(draining, now=T0 + 60, reason="StepDraining")
    usual = Expected("update", "draining", T0 + 60, T0 + 240, T0 + 780, T0 + 900,
                     T0 + 1800, 240, "pool worker")  # fmt: skip
    book.note_seen(now=T0 + 60, expected=usual)
    assert writer.wake_after(book, T0 + 60) == 720  # slow first, at the late bound
    writer.notice_stuck(book, delivery, T0 + 60 + 41 * 60)
    (notice,) = stuck_notices(book)
    assert notice.message == (
        "node worker-0 has been draining for 41m0s, longer than the 30m0s allowed in pool "
        "worker; draining takes 3m0s-12m0s on machines like it (pool worker), from 240 "
        "past durations"
    )


def test_a_state_entered_anew_is_told_again_once_stuck(writer: BookWriter) -> None:
    book, delivery = registering(), Delivery()
    writer.notice_stuck(book, delivery, T0 + 61)
    book.move(S.INSPECTING, now=T0 + 62, reason="Registered")  # no limit for inspecting
    assert writer.wake_after(book, T0 + 62) is None
    book.move(S.REGISTERING, now=T0 + 70, reason="Registering")
    writer.notice_stuck(book, delivery, T0 + 100)  # 30 s into this stay
    writer.notice_stuck(book, delivery, T0 + 131)
    assert [n.at for n in stuck_notices(book)] == [T0 + 61, T0 + 131]


def test_only_the_journals_new_entries_are_reported(
    host: Obj, writer: BookWriter, reporter: Reported
) -> None:
    book, delivery = registering(), Delivery()
    writer.report(host, book, delivery)
    writer.report(host, book, delivery)  # nothing new: nothing handed on
    book.move(S.INSPECTING, now=T0 + 1, reason="Registered")
    book.notice("Normal", "Inspected", "looked", now=T0 + 2)
    writer.report(host, book, delivery)

    assert [(name, len(entries)) for name, entries in reporter.reports] == [
        ("host-0000", 1),
        ("host-0000", 2),
    ]
    assert isinstance(reporter.reports[1][1][1], Notice)
    assert delivery.reported == book.journal.end
