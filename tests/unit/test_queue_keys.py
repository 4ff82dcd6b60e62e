"""The work queue's keys (runtime/keys.py): each kind reads back as itself, a Host's key
is its namespace/name, and the controller's one dispatch table covers every kind."""

from __future__ import annotations

import pytest

from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.keys import Kind, bmh_key, key_of, node_key, parse, pool_key
from state_controller.wiring import observed_controller


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
