"""A status write to an object deleted since the cache was read ends the write quietly:
the deletion event that follows queues the reconcile that forgets the object, and a
raised NotFound would only print a traceback and retry what can no longer be done (seen
on a real kube-apiserver: a Host erased during an outage, tests/cluster/test_outages.py)."""

from __future__ import annotations

from state_controller.api import API_VERSION
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, NotFound
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.informer import Informer
from state_controller.runtime.statuses import BookWriter
from tests.support.hand_driven import StatusWrites


def test_a_status_write_to_a_deleted_object_is_no_failure_and_no_write() -> None:
    cluster = EmbeddedCluster()
    host = cluster.create(
        HOSTS,
        {"apiVersion": API_VERSION, "kind": "Host", "metadata": {"name": "h", "namespace": "ns"}},
    )
    hosts = Informer(cluster, HOSTS, "ns")
    reporter = StatusWrites()
    writer = BookWriter(cluster, hosts, ControllerConfig(), reporter)

    written = writer.update_status(HOSTS, hosts, host, {"errorMessage": "first"})
    assert reporter.writes == [("hosts", "written")]
    cluster.delete(HOSTS, "ns", "h")
    for stale in (host, written):  # a stale version (a conflict first), and the latest
        assert writer.update_status(HOSTS, hosts, stale, {"errorMessage": "x"}) is stale
    assert reporter.writes == [("hosts", "written")]
    try:
        cluster.get(HOSTS, "ns", "h")
    except NotFound:
        pass
    else:
        raise AssertionError("the write brought the Host back")
    cluster.close()
