"""The one status writer (runtime/writing/status_writer.py): a status the object already holds is
not sent and counts as ``unchanged``; a conflict counts once, and is written over for a
book's status or handed back for the caller to decide again; a write to an object deleted
since the cache was read ends quietly (the deletion event that follows queues the
reconcile that forgets the object, and a raised NotFound would only print a traceback and
retry what can no longer be done: seen on a real kube-apiserver, a Host erased during an
outage, tests/cluster/test_outages.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from state_controller.api import API_VERSION
from state_controller.api.objects import Obj
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, NotFound
from state_controller.runtime.machinery.informer import Informer
from state_controller.runtime.writing.status_writer import OnConflict, Outcome, StatusWriter
from testbed.hand_driven import StatusWrites


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    store = EmbeddedCluster()
    yield store
    store.close()


def a_host(cluster: EmbeddedCluster) -> Obj:
    body = {"apiVersion": API_VERSION, "kind": "Host", "metadata": {"name": "h", "namespace": "ns"}}
    return cluster.create(HOSTS, body)


def test_a_status_already_held_is_not_sent_and_counts_as_unchanged(
    cluster: EmbeddedCluster,
) -> None:
    host, reporter = a_host(cluster), StatusWrites()
    writer = StatusWriter(cluster, reporter)
    written = writer.write(HOSTS, Informer(cluster, HOSTS, "ns"), host, {"errorMessage": "x"})
    again = writer.write(HOSTS, Informer(cluster, HOSTS, "ns"), written.obj, {"errorMessage": "x"})
    assert (written.outcome, again.outcome) == (Outcome.WRITTEN, Outcome.UNCHANGED)
    assert again.obj is written.obj
    assert reporter.writes == [("hosts", "written"), ("hosts", "unchanged")]
    assert (
        cluster.get(HOSTS, "ns", "h")["metadata"]["resourceVersion"]
        == (written.obj["metadata"]["resourceVersion"])
    )


def test_a_conflict_counts_once_and_is_written_over_or_handed_back_as_asked(
    cluster: EmbeddedCluster,
) -> None:
    stale, reporter = a_host(cluster), StatusWrites()
    writer, hosts = StatusWriter(cluster, reporter), Informer(cluster, HOSTS, "ns")
    cluster.patch(HOSTS, "ns", "h", {"metadata": {"labels": {"moved": "on"}}})

    handed = writer.write(HOSTS, hosts, stale, {"a": 1}, on_conflict=OnConflict.DECIDE_AGAIN)
    assert handed.outcome is Outcome.CONFLICT
    assert handed.obj["metadata"]["labels"] == {"moved": "on"}  # as it now is
    assert "status" not in cluster.get(HOSTS, "ns", "h")  # nothing written
    assert hosts.get("ns/h") == handed.obj  # the cache has what was read anew

    over = writer.write(HOSTS, hosts, stale, {"a": 2})
    assert over.outcome is Outcome.CONFLICT
    assert cluster.get(HOSTS, "ns", "h")["status"] == {"a": 2}
    assert reporter.writes == [("hosts", "conflict"), ("hosts", "conflict")]


def test_a_status_write_to_a_deleted_object_is_no_failure_and_no_write(
    cluster: EmbeddedCluster,
) -> None:
    host, reporter = a_host(cluster), StatusWrites()
    hosts = Informer(cluster, HOSTS, "ns")
    writer = StatusWriter(cluster, reporter)

    written = writer.write(HOSTS, hosts, host, {"errorMessage": "first"}).obj
    assert reporter.writes == [("hosts", "written")]
    cluster.delete(HOSTS, "ns", "h")
    for stale in (host, written):  # a stale version (a conflict first), and the latest
        gone = writer.write(HOSTS, hosts, stale, {"errorMessage": "x"})
        assert gone.outcome is Outcome.GONE and gone.obj is stale
    assert reporter.writes == [("hosts", "written")]
    with pytest.raises(NotFound):  # the write did not bring the Host back
        cluster.get(HOSTS, "ns", "h")
