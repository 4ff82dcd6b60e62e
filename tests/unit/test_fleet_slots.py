"""The servicing ledger shared by every shard (runtime/servicing/fleet_slots.py): one slot of a pool
is taken by one replica only, even when two ask at once; a slot freed on one replica wakes
a host waiting on another; a dead shard's claims stop counting; a Host that moved keeps
its claim and a deleted one loses it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest

from state_controller.api.timefmt import rfc3339_ms
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, LEASES, Cluster
from state_controller.cluster.schema import validators
from state_controller.runtime.servicing.fleet_slots import FleetSlots
from state_controller.runtime.servicing.slots import ServiceSlots
from state_controller.sharding.leases import LEASE_PREFIX, Health
from state_controller.sharding.members import Members, identity_for, judged_shards
from state_controller.sharding.service_claims import (
    CLAIMS_ANNOTATION,
    LEDGER_LEASE,
    Claim,
    read_claims,
)
from state_controller.simulation.fleet import host_manifest
from testbed.waiting import wait_for

NS = "hoststate-system"
HOSTS_NS = "metal"
POOL = "worker"
MEMBERS = Members(frozenset({"a", "b", "c"}), 15)


def put_shard_lease(cluster: Cluster, shard: str, renewed_ago: float) -> None:
    spec = {
        "holderIdentity": identity_for(shard, "0123abcdef"),
        "leaseDurationSeconds": 15,
        "renewTime": rfc3339_ms(time.time() - renewed_ago),
    }
    name = LEASE_PREFIX + shard
    if any(lease["metadata"]["name"] == name for lease in cluster.list(LEASES, NS)[0]):
        cluster.patch(LEASES, NS, name, {"spec": spec})
        return
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"}
    cluster.create(LEASES, {**body, "metadata": {"name": name, "namespace": NS}, "spec": spec})


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    store = EmbeddedCluster(validators=validators())
    for shard in ("a", "b"):
        put_shard_lease(store, shard, renewed_ago=1)
    yield store
    store.close()


def ledger(
    cluster: Cluster,
    shard: str,
    per_pool: int = 1,
    on_change: Callable[[], None] = lambda: None,
) -> FleetSlots:
    return FleetSlots(
        cluster,
        namespace=NS,
        shard=shard,
        members=MEMBERS,
        per_pool=per_pool,
        on_change=on_change,
    )


@pytest.fixture
def started() -> Iterator[list[FleetSlots]]:
    """Ledgers whose watches run; stopped at the end."""
    ledgers: list[FleetSlots] = []
    with ExitStack() as stack:
        yield ledgers
        for one in ledgers:
            stack.callback(one.leases.stop)


def start(started: list[FleetSlots], *ledgers: FleetSlots) -> None:
    for one in ledgers:
        one.leases.start()
        assert one.leases.wait_synced(10)
        started.append(one)


def seen(one: FleetSlots, shard: str) -> Health | None:
    """A shard's health as a ledger's watch of the Leases shows it."""
    found = judged_shards(one.leases.items(), MEMBERS, time.time()).get(shard)
    return found.health if found is not None else None


def recorded(cluster: Cluster) -> dict[str, Claim]:
    return read_claims(cluster.get(LEASES, NS, LEDGER_LEASE))


def test_one_slot_is_taken_by_one_replica_even_when_both_ask_at_once(
    cluster: EmbeddedCluster, started: list[FleetSlots]
) -> None:
    a, b = ledger(cluster, "a"), ledger(cluster, "b")
    start(started, a, b)
    b.leases.stop()  # b asks on what it read before a wrote
    assert a.claim("metal/h-0", POOL)
    assert not b.claim("metal/h-1", POOL)  # its create is refused, it reads again: full
    assert b.claim("metal/h-1", "infra")  # another pool has its own slot
    assert recorded(cluster) == {
        "metal/h-0": Claim(POOL, "a"),
        "metal/h-1": Claim("infra", "b"),
    }
    assert a.claim("metal/h-0", POOL)  # asking again for a slot it holds: still its


def test_a_slot_freed_on_one_replica_wakes_a_host_waiting_on_another(
    cluster: EmbeddedCluster, started: list[FleetSlots]
) -> None:
    woken: list[str] = []
    slots_a = ServiceSlots(1, lambda key: None, fleet=ledger(cluster, "a"))
    fleet_b = ledger(cluster, "b", on_change=lambda: slots_b.wake_freed())
    slots_b = ServiceSlots(1, woken.append, fleet=fleet_b)
    assert slots_a.fleet is not None
    start(started, slots_a.fleet, fleet_b)
    assert slots_a.may_start("metal/h-0", POOL)
    slots_a.settle("metal/h-0", POOL, active=True)
    wait_for(lambda: fleet_b.free(POOL) == 0, what="b sees a's run")
    assert not slots_b.may_start("metal/h-1", POOL)  # its own count is 0: the ledger says no
    slots_b.settle("metal/h-1", POOL, active=False)
    assert woken == []
    slots_a.settle("metal/h-0", POOL, active=False)  # a's run ends
    wait_for(lambda: woken == ["metal/h-1"], what="b's waiting host woken")
    assert slots_b.may_start("metal/h-1", POOL)
    assert recorded(cluster) == {"metal/h-1": Claim(POOL, "b")}


def test_a_dead_shards_claims_stop_counting_and_are_dropped_at_the_next_write(
    cluster: EmbeddedCluster, started: list[FleetSlots]
) -> None:
    a, b = ledger(cluster, "a"), ledger(cluster, "b")
    start(started, a, b)
    assert a.claim("metal/h-0", POOL)
    wait_for(lambda: b.free(POOL) == 0, what="b sees a's run")
    assert not b.claim("metal/h-1", POOL)
    put_shard_lease(cluster, "a", renewed_ago=20)  # expired: its hosts have not moved yet
    wait_for(lambda: seen(b, "a") == Health.EXPIRED, what="b sees a expired")
    assert not b.claim("metal/h-1", POOL)
    put_shard_lease(cluster, "a", renewed_ago=40)  # dead: more than twice its duration
    wait_for(lambda: b.free(POOL) == 1, what="a's claim no longer counted")
    assert b.claim("metal/h-1", POOL)
    assert recorded(cluster) == {"metal/h-1": Claim(POOL, "b")}


def test_a_moved_host_keeps_its_claim_for_its_new_owner_and_a_deleted_one_loses_it(
    cluster: EmbeddedCluster, started: list[FleetSlots]
) -> None:
    a, b = ledger(cluster, "a", per_pool=2), ledger(cluster, "b", per_pool=2)
    start(started, a, b)
    moved, deleted = host_manifest(HOSTS_NS, 0), host_manifest(HOSTS_NS, 1)
    cluster.create(HOSTS, moved)
    keys = [f"{HOSTS_NS}/{h['metadata']['name']}" for h in (moved, deleted)]
    for key in keys:
        assert a.claim(key, POOL)
    a.let_go(keys[0])  # the Host still exists: it went to another shard, mid-run
    a.let_go(keys[1])  # no such Host: deleted
    assert recorded(cluster) == {keys[0]: Claim(POOL, "a")}
    wait_for(lambda: keys[0] in b.claims(), what="b sees the claim")
    b.hold(keys[0], POOL)  # its new owner's first reconcile finds the run under way
    assert recorded(cluster) == {keys[0]: Claim(POOL, "b")}
    a.let_go(keys[0])  # no longer a's claim: kept
    b.release(keys[0])  # the run ends under its new owner
    assert recorded(cluster) == {}


def test_claims_not_written_as_the_controller_writes_them_hold_no_slot() -> None:
    def lease(text: str) -> dict[str, object]:
        return {"metadata": {"annotations": {CLAIMS_ANNOTATION: text}}}

    assert read_claims(None) == {}
    assert read_claims(lease("not json")) == {}
    assert read_claims(lease("[1, 2]")) == {}
    found = read_claims(
        lease(
            '{"m/a": {"pool": "w", "shard": "a"}, "m/b": {"pool": 3}, "m/c": "x",'
            ' "m/d": {"pool": "w", "shard": ""}}'
        )
    )
    assert found == {"m/a": Claim("w", "a")}
