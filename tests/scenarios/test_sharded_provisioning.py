"""Three sharded replicas and the sharder, on both backends, provisioning one fleet on one
set of (simulated) machines: each host is reconciled by the replica its label names and
by no other; one replica stopped mid-flight (its Lease left to die) has its hosts moved to
the others, which finish them; no transition is lost or recorded twice."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from state_controller.cluster.interface import (
    CONTROLLERS,
    HOSTS,
    HOSTSTATES,
    LEASES,
    Cluster,
    NotFound,
)
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.controller import HostController
from state_controller.runtime.shards.sharder import Sharder
from state_controller.runtime.writing.book_writer import hoststate_of_host
from state_controller.sharding.leases import DRAIN_LABEL, SHARD_LABEL
from state_controller.sharding.ring import Ring
from state_controller.simulation.fleet import create_fleet
from state_controller.wiring import observed_controller
from testbed.scenarios import NS, state_of
from tests.conftest import FAST_BACKOFF, wait_for
from tests.scenarios.test_sharder import MEMBERS, NOW, THREE, put_lease

SHARDS = ("a", "b", "c")
FLEET = 24
# long enough that a replica stopped a second in leaves hosts mid-flight
TIMINGS = Timings(register=0.5, inspect=1.0, prepare=0.5, provision=1.5, power=0.5)


@pytest.fixture
def machines() -> SimulatedProvisioner:
    return SimulatedProvisioner(timings=TIMINGS)  # one set of machines for every replica


@contextlib.contextmanager
def running_replicas(
    cluster: Cluster, machines: SimulatedProvisioner, **settings: Any
) -> Iterator[dict[str, HostController]]:
    """The three replicas and the sharder on one set of machines, each replica's
    ControllerConfig with ``settings``; their Leases and status removed after."""
    for shard in SHARDS:
        put_lease(cluster, shard, renewed_ago=1)
    sharder = Sharder(
        cluster,
        lease_namespace=NS,
        members=MEMBERS,
        namespaces=(NS,),
        resync=0.2,
        clock=lambda: NOW,
    )
    running: dict[str, HostController] = {}
    with ExitStack() as stack:
        sharder.start()
        stack.callback(sharder.stop)
        for shard in SHARDS:
            config = ControllerConfig(
                workers=2,
                backoff=FAST_BACKOFF,
                namespaces=(NS,),
                follow_nodes=False,
                shard=shard,
                lease_namespace=NS,
                **settings,
            )
            controller = observed_controller(cluster, machines, config).controller
            controller.start()
            stack.callback(controller.stop)
            running[shard] = controller
        yield running
    for lease in cluster.list(LEASES, NS)[0]:
        cluster.delete(LEASES, NS, lease["metadata"]["name"])
    with contextlib.suppress(NotFound):  # the replicas' status, cluster-scoped
        cluster.delete(CONTROLLERS, None, NS)


@pytest.fixture
def replicas(
    cluster: Cluster, machines: SimulatedProvisioner
) -> Iterator[dict[str, HostController]]:
    with running_replicas(cluster, machines) as running:
        yield running


def history(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    return list((cluster.get(HOSTSTATES, NS, name).get("status") or {}).get("history") or [])


def told_once_in_order(cluster: Cluster, name: str) -> None:
    records = history(cluster, name)
    seqs = [r["seq"] for r in records]
    assert seqs == sorted(set(seqs)), (name, seqs)
    entered = Counter(r["to"] for r in records if r.get("chapter", "provisioning") != "update")
    doubled = {state: n for state, n in entered.items() if n > 1}
    assert not doubled, (name, doubled, [(r["from"], r["to"]) for r in records])
    assert entered["provisioned"] == 1, (name, records)


def test_each_host_has_one_owner_and_a_stopped_replicas_hosts_are_finished_by_the_others(
    cluster: Cluster, replicas: dict[str, HostController]
) -> None:
    create_fleet(cluster, NS, FLEET)

    def mid_flight() -> bool:
        books = replicas["c"].reconciler.books.values()
        return sum(b.cursor.state.value not in ("", "registering") for b in books) >= 2

    wait_for(mid_flight, what="replica c with hosts mid-flight")
    replicas["c"].stop()
    taken = set(replicas["c"].reconciler.books)
    assert taken
    put_lease(cluster, "c", renewed_ago=31)  # its Lease dies: its hosts move

    wait_for(
        lambda: all(state_of(cluster, f"host-{i:04d}") == "provisioned" for i in range(FLEET)),
        timeout=120,
        what="every host provisioned",
    )
    live = {shard: set(replicas[shard].reconciler.books) for shard in ("a", "b")}
    assert not live["a"] & live["b"]
    assert live["a"] | live["b"] == {f"{NS}/host-{i:04d}" for i in range(FLEET)}
    for shard in ("a", "b"):  # each caches its own share, not the fleet
        assert set(replicas[shard].hosts.keys()) == live[shard]
        wait_for(lambda: set(replicas[shard].hoststates.keys()) == live[shard],  # noqa: B023
                 what=f"replica {shard}'s HostStates cached")  # fmt: skip
    for i in range(FLEET):
        name = f"host-{i:04d}"
        labels = cluster.get(HOSTS, NS, name)["metadata"]["labels"]
        state_labels = cluster.get(HOSTSTATES, NS, name)["metadata"]["labels"]
        assert labels[SHARD_LABEL] == state_labels[SHARD_LABEL] in ("a", "b"), name
        assert f"{NS}/{name}" in live[labels[SHARD_LABEL]]
        told_once_in_order(cluster, name)
    # the moved hosts were finished where they went, mid-flight or not
    assert all(key in live["a"] | live["b"] for key in taken)


def test_a_joining_replica_takes_its_share_drained_from_the_others_with_nothing_retold(
    cluster: Cluster, machines: SimulatedProvisioner, replicas: dict[str, HostController]
) -> None:
    create_fleet(cluster, NS, FLEET)
    names = [f"host-{i:04d}" for i in range(FLEET)]
    wait_for(
        lambda: all(state_of(cluster, name) == "provisioned" for name in names),
        timeout=120,
        what="every host provisioned",
    )
    wait_for(lambda: all(c.idle() for c in replicas.values()), what="replicas at rest")
    told = {name: history(cluster, name) for name in names}
    config = ControllerConfig(
        workers=2, backoff=FAST_BACKOFF, namespaces=(NS,), follow_nodes=False, shard="d"
    )
    joining = observed_controller(cluster, machines, config).controller
    joining.start()
    try:
        put_lease(cluster, "d", renewed_ago=1)
        four = Ring.of([*SHARDS, "d"])
        share = {f"{NS}/{name}" for name in names if four.owner(f"{NS}/{name}") == "d"}
        assert share, "the ring gives d none of the fleet"
        wait_for(lambda: set(joining.reconciler.books) == share, what="d's share taken over")
        wait_for(joining.idle, what="d at rest")
        for shard, replica in replicas.items():
            kept = {f"{NS}/{n}" for n in names if four.owner(f"{NS}/{n}") == shard}
            wait_for(lambda: set(replica.reconciler.books) == kept,  # noqa: B023
                     what=f"{shard} kept only its share")  # fmt: skip
        for name in names:
            assert history(cluster, name) == told[name], name  # nothing lost or told again
            labels = cluster.get(HOSTS, NS, name)["metadata"]["labels"]
            assert labels[SHARD_LABEL] == four.owner(f"{NS}/{name}") and DRAIN_LABEL not in labels
    finally:
        joining.stop()


def test_a_shard_label_a_tenant_flips_is_put_back_and_the_shard_it_names_never_acts(
    cluster: Cluster, replicas: dict[str, HostController]
) -> None:
    """Ten flips of a provisioned host's shard label to another live replica: each is put
    back (the HostState still names its owner), the replica the label named never opens
    the host's book, and the host's history is told once."""
    create_fleet(cluster, NS, 3)
    names = [f"host-{i:04d}" for i in range(3)]
    wait_for(
        lambda: all(state_of(cluster, name) == "provisioned" for name in names),
        timeout=120,
        what="every host provisioned",
    )
    wait_for(lambda: all(c.idle() for c in replicas.values()), what="replicas at rest")
    key, name = f"{NS}/host-0000", "host-0000"
    owner = THREE.owner(key)
    other = next(s for s in SHARDS if s != owner)
    told = history(cluster, name)
    took: set[str] = set()
    watching = threading.Event()

    def watch_books() -> None:
        while not watching.is_set():
            took.update(s for s in SHARDS if s != owner and key in replicas[s].reconciler.books)
            time.sleep(0.005)

    watcher = threading.Thread(target=watch_books, daemon=True)
    watcher.start()
    try:
        for _ in range(10):
            cluster.patch(HOSTS, NS, name, {"metadata": {"labels": {SHARD_LABEL: other}}})
            wait_for(
                lambda: labels_of(cluster, name) == {SHARD_LABEL: owner}, what="label put back"
            )
    finally:
        watching.set()
        watcher.join()
    assert not took, f"{took} acted on a host it was never given"
    wait_for(lambda: key in replicas[str(owner)].reconciler.books, what="its owner keeps it")
    assert history(cluster, name) == told


def labels_of(cluster: Cluster, name: str) -> dict[str, str]:
    labels = cluster.get(HOSTS, NS, name)["metadata"].get("labels") or {}
    return {k: v for k, v in labels.items() if k in (SHARD_LABEL, DRAIN_LABEL)}


def test_a_host_labelled_for_a_shard_whose_hoststate_names_another_is_handed_back(
    cluster: Cluster, machines: SimulatedProvisioner
) -> None:
    """A Host labelled ``b`` (by someone else: a tenant racing the sharder) whose HostState
    names ``a``: replica b never opens its book and takes its label off, so the sharder
    decides (puts it back on a, or, a dead, gives it to a live shard through the HostState
    first). Left labelled, a Host on the ring's choice whose HostState names a dead shard
    would stay with no one."""
    (key,) = create_fleet(cluster, NS, 1)
    name = key.split("/", 1)[1]
    host = cluster.patch(HOSTS, NS, name, {"metadata": {"labels": {SHARD_LABEL: "b"}}})
    cluster.create(HOSTSTATES, hoststate_of_host(host, "a"))
    config = ControllerConfig(
        workers=1, backoff=FAST_BACKOFF, namespaces=(NS,), follow_nodes=False, shard="b"
    )
    replica = observed_controller(cluster, machines, config).controller
    replica.start()
    try:
        wait_for(lambda: labels_of(cluster, name) == {}, what="b takes its label off")
        assert key not in replica.reconciler.books
        assert cluster.get(HOSTSTATES, NS, name)["metadata"]["labels"][SHARD_LABEL] == "a"
    finally:
        replica.stop()
