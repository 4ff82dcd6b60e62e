"""The sharder on both backends (in process, and a real kube-apiserver): Hosts assigned to
the ring's choice among the shards whose Leases are renewed; a dead shard's hosts moved at
once and nobody else's; an expired shard's left where they are; a joining shard's share
drained from its live owners, never relabelled under them, and assigned once they let go;
a shard label a user edits put right."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from state_controller.cluster.interface import HOSTS, LEASES, ApiError, Cluster
from state_controller.runtime.shards.sharder import Sharder
from state_controller.sharding.leases import DRAIN_LABEL, LEASE_PREFIX, SHARD_LABEL
from state_controller.sharding.members import Members
from state_controller.sharding.ring import Ring
from state_controller.simulation.fleet import create_fleet
from testbed.scenarios import NS
from tests.conftest import wait_for

HOSTS_N = 40
NOW = 1_900_000_000.0  # the sharder's clock: the Leases are renewed relative to it
THREE = Ring.of(["a", "b", "c"])  # the shards the fixture starts with
MEMBERS = Members(frozenset("abcd"), 15)  # the shards the operator runs (--shards a,b,c,d)
IDENTITY = "a_0123abcd"  # the replica running the sharder, as it names itself


def micro_time(ts: float) -> str:
    """A Lease's MicroTime (RFC 3339 with six fraction digits, as the API server reads it)."""
    whole, micro = divmod(round(ts * 1_000_000), 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{micro:06d}Z"


def put_lease(
    cluster: Cluster,
    shard: str,
    renewed_ago: float,
    *,
    holder: str | None = None,
    duration: int = 15,
) -> None:
    """A shard's Lease as its replica writes it (``holder``: as someone else does)."""
    name = LEASE_PREFIX + shard
    spec = {
        "holderIdentity": f"{shard}_0123abcd" if holder is None else holder,
        "leaseDurationSeconds": duration,
        "renewTime": micro_time(NOW - renewed_ago),
    }
    try:
        cluster.patch(LEASES, NS, name, {"spec": spec})
    except Exception:
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": NS},
            "spec": spec,
        }
        cluster.create(LEASES, lease)


def owners(cluster: Cluster) -> dict[str, tuple[str, bool]]:
    hosts, _ = cluster.list(HOSTS, NS)
    out = {}
    for host in hosts:
        labels = host["metadata"].get("labels") or {}
        key = f"{NS}/{host['metadata']['name']}"
        out[key] = (str(labels.get(SHARD_LABEL) or ""), DRAIN_LABEL in labels)
    return out


def placed_by(ring: Ring, cluster: Cluster) -> bool:
    return all(owner == (ring.owner(key), False) for key, owner in owners(cluster).items())


@pytest.fixture
def sharder(cluster: Cluster) -> Iterator[Sharder]:
    for shard in ("a", "b", "c"):
        put_lease(cluster, shard, renewed_ago=1)
    create_fleet(cluster, NS, HOSTS_N)
    running = Sharder(
        cluster,
        lease_namespace=NS,
        members=MEMBERS,
        namespaces=(NS,),
        resync=0.2,
        judge_all_every=3600,  # every host judged again only when the shards change
        identity=IDENTITY,
        clock=lambda: NOW,
    )
    running.start()
    try:
        wait_for(lambda: placed_by(THREE, cluster), what="every host on the ring of a, b, c")
        # the labels show before the round that wrote them ends and counts its writes
        wait_for(lambda: running.written >= HOSTS_N, what="the first labels counted")
        yield running
    finally:
        running.stop()
        for lease in cluster.list(LEASES, NS)[0]:
            cluster.delete(LEASES, NS, lease["metadata"]["name"])


