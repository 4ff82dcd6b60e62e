"""The controller's own status from the replicas' entries and the shards' Leases (pure)."""

from __future__ import annotations

from typing import Any

from state_controller.api.hoststate import Mode
from state_controller.api.timefmt import rfc3339
from state_controller.health.summary import (
    ProvisionerSeen,
    Share,
    controller_status,
    member_entry,
)
from state_controller.sharding.leases import Health, Shard

NOW = 1_900_000_000.0


def entry(
    name: str, *, hosts: int = 10, shard: str | None = None, draining: int = 0, **seen: Any
) -> dict[str, Any]:
    return member_entry(
        name=name,
        shard=name if shard is None else shard,
        since=NOW - 60,
        synced=True,
        share=Share(hosts=hosts, nodes=2, draining=draining, stuck=1, failed=1),
        version="1.0",
        provisioner=ProvisionerSeen("ironic", api_version="1.89", **seen),
    )


def status(
    mine: dict[str, Any],
    others: list[dict[str, Any]],
    shards: dict[str, Health] | None,
    before: dict[str, Any] | None = None,
    now: float = NOW,
) -> dict[str, Any]:
    leases = None if shards is None else {n: Shard(n, h, NOW) for n, h in shards.items()}
    return controller_status(
        mine=mine,
        others=others,
        shards=leases,
        mode=Mode.CLUSTER,
        mode_since=NOW - 3600,
        version="1.0",
        before=before,
        now=now,
    )


def conditions(out: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in out["conditions"]}


def test_sharded_members_add_up_and_a_dead_or_unknown_shard_is_dropped() -> None:
    others = [entry("b", hosts=20), entry("c", hosts=5), entry("gone", hosts=7)]
    out = status(entry("a"), others, {"a": Health.READY, "b": Health.READY, "c": Health.DEAD})
    assert [m["name"] for m in out["members"]] == ["a", "b"]
    assert out["hosts"] == 30 and out["replicas"] == out["readyReplicas"] == 2
    assert out["stuck"] == 2 and out["failed"] == 2 and out["nodes"] == 4
    assert conditions(out) == {
        "Available": ("True", "AsExpected"),
        "Progressing": ("False", "AsExpected"),
        "Degraded": ("False", "AsExpected"),
    }


def test_an_expired_shard_with_hosts_makes_the_controller_unavailable_and_degraded() -> None:
    out = status(entry("a"), [entry("b", hosts=20)], {"a": Health.READY, "b": Health.EXPIRED})
    assert conditions(out) == {
        "Available": ("False", "ShardNotRenewed"),
        "Progressing": ("True", "Rebalancing"),
        "Degraded": ("True", "ShardNotRenewed"),
    }
    available = next(c for c in out["conditions"] if c["type"] == "Available")
    assert available["message"].startswith("20 hosts wait for shard b")
    assert out["readyReplicas"] == 1


def test_not_sharded_one_replica_reconciles_and_a_former_pods_entry_goes() -> None:
    out = status(entry("pod-2", shard=""), [entry("pod-1", shard="")], None)
    assert [m["name"] for m in out["members"]] == ["pod-2"]
    assert out["members"][0]["lease"] == ""


def test_the_provisioner_is_reachable_only_from_everywhere_and_the_latest_outage_shows() -> None:
    shards = {"a": Health.READY, "b": Health.READY}
    older = entry("a", outage_started=NOW - 600, outage_ended=NOW - 500, outage_message="old")
    down = entry("b", reachable=False, outage_started=NOW - 30, outage_message="refused")
    out = status(older, [down], shards)
    seen = out["provisioner"]
    assert seen["reachable"] is False and seen["apiVersion"] == "1.89"
    assert seen["lastOutage"] == {"started": rfc3339(NOW - 30), "message": "refused"}
    degraded = next(c for c in out["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "ProvisionerUnreachable"
    assert "ironic does not answer b since" in degraded["message"]


def test_a_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    shards = {"a": Health.READY}
    first = status(entry("a"), [], shards, now=NOW)
    later = status(entry("a", hosts=11), [], shards, before=first, now=NOW + 100)
    times = {c["type"]: c["lastTransitionTime"] for c in later["conditions"]}
    assert set(times.values()) == {rfc3339(NOW)}
    down = status(entry("a", reachable=False), [], shards, before=later, now=NOW + 200)
    times = {c["type"]: c["lastTransitionTime"] for c in down["conditions"]}
    assert times["Degraded"] == rfc3339(NOW + 200) and times["Available"] == rfc3339(NOW)


def test_an_unchanged_replica_computes_the_status_it_finds() -> None:
    shards = {"a": Health.READY, "b": Health.READY}
    written = status(entry("a"), [entry("b")], shards)
    again = status(entry("a"), written["members"], shards, before=written, now=NOW + 5)
    assert again == written


def test_hosts_being_let_go_of_make_the_controller_progressing_not_degraded() -> None:
    shards = {"a": Health.READY, "b": Health.READY}
    out = status(entry("a", draining=3), [entry("b")], shards)
    assert conditions(out) == {
        "Available": ("True", "AsExpected"),
        "Progressing": ("True", "Rebalancing"),
        "Degraded": ("False", "AsExpected"),
    }
    progressing = next(c for c in out["conditions"] if c["type"] == "Progressing")
    assert "3 hosts being let go of" in progressing["message"]


def test_replicas_started_at_different_times_agree_on_since_when_the_mode_holds() -> None:
    """Each replica knows only its own start; the object's time is kept while the mode
    holds, so two replicas do not write their own over each other's at every look."""
    shards = {"a": Health.READY, "b": Health.READY}
    leases = {n: Shard(n, h, NOW) for n, h in shards.items()}

    def look(mine: str, other: str, started: float, before: dict[str, Any] | None) -> Any:
        return controller_status(mine=entry(mine), others=[entry(other)], shards=leases,
                                 mode=Mode.CLUSTER, mode_since=started, version="1.0",
                                 before=before, now=NOW)  # fmt: skip

    by_a = look("a", "b", NOW - 100, None)
    by_b = look("b", "a", NOW - 7, by_a)
    assert by_b == by_a and by_a["modeSince"] == rfc3339(NOW - 100)
    bootstrap = {**by_a, "mode": "Bootstrap"}  # the mode changed: since this replica knows
    assert look("b", "a", NOW - 7, bootstrap)["modeSince"] == rfc3339(NOW - 7)
