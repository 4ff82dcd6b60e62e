"""The lead, which keeps what belongs to no shard (runtime/shards/lead.py): sharded, a
replica reconciles a Node's own book or a NodePool only once it holds the lead, and a
Host only if the Host is its own; taking the lead fills the cache of the node-only
HostStates first (and fails, leading nothing, when it cannot); as the lead, the machines
of a name are its own and every shard's. Not sharded, the one replica leads from the
start and its machines are all there are."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from state_controller.api.objects import Obj
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTSTATES, ApiError, Resource
from state_controller.runtime.machinery.keys import bmh_key, node_key, pool_key
from state_controller.runtime.nodes.reconciler import NODE_LABEL
from state_controller.runtime.shards.lead import Lead
from state_controller.runtime.writing.book_writer import hoststate_body

NS = "hoststate-system"
HOST_KEY = "metal/worker-0"


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    store = EmbeddedCluster()
    yield store
    store.close()


def lead(cluster: EmbeddedCluster, *, sharded: bool, seen: list[str] | None = None) -> Lead:
    told = seen if seen is not None else []
    return Lead(
        cluster,
        sharded=sharded,
        node_state_namespace=NS,
        on_node_state=lambda key, _obj: told.append(key),
    )


def node_state(name: str) -> Obj:
    owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": f"uid-{name}"}
    return hoststate_body(NS, name, spec={"host": "", "node": name}, label=NODE_LABEL, owner=owner)


def hosts_state(name: str) -> Obj:
    owner = {"apiVersion": "hoststate.io/v1alpha1", "kind": "Host", "name": name, "uid": "u"}
    return hoststate_body(NS, name, spec={"host": name, "node": ""}, label="other", owner=owner)


def test_not_sharded_the_one_replica_leads_and_reconciles_everything(
    cluster: EmbeddedCluster,
) -> None:
    one = lead(cluster, sharded=False)
    assert one.held() and one.node_states is None
    for key in (node_key("n1"), pool_key("worker"), HOST_KEY, bmh_key(HOST_KEY)):
        assert one.admits(key, own_host=False)
    one.fleet.machine("metal/worker-0", {"metadata": {"uid": "u0"}})
    assert one.named(["metal/worker-0"], "worker-0") == ["metal/worker-0"]


def test_sharded_nodes_and_pools_wait_for_the_lead_and_hosts_for_their_own_shard(
    cluster: EmbeddedCluster,
) -> None:
    replica = lead(cluster, sharded=True)
    try:
        assert not replica.held()
        assert not replica.admits(node_key("n1"), own_host=True)
        assert not replica.admits(pool_key("worker"), own_host=True)
        assert replica.admits(HOST_KEY, own_host=True)
        assert not replica.admits(HOST_KEY, own_host=False)

        replica.take(sync_timeout=10)

        assert replica.held()
        assert replica.admits(node_key("n1"), own_host=False)
        assert replica.admits(pool_key("worker"), own_host=False)
        # the lead meets other shards' Hosts through its links; still not its to reconcile
        assert not replica.admits(HOST_KEY, own_host=False)
    finally:
        replica.stop()


def test_taking_the_lead_caches_the_node_only_hoststates_before_it_leads(
    cluster: EmbeddedCluster,
) -> None:
    for name in ("node-a", "node-b"):
        cluster.create(HOSTSTATES, node_state(name))
    cluster.create(HOSTSTATES, hosts_state("worker-0"))  # a Host's: not the lead's
    told: list[str] = []
    replica = lead(cluster, sharded=True, seen=told)
    try:
        replica.take(sync_timeout=10)
        assert replica.node_states is not None
        # no waiting here: take() returns with the cache filled
        cached = sorted(state["metadata"]["name"] for state in replica.node_states.items())
        assert cached == ["node-a", "node-b"]
        assert sorted(told) == [f"{NS}/node-a", f"{NS}/node-b"]
        replica.take(sync_timeout=10)  # taken again (a second election): nothing restarts
        assert sorted(told) == [f"{NS}/node-a", f"{NS}/node-b"]
    finally:
        replica.stop()


class Unlistable(EmbeddedCluster):
    """An API server that answers no list of HostStates."""

    def list(self, resource: Resource, *args: object, **kwargs: object) -> tuple[list[Obj], str]:
        if resource == HOSTSTATES:
            raise ApiError("the server is not answering")
        return super().list(resource, *args, **kwargs)  # type: ignore[arg-type]


def test_a_lead_whose_cache_cannot_fill_is_not_taken() -> None:
    cluster = Unlistable()
    replica = lead(cluster, sharded=True)
    try:
        with pytest.raises(TimeoutError, match="node-only HostStates"):
            replica.take(sync_timeout=0.2)
        assert not replica.held()
        assert not replica.admits(node_key("n1"), own_host=True)
    finally:
        replica.stop()
        cluster.close()


def test_as_the_lead_the_machines_of_a_name_are_every_shards(cluster: EmbeddedCluster) -> None:
    replica = lead(cluster, sharded=True)
    # the sharder's watch of every Host fills the fleet: two shards' Hosts of one name
    replica.fleet.machine("team-a/worker-0", {"metadata": {"uid": "ua"}})
    replica.fleet.machine("team-b/worker-0", {"metadata": {"uid": "ub"}})
    own = ["team-a/worker-0"]
    assert replica.named(own, "worker-0") == ["team-a/worker-0", "team-b/worker-0"]
    assert replica.named(own, "worker-9") == own  # no other shard's machine of that name
    assert replica.named([], "uid:ub") == ["team-b/worker-0"]