def test_hosts_go_to_live_shards_and_a_dead_shards_move_at_once(
    cluster: Cluster, sharder: Sharder
) -> None:
    before = owners(cluster)
    assert {shard for shard, _ in before.values()} == {"a", "b", "c"}

    rounds = sharder.rounds
    put_lease(cluster, "b", renewed_ago=20)  # expired: maybe slow, maybe gone
    wait_for(lambda: sharder.rounds >= rounds + 3, what="three rounds with b expired")
    assert owners(cluster) == before

    put_lease(cluster, "b", renewed_ago=31)  # dead: twice its duration without a renew
    two = Ring.of(["a", "c"])
    wait_for(lambda: placed_by(two, cluster), what="b's hosts moved to a and c")
    after = owners(cluster)
    moved = {key for key in before if before[key] != after[key]}
    assert moved == {key for key, (shard, _) in before.items() if shard == "b"}
    # b's Lease was taken before any of its hosts moved: a holder that comes back fails
    # to renew it (the API server orders both writes: one store, one resourceVersion)
    lease = cluster.get(LEASES, NS, LEASE_PREFIX + "b")
    assert lease["spec"]["holderIdentity"] == "sharder/" + IDENTITY
    relabelled = [cluster.get(HOSTS, NS, key.split("/", 1)[1]) for key in moved]
    first_move = min(int(h["metadata"]["resourceVersion"]) for h in relabelled)
    assert int(lease["metadata"]["resourceVersion"]) < first_move

    # once it has expired again with no host left on b, the Lease goes
    sharder.clock = lambda: NOW + 16
    wait_for(lambda: LEASE_PREFIX + "b" not in leases(cluster), what="b's Lease deleted")
    assert {LEASE_PREFIX + s for s in ("a", "c")} <= leases(cluster)


def leases(cluster: Cluster) -> set[str]:
    return {lease["metadata"]["name"] for lease in cluster.list(LEASES, NS)[0]}


def test_a_joining_shards_share_is_drained_first_then_assigned(
    cluster: Cluster, sharder: Sharder
) -> None:
    before = owners(cluster)
    four = Ring.of(["a", "b", "c", "d"])
    theirs = {key for key in before if four.owner(key) == "d"}
    assert theirs, "the ring gives d none of 40 hosts"

    put_lease(cluster, "d", renewed_ago=1)

    def drained() -> bool:
        now = owners(cluster)
        return all(now[key] == (before[key][0], True) for key in theirs)

    wait_for(drained, what="d's share drained, still labelled with its owner")
    assert all(owners(cluster)[key] == before[key] for key in before if key not in theirs)

    for key in theirs:  # each owner lets go, as its reconcile of the host comes round
        name = key.split("/", 1)[1]
        cluster.patch(HOSTS, NS, name, {"metadata": {"labels": {SHARD_LABEL: None,
                                                                DRAIN_LABEL: None}}})  # fmt: skip
    wait_for(lambda: placed_by(four, cluster), what="d's share assigned to d")


def test_leases_no_configured_replica_wrote_decide_nothing_and_are_told_once(
    cluster: Cluster, sharder: Sharder, caplog: pytest.LogCaptureFixture
) -> None:
    """12 Leases of shards the operator does not run, Ready for 68 years by their word,
    and one of a configured shard held by someone else: no host moves to any of them,
    each is told once, and the configured one is taken (its holder overwritten)."""
    before = owners(cluster)
    fakes = [f"evil-{i}" for i in range(12)]
    caplog.set_level("WARNING", logger="state_controller.runtime.shards.sharder")
    for fake in fakes:
        put_lease(cluster, fake, renewed_ago=1, duration=2_147_483_647)
    put_lease(cluster, "d", renewed_ago=1, holder="mallory", duration=2_147_483_647)
    wait_for(
        lambda: lease_holder(cluster, "d") == "sharder/" + IDENTITY, what="d's Lease taken back"
    )
    rounds = sharder.rounds
    wait_for(lambda: sharder.rounds >= rounds + 3, what="three rounds more")
    assert owners(cluster) == before  # nothing drained towards a shard no replica runs
    assert {LEASE_PREFIX + f for f in fakes} <= set(sharder.refused)
    told = [r.getMessage() for r in caplog.records if "not believed" in r.getMessage()]
    for name in [*fakes, "d"]:
        assert sum(f"{LEASE_PREFIX}{name} " in m for m in told) == 1, (name, told)

    # a host a tenant gives to a made-up shard goes back to a live one at once
    cluster.patch(HOSTS, NS, "host-0003", {"metadata": {"labels": {SHARD_LABEL: "evil-0"}}})
    wait_for(lambda: placed_by(THREE, cluster), what="host-0003 back on the ring")


def lease_holder(cluster: Cluster, shard: str) -> str:
    spec = cluster.get(LEASES, NS, LEASE_PREFIX + shard).get("spec") or {}
    return str(spec.get("holderIdentity") or "")


