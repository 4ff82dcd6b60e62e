"""What a round of the sharder writes (runtime/shards/sharder.py), driven round by round
in process: an assignment labels the HostState before its Host (the new owner opens the
book from the HostState), and a Host with no HostState yet is assigned all the same;
each write carries the resourceVersion it was decided on, so a Host changed since is
not written blind but decided again, from its new copy, on a later round. (The sharder
running on its own thread, on both backends: tests/scenarios/test_sharder.py.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from state_controller.api.objects import Obj
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, HOSTSTATES, LEASES, Resource
from state_controller.runtime.shards.sharder import Sharder
from state_controller.runtime.writing.book_writer import hoststate_of_host
from state_controller.sharding.leases import LEASE_PREFIX, SHARD_LABEL, micro_time
from state_controller.sharding.members import Members, identity_for
from state_controller.simulation.fleet import host_manifest
from testbed.clocks import T0, Clock
from testbed.waiting import wait_for

LEASE_NS = "hoststate-system"
NS = "metal"
MEMBERS = Members(frozenset({"a"}), 15)


class Racing(EmbeddedCluster):
    """The embedded store, where another writer changes a Host just before the sharder's
    next patch of it reaches the store."""

    def __init__(self) -> None:
        super().__init__()
        self.race_on = ""  # the Host whose next patch meets a change made first

    def patch(self, resource: Resource, namespace: str | None, name: str, body: Obj) -> Obj:
        if resource == HOSTS and name == self.race_on:
            self.race_on = ""
            super().patch(HOSTS, namespace, name, {"metadata": {"labels": {"team": "b"}}})
        return super().patch(resource, namespace, name, body)


@pytest.fixture
def cluster() -> Iterator[Racing]:
    store = Racing()
    spec = {
        "holderIdentity": identity_for("a", "0123abcd"),
        "leaseDurationSeconds": 15,
        "renewTime": micro_time(T0 - 1),
    }
    meta = {"name": LEASE_PREFIX + "a", "namespace": LEASE_NS}
    store.create(LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                          "metadata": meta, "spec": spec})  # fmt: skip
    yield store
    store.close()


@pytest.fixture
def sharder(cluster: Racing) -> Iterator[Sharder]:
    """A sharder whose caches run but whose rounds the test calls."""
    judging = Sharder(cluster, lease_namespace=LEASE_NS, members=MEMBERS, namespaces=(NS,),
                      clock=Clock())  # fmt: skip
    for informer in (judging.leases, judging.hosts):
        informer.start()
        assert informer.wait_synced(10)
    yield judging
    judging.hosts.stop()
    judging.leases.stop()


def shard_of(obj: Obj) -> str:
    return str((obj["metadata"].get("labels") or {}).get(SHARD_LABEL, ""))


def seen(sharder: Sharder, cluster: Racing, name: str) -> bool:
    """Whether the sharder's cache holds the Host as the store does."""
    cached = sharder.hosts.get(f"{NS}/{name}")
    stored = cluster.get(HOSTS, NS, name)["metadata"]["resourceVersion"]
    return cached is not None and cached["metadata"]["resourceVersion"] == stored


def test_an_assignment_labels_the_hoststate_first_and_needs_none(
    cluster: Racing, sharder: Sharder
) -> None:
    with_state = cluster.create(HOSTS, host_manifest(NS, 0))
    cluster.create(HOSTSTATES, hoststate_of_host(with_state))
    cluster.create(HOSTS, host_manifest(NS, 1))  # its HostState not made yet
    wait_for(lambda: seen(sharder, cluster, "host-0001"), what="both Hosts cached")

    moves = sharder.round()

    assert sorted(move.key for move in moves) == [f"{NS}/host-0000", f"{NS}/host-0001"]
    host = cluster.get(HOSTS, NS, "host-0000")
    state = cluster.get(HOSTSTATES, NS, "host-0000")
    assert shard_of(host) == shard_of(state) == "a"
    assert int(state["metadata"]["resourceVersion"]) < int(host["metadata"]["resourceVersion"])
    assert shard_of(cluster.get(HOSTS, NS, "host-0001")) == "a"
    assert sharder.written == 2


def test_a_host_changed_since_it_was_judged_is_not_written_blind(
    cluster: Racing, sharder: Sharder
) -> None:
    cluster.create(HOSTS, host_manifest(NS, 0))
    wait_for(lambda: seen(sharder, cluster, "host-0000"), what="the Host cached")
    cluster.race_on = "host-0000"

    assert sharder.round() == []

    raced = cluster.get(HOSTS, NS, "host-0000")
    assert raced["metadata"]["labels"] == {"team": "b"}  # the other writer's, and only that
    assert sharder.written == 0

    wait_for(lambda: seen(sharder, cluster, "host-0000"), what="the change cached")
    (move,) = sharder.round()  # decided again: its label changed, and the write failed
    assert move.key == f"{NS}/host-0000" and move.to == "a"
    assert cluster.get(HOSTS, NS, "host-0000")["metadata"]["labels"] == {
        "team": "b",
        SHARD_LABEL: "a",
    }
