"""The work queue's keys (runtime/machinery/keys.py): each kind reads back as itself, a Host's key
is its namespace/name, the controller's one dispatch table covers every kind, and each
reconcile is counted under the kind it was of."""

from __future__ import annotations

import pytest

from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.schema import validators
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.machinery.keys import Kind, bmh_key, key_of, node_key, parse, pool_key
from state_controller.simulation.nodes import SimulatedNode
from state_controller.wiring import observed_controller
from testbed.scenarios import WORKER
from testbed.waiting import wait_for


@pytest.mark.parametrize(
    ("key", "kind", "name"),
    [
        ("metal/worker-0", Kind.HOST, "metal/worker-0"),
        (node_key("worker-0"), Kind.NODE, "worker-0"),
        (bmh_key("metal/worker-0"), Kind.BAREMETALHOST, "metal/worker-0"),
        (pool_key("worker"), Kind.POOL, "worker"),
        (pool_key(""), Kind.POOL, ""),  # the pool of Nodes with no pool label
    ],
)
def test_a_key_reads_back_as_the_kind_and_name_it_was_made_of(
    key: str, kind: Kind, name: str
) -> None:
    assert parse(key) == (kind, name)
    assert key_of(kind, name) == key


def test_keys_of_different_kinds_never_meet() -> None:
    made = {key_of(kind, "metal/worker-0") for kind in Kind}
    assert len(made) == len(Kind)


def test_the_controller_dispatches_every_kind_from_its_one_table() -> None:
    cluster = EmbeddedCluster()
    try:
        controller = observed_controller(
            cluster, SimulatedProvisioner(), ControllerConfig(workers=1)
        ).controller
        assert set(controller.kinds) == set(Kind)
        assert controller.kinds[Kind.POOL].book("worker") is None  # counts, not a book
        assert controller.kinds[Kind.HOST].version("metal/none") is None  # not cached
    finally:
        cluster.close()


def test_reconciles_are_counted_under_the_kind_they_were_of() -> None:
    cluster = EmbeddedCluster(validators=validators())
    observed = observed_controller(cluster, SimulatedProvisioner(), ControllerConfig(workers=1))
    registry = observed.metrics.registry

    def reconciles(kind: str) -> float:
        labels = {"controller": kind, "result": "success"}
        return registry.get_sample_value("controller_runtime_reconcile_total", labels) or 0.0

    try:
        with observed.controller:
            SimulatedNode(cluster, "worker-0", labels=WORKER).register()  # no Host: its own
            wait_for(lambda: reconciles("node") >= 1 and reconciles("pool") >= 1)
            assert reconciles("host") == reconciles("baremetalhost") == 0
            queue = {"controller": "node", "name": "node"}
            assert registry.get_sample_value("workqueue_adds_total", queue)
            workers = {"controller": "pool"}
            assert (
                registry.get_sample_value("controller_runtime_max_concurrent_reconciles", workers)
                == 1
            )
    finally:
        cluster.close()