def test_the_sharder_caches_the_hosts_metadata_alone(sharder: Sharder) -> None:
    host = sharder.hosts.get(f"{NS}/host-0000")
    assert host is not None and host["metadata"]["labels"][SHARD_LABEL] in ("a", "b", "c")
    assert "spec" not in host and "status" not in host


def test_a_shard_label_a_user_edits_or_deletes_is_put_right(
    cluster: Cluster, sharder: Sharder
) -> None:
    cluster.patch(HOSTS, NS, "host-0000", {"metadata": {"labels": {SHARD_LABEL: None}}})
    cluster.patch(HOSTS, NS, "host-0001", {"metadata": {"labels": {SHARD_LABEL: "nobody"}}})
    wait_for(lambda: placed_by(THREE, cluster), what="both labels put right")


def test_a_flip_to_another_live_shard_is_put_back_at_once_with_one_patch_not_drained(
    cluster: Cluster, sharder: Sharder
) -> None:
    """Ten flips of a host's label to another live shard by someone else: each is put back
    with one patch, no drain (the shard it names never took the host in, so there is no
    one to let go), and no other host moves."""
    before = owners(cluster)
    key = f"{NS}/host-0000"
    owner = before[key][0]
    other = next(s for s in "abc" if s != owner)
    written = sharder.written
    drained = False
    for flip in range(1, 11):
        cluster.patch(HOSTS, NS, "host-0000", {"metadata": {"labels": {SHARD_LABEL: other}}})

        def back() -> bool:
            nonlocal drained
            now = owners(cluster)[key]
            drained = drained or now[1]
            return now == (owner, False)

        wait_for(back, what="the label put back")
        wait_for(lambda n=written + flip: sharder.written >= n, what="the put-back counted")
    rounds = sharder.rounds
    wait_for(lambda: sharder.rounds >= rounds + 2, what="two more rounds")
    assert not drained
    assert sharder.written - written == 10
    assert owners(cluster) == before


def test_a_round_judges_the_hosts_that_changed_and_all_when_the_shards_change(
    cluster: Cluster, sharder: Sharder
) -> None:
    cluster.patch(HOSTS, NS, "host-0002", {"metadata": {"labels": {SHARD_LABEL: None}}})
    wait_for(lambda: placed_by(THREE, cluster), what="the host assigned again")
    rounds, judged = sharder.rounds, sharder.judged
    wait_for(lambda: sharder.rounds >= rounds + 3, what="three rounds more")
    assert sharder.judged - judged < HOSTS_N  # the others were left alone

    rounds, judged = sharder.rounds, sharder.judged
    put_lease(cluster, "d", renewed_ago=1)  # a shard joins: where each host goes may change
    wait_for(lambda: sharder.judged >= judged + HOSTS_N, what="every host judged again")


class FailingHostWrites:
    """A cluster whose next ``failures`` Host patches fail as an API server in trouble
    answers (500), with no watch event to say so."""

    def __init__(self, cluster: Cluster, failures: int) -> None:
        self.cluster, self.failures = cluster, failures

    def __getattr__(self, name: str) -> object:
        return getattr(self.cluster, name)

    def patch(self, resource: object, *args: object, **kwargs: object) -> object:
        if resource == HOSTS and self.failures > 0:
            self.failures -= 1
            raise ApiError("etcdserver: request timed out")
        return self.cluster.patch(resource, *args, **kwargs)  # type: ignore[arg-type]


def test_a_move_that_failed_is_written_again_with_no_event_to_ask(cluster: Cluster) -> None:
    for shard in ("a", "b", "c"):
        put_lease(cluster, shard, renewed_ago=1)
    create_fleet(cluster, NS, 5)
    failing = FailingHostWrites(cluster, failures=3)
    sharder = Sharder(
        failing,  # type: ignore[arg-type]
        lease_namespace=NS,
        members=MEMBERS,
        namespaces=(NS,),
        resync=0.2,
        judge_all_every=3600,
        clock=lambda: NOW,
    )
    sharder.start()
    try:
        wait_for(lambda: placed_by(THREE, cluster), what="every host placed in the end")
        assert failing.failures == 0
    finally:
        sharder.stop()
        for lease in cluster.list(LEASES, NS)[0]:
            cluster.delete(LEASES, NS, lease["metadata"]["name"])
