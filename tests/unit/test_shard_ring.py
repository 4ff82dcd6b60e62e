"""The shard ring: a key always has the same owner; a joining shard takes a fair share only
from the others; a leaving shard gives up only its own keys."""

from __future__ import annotations

from collections import Counter

from state_controller.sharding.ring import Ring

KEYS = [f"fleet/host-{i:05d}" for i in range(20_000)]


def owners(ring: Ring) -> dict[str, str | None]:
    return {key: ring.owner(key) for key in KEYS}


def test_an_empty_ring_owns_nothing_and_one_shard_owns_everything() -> None:
    assert Ring.of([]).owner("fleet/host-1") is None
    assert set(owners(Ring.of(["a"])).values()) == {"a"}


def test_the_owner_depends_on_the_shards_not_on_their_order() -> None:
    assert owners(Ring.of(["a", "b", "c"])) == owners(Ring.of(["c", "a", "b", "a"]))


def test_each_shard_holds_a_near_even_share() -> None:
    for n in (3, 5):
        shares = Counter(owners(Ring.of([f"replica-{i}" for i in range(n)])).values())
        for count in shares.values():
            assert abs(count / len(KEYS) - 1 / n) < 0.35 / n, shares


def test_a_joining_shard_takes_keys_only_from_the_others_and_about_its_share() -> None:
    before = owners(Ring.of(["a", "b", "c"]))
    after = owners(Ring.of(["a", "b", "c", "d"]))
    moved = [key for key in KEYS if before[key] != after[key]]
    assert all(after[key] == "d" for key in moved)
    assert abs(len(moved) / len(KEYS) - 1 / 4) < 0.35 / 4


def test_a_leaving_shard_gives_up_only_its_own_keys() -> None:
    before = owners(Ring.of(["a", "b", "c"]))
    after = owners(Ring.of(["a", "c"]))
    assert all(before[key] == "b" for key in KEYS if before[key] != after[key])
    assert "b" not in after.values()
