"""The controller's own status object kept by each replica (runtime/self_status.py),
look by look: the first look makes the object and writes this replica's entry; a look
that finds nothing changed writes nothing, and a count that moved is written at the
next; a replica that lost a race to another reads again and keeps the other's entry,
never writing over it; an object deleted is made again; a shard whose Lease dies stops
counting in the NodePools at once; and with CRDs that predate the object, the
controller is told once and runs on without it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from state_controller.api import API_VERSION
from state_controller.api.controller_status import ConfigCount, PoolShare
from state_controller.api.hoststate import Mode
from state_controller.api.objects import Obj
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import CONTROLLERS, LEASES, NotFound, Resource
from state_controller.cluster.schema import validators
from state_controller.health.summary import ProvisionerSeen, Share
from state_controller.runtime.self_status import SelfStatus
from state_controller.sharding.leases import LEASE_PREFIX, micro_time
from state_controller.sharding.members import Members, identity_for
from testbed.clocks import T0, Clock
from testbed.hand_driven import StatusWrites
from testbed.waiting import wait_for

NAME = "hoststate-system"  # the object's name: the controller's namespace


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    store = EmbeddedCluster(validators=validators())
    yield store
    store.close()


def replica(
    cluster: EmbeddedCluster,
    member: str,
    *,
    hosts: list[int],
    shard: str = "",
    reporter: StatusWrites | None = None,
    pools: tuple[PoolShare, ...] = (),
    on_pools: Callable[[set[str]], None] = lambda names: None,
) -> SelfStatus:
    """A replica's keeper of the object; ``hosts[0]`` is the count its books give now.
    Its caches are not started: what it holds is what it wrote, found, or is given."""
    return SelfStatus(
        cluster,
        name=NAME,
        member=member,
        shard=shard,
        lease_namespace=NAME,
        members=Members(frozenset({"a", "b"}), 15) if shard else None,
        share=lambda _now: Share(hosts=hosts[0], pools=pools),
        synced=lambda: True,
        provisioner=lambda: ProvisionerSeen("simulated"),
        mode=Mode.CLUSTER,
        version="1.0",
        reporter=reporter or StatusWrites(),
        on_pools=on_pools,
        clock=Clock(),
    )


def stored(cluster: EmbeddedCluster) -> Obj:
    return cluster.get(CONTROLLERS, None, NAME)


def members(status: dict[str, Any]) -> list[tuple[str, int]]:
    return [(m["name"], m["hosts"]) for m in status.get("members") or []]


def test_the_first_look_makes_the_object_and_a_look_at_rest_writes_nothing(
    cluster: EmbeddedCluster,
) -> None:
    count, reporter = [3], StatusWrites()
    keeper = replica(cluster, "pod-0", hosts=count, reporter=reporter)

    assert keeper.tick() is False
    first = stored(cluster)
    assert members(first["status"]) == [("pod-0", 3)]
    assert first["status"]["hosts"] == 3 and keeper.status == first["status"]

    keeper.tick()
    assert stored(cluster)["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert [outcome for _, outcome in reporter.writes] == ["written", "unchanged"]

    count[0] = 4  # a host more in its books
    keeper.tick()
    assert members(stored(cluster)["status"]) == [("pod-0", 4)]


def put_lease(cluster: EmbeddedCluster, shard: str, renewed: float) -> None:
    spec = {"holderIdentity": identity_for(shard, "0123abcd"), "leaseDurationSeconds": 15,
            "renewTime": micro_time(renewed)}  # fmt: skip
    try:
        cluster.patch(LEASES, NAME, LEASE_PREFIX + shard, {"spec": spec})
    except NotFound:
        meta = {"name": LEASE_PREFIX + shard, "namespace": NAME}
        cluster.create(LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                "metadata": meta, "spec": spec})  # fmt: skip


def test_a_shard_whose_lease_dies_stops_counting_in_the_pools_before_the_next_look(
    cluster: EmbeddedCluster,
) -> None:
    for shard in ("a", "b"):
        put_lease(cluster, shard, T0 - 1)
    share = PoolShare(pool="worker", target="v2", updated=[ConfigCount(config="v2", machines=3)])
    told: list[set[str]] = []
    a = replica(cluster, "a", shard="a", hosts=[3], pools=(share,))
    b = replica(cluster, "b", shard="b", hosts=[0], on_pools=told.append)
    assert b.leases is not None
    for informer in (b.leases, b.objects):
        informer.start()
    try:
        assert b.leases.wait_synced(10)
        a.tick()  # a's share of the pool, on the object
        wait_for(lambda: b.pool_shares("worker") == [share], what="a's share seen by b")
        # told from the informer's thread, just after the share is kept
        wait_for(lambda: told == [{"worker"}], what=f"the pool counted once; told {told}")

        put_lease(cluster, "a", T0 - 3600)  # a died: its Nodes move to b, which counts them
        wait_for(lambda: b.pool_shares("worker") == [], what="a's share dropped with no look")
        # the pool is counted again at once
        wait_for(lambda: told == [{"worker"}, {"worker"}], what=f"counted again; told {told}")
        assert [m["name"] for m in stored(cluster)["status"]["members"]] == ["a"]
    finally:
        for informer in (b.leases, b.objects):
            informer.stop()


def test_a_replica_that_lost_a_race_reads_again_and_keeps_the_others_entry(
    cluster: EmbeddedCluster,
) -> None:
    for shard in ("a", "b"):
        spec = {"holderIdentity": identity_for(shard, "0123abcd"), "leaseDurationSeconds": 15,
                "renewTime": micro_time(T0 - 1)}  # fmt: skip
        meta = {"name": LEASE_PREFIX + shard, "namespace": NAME}
        cluster.create(LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                "metadata": meta, "spec": spec})  # fmt: skip
    body = {"apiVersion": API_VERSION, "kind": CONTROLLERS.kind, "metadata": {"name": NAME}}
    empty = cluster.create(CONTROLLERS, {**body, "spec": {}})
    a = replica(cluster, "a", shard="a", hosts=[5])
    b = replica(cluster, "b", shard="b", hosts=[7])
    for keeper in (a, b):
        assert keeper.leases is not None
        keeper.leases.start()
        assert keeper.leases.wait_synced(10)
        keeper.objects.mutate(empty)  # both read the object before either wrote
    try:
        assert a.tick() is False
        assert members(stored(cluster)["status"]) == [("a", 5)]

        assert b.tick() is True  # a wrote in between: look again at once
        assert members(stored(cluster)["status"]) == [("a", 5)]  # nothing written over it
        assert b.tick() is False
        assert members(stored(cluster)["status"]) == [("a", 5), ("b", 7)]
        assert stored(cluster)["status"]["hosts"] == 12
    finally:
        for keeper in (a, b):
            assert keeper.leases is not None
            keeper.leases.stop()


def test_an_object_deleted_is_made_again_at_the_next_look(cluster: EmbeddedCluster) -> None:
    count = [1]
    keeper = replica(cluster, "pod-0", hosts=count)
    keeper.tick()
    first_uid = stored(cluster)["metadata"]["uid"]
    cluster.delete(CONTROLLERS, None, NAME)  # its cache has not heard yet
    count[0] = 2

    assert keeper.tick() is False  # its write finds it gone: nothing to do this time
    with pytest.raises(NotFound):
        stored(cluster)
    keeper.tick()
    again = stored(cluster)
    assert again["metadata"]["uid"] != first_uid
    assert members(again["status"]) == [("pod-0", 2)]


class WithoutTheResource(EmbeddedCluster):
    """An API server whose CRDs predate the HostStateController."""

    def list(self, resource: Resource, *args: Any, **kwargs: Any) -> tuple[list[Obj], str]:
        if resource == CONTROLLERS:
            raise NotFound("the server could not find the requested resource")
        return super().list(resource, *args, **kwargs)


def test_crds_that_predate_the_object_are_told_once_and_nothing_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="state_controller.runtime.self_status")
    cluster = WithoutTheResource()
    keeper = replica(cluster, "pod-0", hosts=[1])
    try:
        keeper.start()
        running = [t.name for t in threading.enumerate() if t.is_alive()]
    finally:
        keeper.stop()
        cluster.close()
    told = [r.getMessage() for r in caplog.records if "hoststatecontrollers" in r.getMessage()]
    assert len(told) == 1 and "apply api/v1alpha1" in told[0]
    assert keeper._thread is None and "informer-hoststatecontrollers" not in running
