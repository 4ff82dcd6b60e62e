"""Which Leases stand for shards: only the configured replicas', held as the controller
holds them, for no longer than the configured duration (sharding/members.py)."""

from __future__ import annotations

import pytest

from state_controller.api.timefmt import rfc3339_ms
from state_controller.sharding.leases import LEASE_PREFIX, Health
from state_controller.sharding.members import Members, identity_for, judge, shard_names

NOW = 1_800_000_000.0
MEMBERS = Members(frozenset({"hsc-0", "hsc-1", "hsc-2"}), 15)
MAX_INT32 = 2_147_483_647


def lease(
    shard: str, renewed_ago: float, *, holder: str | None = None, duration: int = 15
) -> dict[str, object]:
    return {
        "metadata": {"name": LEASE_PREFIX + shard},
        "spec": {
            "holderIdentity": identity_for(shard, "0123abcdef") if holder is None else holder,
            "leaseDurationSeconds": duration,
            "renewTime": rfc3339_ms(NOW - renewed_ago),
        },
    }


def test_shards_are_a_statefulsets_pods_by_count_or_named_and_include_this_replica() -> None:
    assert shard_names("3", "hoststate-controller-1") == {
        "hoststate-controller-0",
        "hoststate-controller-1",
        "hoststate-controller-2",
    }
    assert shard_names("a, b,c", "b") == {"a", "b", "c"}
    for spec, own, field in (
        ("", "a", "--shards is required"),
        ("3", "a", "StatefulSet's pod"),
        ("2", "hsc-2", "not among them"),
        ("a,b", "c", "not among them"),
    ):
        with pytest.raises(ValueError, match=field):
            shard_names(spec, own)


def test_a_live_lease_of_a_configured_replica_is_believed() -> None:
    shard, why = judge(lease("hsc-1", 1), MEMBERS, NOW)
    assert shard is not None and shard.health == Health.READY and why == ""
    released, why = judge(lease("hsc-1", 1, holder=""), MEMBERS, NOW)
    assert released is not None and released.health == Health.DEAD and why == ""
    taken, why = judge(lease("hsc-1", 1, holder="sharder/hsc-0_0123abcd"), MEMBERS, NOW)
    assert taken is not None and taken.taken and why == ""


def test_a_lease_of_no_configured_shard_is_none_whatever_it_says() -> None:
    shard, why = judge(lease("hsc-7", 1, duration=MAX_INT32), MEMBERS, NOW)
    assert shard is None and "none of the configured shards" in why


def test_a_holder_the_controller_never_writes_is_not_believed_and_its_lease_is_taken() -> None:
    for holder in ("mallory", "hsc-2_0123abcd", "hsc-1_XYZ", "sharder/mallory"):
        shard, why = judge(lease("hsc-1", 1, holder=holder), MEMBERS, NOW)
        assert shard is not None and shard.health == Health.DEAD, holder
        assert "holder" in why
    shard, _ = judge(lease("hsc-1", 1, holder="mallory"), MEMBERS, NOW)
    assert shard is not None and shard.died_holding  # taken before its hosts move


def test_a_duration_longer_than_configured_is_cut_and_a_renew_ahead_of_now_refused() -> None:
    year = judge(lease("hsc-1", 31, duration=MAX_INT32), MEMBERS, NOW)
    assert year[0] is not None and year[0].health == Health.DEAD and "longer" in year[1]
    fresh = judge(lease("hsc-1", 1, duration=MAX_INT32), MEMBERS, NOW)[0]
    assert fresh is not None and fresh.health == Health.READY  # a replica's renew is kept
    shorter = judge(lease("hsc-1", 6, duration=5), MEMBERS, NOW)
    assert shorter[0] is not None and shorter[0].health == Health.EXPIRED and not shorter[1]
    ahead = judge(lease("hsc-1", -3600), MEMBERS, NOW)
    assert ahead[0] is not None and ahead[0].health == Health.DEAD and "ahead" in ahead[1]
    assert judge(lease("hsc-1", -5), MEMBERS, NOW)[0].health == Health.READY  # type: ignore[union-attr]


def test_the_sharders_lease_may_be_held_only_by_a_configured_replica() -> None:
    assert MEMBERS.may_hold_sharder("hsc-0_0123abcd") and MEMBERS.may_hold_sharder("")
    for holder in ("mallory", "hsc-9_0123abcd", "sharder/hsc-0_0123abcd"):
        assert not MEMBERS.may_hold_sharder(holder), holder
    assert MEMBERS.may_hold_own("hsc-0", "hsc-0_0123abcd")
    assert not MEMBERS.may_hold_own("hsc-0", "hsc-1_0123abcd")
