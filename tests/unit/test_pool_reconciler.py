"""One NodePool per node pool (runtime/pools/reconciler.py), reconciled by hand: made for
a pool with Nodes, its counts read from the books; written only when a count changed,
and at most once per interval (a change within it is asked to be looked at again when
the interval ends); sharded, the other replicas' shares added to this one's; gone with
the pool's last Node. Nodes in no pool have the NodePool ``unlabeled``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from state_controller.api.controller_status import PoolShare
from state_controller.api.nodepool import UNLABELED_POOL
from state_controller.api.objects import Obj
from state_controller.api.updates import UpdateStep
from state_controller.books.records import UpdateCursor
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTSTATES, NODEPOOLS, NotFound
from state_controller.cluster.schema import validators
from state_controller.durations.learned import Learned
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.indexes.nodes import NodeIndex
from state_controller.runtime.machinery.informer import Informer
from state_controller.runtime.pools.reconciler import (
    PoolReconciler,
    pool_object_name,
    pool_of_object,
)
from state_controller.runtime.writing.book_writer import BookWriter
from state_controller.updates.pool_summary import pool_share
from state_controller.updates.signals import node_signals
from testbed.clocks import Clock
from testbed.hand_driven import StatusWrites

LABEL = "node-role.kubernetes.io/*"
AT_REST = UpdateCursor(step=UpdateStep.UPDATED, current="cfg-1")
APPLYING = UpdateCursor(step=UpdateStep.APPLYING, current="cfg-1", desired="cfg-2")


def node(name: str, pool: str = "worker") -> Obj:
    labels = {f"node-role.kubernetes.io/{pool}": ""} if pool else {}
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


class Pools:
    """A pool reconciler with its Nodes, the updates its books tell and a clock, in hand."""

    def __init__(
        self, cluster: EmbeddedCluster, *, interval: float = 0.0, learned: Learned | None = None
    ) -> None:
        self.cluster = cluster
        self.index = NodeIndex(lambda _name: [])
        self.updates: dict[str, UpdateCursor] = {}
        self.others: list[PoolShare] = []
        self.clock = Clock()
        self.writes = StatusWrites()
        writer = BookWriter(
            cluster, Informer(cluster, HOSTSTATES, "ns"), ControllerConfig(), self.writes
        )
        self.reconciler = PoolReconciler(
            cluster,
            pools=Informer(cluster, NODEPOOLS, None),
            nodes=self.index,
            update_of=self.updates.get,
            writer=writer,
            label=LABEL,
            interval=interval,
            others=lambda _name: list(self.others),
            learned=learned,
            clock=self.clock,
        )

    def join(self, name: str, update: UpdateCursor | None = AT_REST, pool: str = "worker") -> None:
        self.index.observe(name, node(name, pool))
        if update is not None:
            self.updates[name] = update

    def status(self, pool: str = "worker") -> dict[str, object]:
        return dict(self.cluster.get(NODEPOOLS, None, pool_object_name(pool))["status"])


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    store = EmbeddedCluster(validators=validators())
    yield store
    store.close()


def test_a_pool_with_nodes_gets_its_nodepool_and_a_count_at_rest_is_not_written_again(
    cluster: EmbeddedCluster,
) -> None:
    pools = Pools(cluster)
    pools.join("n-1")
    pools.join("n-2")

    assert pools.reconciler.reconcile("worker").requeue_after is None
    made = cluster.get(NODEPOOLS, None, "worker")
    assert made["spec"] == {"label": LABEL}
    assert pools.status()["machineCount"] == 2
    assert pools.status()["updatedMachineCount"] == 2

    pools.reconciler.reconcile("worker")
    assert [outcome for _, outcome in pools.writes.writes] == ["written", "unchanged"]


def test_a_change_within_the_interval_waits_for_its_end(cluster: EmbeddedCluster) -> None:
    pools = Pools(cluster, interval=30)
    pools.join("n-1")
    pools.reconciler.reconcile("worker")  # written at T0

    pools.clock.advance(10)
    pools.updates["n-1"] = APPLYING
    assert pools.reconciler.reconcile("worker").requeue_after == 20
    assert pools.status()["updatingMachineCount"] == 0  # not written yet

    pools.clock.advance(20)
    assert pools.reconciler.reconcile("worker").requeue_after is None
    assert pools.status()["updatingMachineCount"] == 1
    assert pools.status()["unavailableMachineCount"] == 1


def test_sharded_the_other_replicas_shares_are_added(cluster: EmbeddedCluster) -> None:
    pools = Pools(cluster)
    pools.join("n-1")
    pools.join("n-2")
    pools.join("n-3", update=None)  # told by another replica's books
    other_node = node_signals(node("n-3"))
    pools.others = [pool_share("worker", [(other_node, APPLYING)])]

    pools.reconciler.reconcile("worker")

    status = pools.status()
    assert (status["machineCount"], status["updatedMachineCount"]) == (3, 2)
    assert status["updatingMachineCount"] == 1  # the other replica's Node
    (own,) = pools.reconciler.shares()  # this replica's share: its own books' Nodes only
    assert own.pool == "worker" and own.updating == 0
    assert [(c.config, c.machines) for c in own.updated] == [("cfg-1", 2)]


def test_the_pools_last_node_takes_its_nodepool_away(cluster: EmbeddedCluster) -> None:
    pools = Pools(cluster)
    pools.join("n-1")
    pools.reconciler.reconcile("worker")
    pools.index.observe("n-1", None)

    pools.reconciler.reconcile("worker")

    with pytest.raises(NotFound):
        cluster.get(NODEPOOLS, None, "worker")
    assert pools.reconciler.pools.get("worker") is None
    pools.reconciler.reconcile("worker")  # nothing left to delete: no error


def test_nodes_in_no_pool_have_the_unlabeled_nodepool(cluster: EmbeddedCluster) -> None:
    pools = Pools(cluster)
    pools.join("loose", pool="")
    pools.reconciler.reconcile("")
    assert cluster.get(NODEPOOLS, None, UNLABELED_POOL)["status"]["machineCount"] == 1
    assert pool_of_object(UNLABELED_POOL) == "" and pool_of_object("worker") == "worker"
