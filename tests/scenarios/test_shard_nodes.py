"""Sharded replicas following Nodes, on both backends: a Node on a Host is told by the
Host's shard, a Node on no Host by the lead (the replica that runs the sharder) and by no
other, and a NodePool counts every shard's Nodes, the others' parts read from the
controller's status. When the lead stops and another takes the sharder's Lease, the new
lead opens the node-only books from their HostStates and keeps the NodePools."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from state_controller.cluster.interface import (
    CONTROLLERS,
    HOSTS,
    HOSTSTATES,
    LEASES,
    NODEPOOLS,
    NODES,
    Cluster,
    NotFound,
)
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.controller import HostController
from state_controller.runtime.shards.sharder import Sharder
from state_controller.sharding.leases import SHARD_LABEL
from state_controller.sharding.members import Members
from state_controller.simulation.fleet import create_fleet
from state_controller.simulation.nodes import SimulatedNode
from state_controller.wiring import observed_controller
from testbed.scenarios import NS, WORKER, pool, step_of
from testbed.waiting import wait_for
from tests.conftest import FAST_BACKOFF, NODE_STATE_NAMESPACE
from tests.scenarios.test_controller_status import LEASE_SECONDS, put_lease

HOSTS_IN_FLEET = 6
EDGES = ("edge-0", "edge-1")  # Nodes that run on no Host
AGENT = "hoststate.io/"


def config(shard: str) -> ControllerConfig:
    return ControllerConfig(
        workers=2,
        backoff=FAST_BACKOFF,
        namespaces=(NS,),
        node_state_namespace=NODE_STATE_NAMESPACE,
        shard=shard,
        lease_namespace=NS,
        controller_status_interval=0.2,
        pool_status_interval=0.0,
    )


class Replicas:
    """Two shards, ``a`` leading (it runs the sharder) until it stops."""

    def __init__(self, cluster: Cluster, stack: ExitStack) -> None:
        self.cluster, self.stack = cluster, stack
        machines = SimulatedProvisioner()
        self.running: dict[str, HostController] = {}
        self.started = time.time()  # the sharders' clock: the Leases stay Ready at it
        for shard in ("a", "b"):
            put_lease(cluster, shard, self.started)
            replica = observed_controller(cluster, machines, config(shard)).controller
            replica.start()
            stack.callback(replica.stop)
            self.running[shard] = replica
        self.sharder = self.lead("a")

    def lead(self, shard: str) -> Sharder:
        replica = self.running[shard]
        sharder = Sharder(
            self.cluster,
            lease_namespace=NS,
            namespaces=(NS,),
            members=Members(frozenset({"a", "b"}), LEASE_SECONDS),
            resync=0.2,
            identity=f"{shard}_0123abcd",
            on_host=replica.routes.on_fleet_host,
            clock=lambda: self.started,
        )
        sharder.start()
        self.stack.callback(sharder.stop)
        replica.take_lead()
        return sharder


@pytest.fixture
def replicas(cluster: Cluster) -> Iterator[Replicas]:
    with ExitStack() as stack:
        yield Replicas(cluster, stack)
    for lease in cluster.list(LEASES, NS)[0]:
        cluster.delete(LEASES, NS, lease["metadata"]["name"])
    with contextlib.suppress(NotFound):
        cluster.delete(CONTROLLERS, None, NS)
    for node in cluster.list(NODES, None)[0]:
        with contextlib.suppress(NotFound):
            cluster.delete(NODES, None, node["metadata"]["name"])
    for nodepool in cluster.list(NODEPOOLS, None)[0]:
        with contextlib.suppress(NotFound):
            cluster.delete(NODEPOOLS, None, nodepool["metadata"]["name"])


def shard_of(cluster: Cluster, host: str) -> str:
    labels = cluster.get(HOSTS, NS, host)["metadata"].get("labels") or {}
    return str(labels.get(SHARD_LABEL) or "")


def node_only_books(replica: HostController) -> set[str]:
    return {key for key, book in replica.books.items() if book.node_only}


def worker_pool(cluster: Cluster) -> dict[str, Any]:
    return pool(cluster, "worker") or {}


def test_nodes_are_told_by_their_hosts_shard_node_only_ones_and_pools_by_the_lead(
    cluster: Cluster, replicas: Replicas
) -> None:
    hosts = [key.partition("/")[2] for key in create_fleet(cluster, NS, HOSTS_IN_FLEET)]
    wait_for(lambda: all(shard_of(cluster, h) for h in hosts), what="every host given a shard")
    owners = {h: shard_of(cluster, h) for h in hosts}
    assert set(owners.values()) == {"a", "b"}, owners  # the ring shares 6 hosts out
    nodes: dict[str, SimulatedNode] = {}
    for host in hosts:
        node = SimulatedNode(
            cluster, f"w-{host}", labels=WORKER, provider_id=f"metal3://{NS}/{host}/m"
        )
        node.register()
        nodes[node.name] = node
    for name in EDGES:
        nodes[name] = SimulatedNode(cluster, name, labels=WORKER)
        nodes[name].register()
    for node in nodes.values():
        node.annotate({AGENT + "current-config": "v1"})

    def linked(host: str) -> str:
        try:
            return str(cluster.get(HOSTSTATES, NS, host)["spec"].get("node") or "")
        except NotFound:
            return ""

    for host in hosts:
        wait_for(lambda: linked(host) == f"w-{host}", what=f"{host}'s Node told")  # noqa: B023
    for name in EDGES:
        wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, name) == "updated")  # noqa: B023
    a, b = replicas.running["a"], replicas.running["b"]
    edge_keys = {f"{NODE_STATE_NAMESPACE}/{name}" for name in EDGES}
    assert node_only_books(a) == edge_keys  # the lead's
    assert node_only_books(b) == set()  # b sees every Node, links only its own Hosts'
    for shard, replica in replicas.running.items():  # each tells its own Hosts' Nodes
        mine = {f"{NS}/{h}" for h, owner in owners.items() if owner == shard}
        told = {k for k, book in replica.reconciler.books.items() if book.facts.node}
        assert told == mine, shard
    wait_for(lambda: worker_pool(cluster).get("updatedMachineCount") == 8, what="all counted")

    # an update on every Node: b's share of it comes through the controller's status
    updating = [f"w-{h}" for h, owner in owners.items() if owner == "b"] + ["edge-0"]
    for name in updating:
        nodes[name].annotate({AGENT + "desired-config": "v2", AGENT + "update-state": "Working"})
    wait_for(
        lambda: worker_pool(cluster)
        == {"desiredConfig": "v2", "machineCount": 8, "updatedMachineCount": 0,
            "updatingMachineCount": len(updating), "degradedMachineCount": 0,
            "unavailableMachineCount": len(updating)},
        what="the pool counting b's Nodes and the edge updating",
    )  # fmt: skip
    for name in updating:
        nodes[name].annotate({AGENT + "current-config": "v2", AGENT + "update-state": "Done"})
    wait_for(lambda: worker_pool(cluster).get("updatedMachineCount") == len(updating))
    assert worker_pool(cluster)["unavailableMachineCount"] == 0

    # the lead stops; b takes the sharder's Lease and, with it, the edges and the pool
    history = cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, "edge-0")["status"]["history"]
    replicas.sharder.stop()
    a.stop()
    put_lease(cluster, "a", time.time() - 3600)  # dead: its hosts move to b
    replicas.lead("b")
    wait_for(lambda: node_only_books(b) == edge_keys, what="b keeps the edges")
    wait_for(lambda: all(shard_of(cluster, h) == "b" for h in hosts), what="a's hosts at b")
    nodes["edge-1"].annotate({AGENT + "desired-config": "v2", AGENT + "update-state": "Working"})
    wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, "edge-1") == "preparing update")
    wait_for(lambda: worker_pool(cluster).get("updatingMachineCount") == 1)
    nodes["edge-1"].annotate({AGENT + "current-config": "v2", AGENT + "update-state": "Done"})
    for name in [f"w-{h}" for h, owner in owners.items() if owner == "a"]:
        nodes[name].annotate({AGENT + "desired-config": "v2", AGENT + "update-state": "Working"})
        nodes[name].annotate({AGENT + "current-config": "v2", AGENT + "update-state": "Done"})
    wait_for(
        lambda: worker_pool(cluster).get("updatedMachineCount") == 8,
        what="every Node at v2, counted by the new lead",
    )
    wait_for(b.idle)
    assert worker_pool(cluster)["updatedMachineCount"] == 8  # a's share, dead, not added
    now = cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, "edge-0")["status"]["history"]
    assert now[: len(history)] == history  # opened from its HostState: nothing lost
