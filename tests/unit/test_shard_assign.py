"""The sharder's decisions: unowned hosts assigned, a dead owner's hosts moved at once, an
expired owner's left alone, a live owner's drained (never relabelled under it)."""

from __future__ import annotations

from state_controller.api.timefmt import rfc3339_ms
from state_controller.sharding.assign import Act, Labels, moves, ring_of
from state_controller.sharding.leases import Health, Shard, shard_of

NOW = 1_800_000_000.0
KEYS = [f"fleet/host-{i:03d}" for i in range(300)]


def lease(name: str, renewed_ago: float, *, holder: str | None = None) -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "spec": {
            "holderIdentity": name if holder is None else holder,
            "leaseDurationSeconds": 15,
            "renewTime": rfc3339_ms(NOW - renewed_ago),
        },
    }


def test_a_lease_is_ready_then_expired_then_dead_and_a_released_one_dead_at_once() -> None:
    assert shard_of(lease("a", 14.9), NOW).health == Health.READY
    assert shard_of(lease("a", 15.1), NOW).health == Health.EXPIRED
    assert shard_of(lease("a", 29.9), NOW).health == Health.EXPIRED
    assert shard_of(lease("a", 30.1), NOW).health == Health.DEAD
    assert shard_of(lease("a", 1.0, holder=""), NOW).health == Health.DEAD


def test_a_lease_the_sharder_took_is_dead_however_fresh_and_only_a_held_dead_one_is_taken() -> None:
    taken = shard_of(lease("a", 0.5, holder="sharder/b_1234"), NOW)
    assert taken.health == Health.DEAD and taken.taken and not taken.died_holding
    assert shard_of(lease("a", 30.1), NOW).died_holding  # its holder may come back
    assert not shard_of(lease("a", 1.0, holder=""), NOW).died_holding  # released: nobody
    assert not shard_of(lease("a", 20.0), NOW).died_holding  # expired: not yet


def shards(**health: Health) -> list[Shard]:
    return [Shard(name, h, NOW) for name, h in health.items()]


def test_unowned_hosts_go_to_the_ring_and_none_moves_when_all_sit_right() -> None:
    live = shards(a=Health.READY, b=Health.READY, c=Health.READY)
    first = moves({key: Labels() for key in KEYS}, live)
    assert {m.act for m in first} == {Act.ASSIGN} and len(first) == len(KEYS)
    assert {m.to for m in first} == {"a", "b", "c"}
    placed = {m.key: Labels(m.to) for m in first}
    assert moves(placed, live) == []


def test_a_dead_owners_hosts_move_at_once_and_an_expired_owners_stay() -> None:
    ring = ring_of(shards(a=Health.READY, b=Health.READY, c=Health.READY))
    placed = {key: Labels(ring.owner(key) or "") for key in KEYS}
    on_b = {key for key, labels in placed.items() if labels.shard == "b"}
    assert moves(placed, shards(a=Health.READY, b=Health.EXPIRED, c=Health.READY)) == []
    dead = moves(placed, shards(a=Health.READY, b=Health.DEAD, c=Health.READY))
    assert {m.key for m in dead} == on_b
    assert all(m.act == Act.ASSIGN and m.to in ("a", "c") and m.was == "b" for m in dead)
    gone = moves(placed, shards(a=Health.READY, c=Health.READY))  # its Lease deleted
    assert {m.key for m in gone} == on_b


def test_a_live_owner_the_ring_no_longer_names_is_drained_once_never_relabelled() -> None:
    ring = ring_of(shards(a=Health.READY, b=Health.READY))
    placed = {key: Labels(ring.owner(key) or "") for key in KEYS}
    grown = shards(a=Health.READY, b=Health.READY, c=Health.READY)
    drains = moves(placed, grown)
    assert drains and all(m.act == Act.DRAIN for m in drains)
    assert {ring_of(grown).owner(m.key) for m in drains} == {"c"}
    draining = {**placed, **{m.key: Labels(m.was, draining=True) for m in drains}}
    assert moves(draining, grown) == []  # the owner has not let go yet
    let_go = {**placed, **{m.key: Labels() for m in drains}}
    assert {(m.act, m.to) for m in moves(let_go, grown)} == {(Act.ASSIGN, "c")}


def test_with_no_ready_shard_nothing_is_written() -> None:
    hosts = {key: Labels("a") for key in KEYS[:5]} | {KEYS[5]: Labels()}
    assert moves(hosts, shards(a=Health.DEAD)) == []


def test_a_label_someone_else_moved_from_a_live_shard_is_put_back_not_drained() -> None:
    live = shards(a=Health.READY, b=Health.READY, c=Health.EXPIRED, d=Health.DEAD)
    ring = ring_of(live)
    key = next(k for k in KEYS if ring.owner(k) == "a")
    for before in ("a", "c"):  # Ready or Expired: it may still act, so it keeps the host
        (move,) = moves({key: Labels("b")}, live, {key: before})
        assert (move.act, move.to, move.was) == (Act.RESTORE, before, "b")
    (move,) = moves({key: Labels("b")}, live, {key: "d"})  # its owner died: a live one's
    assert move.act == Act.DRAIN
    assert moves({key: Labels("a")}, live, {key: "a"}) == []  # back already


def test_a_replica_leaves_a_host_whose_hoststate_names_another_shard() -> None:
    from state_controller.runtime.shards.member import Ownership, ownership

    host = {"metadata": {"name": "h", "labels": {"hoststate.io/shard": "b"}}}
    assert ownership(host, "b", lambda: "a") is Ownership.NOT_GIVEN  # a has not let go
    assert ownership(host, "b", lambda: "b") is Ownership.OURS
    assert ownership(host, "b", lambda: "") is Ownership.OURS  # new: no HostState yet
