"""The host reconciler's writes: only when needed, and through conflicts."""

from __future__ import annotations

from typing import Any

from state_controller.cluster.interface import HOSTS, HOSTSTATES
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.hand_driven import HandDriven, StatusWrites


def setup() -> tuple[HandDriven, StatusWrites]:
    recorder = StatusWrites()
    s = HandDriven(reporter=recorder)
    s.add_secret(secret_manifest("ns", "host-0000-bmc", "admin", "pw"))
    s.create(host_manifest("ns", 0))
    return s, recorder


def test_second_reconcile_writes_nothing() -> None:
    s, recorder = setup()
    s.reconcile("ns/host-0000")
    # Host.status first, carrying the transitions, then the HostState; nothing more at
    # rest: the transitions Host.status still shows are all in the HostState's history
    assert recorder.writes == [("hosts", "written"), ("hoststates", "written")]
    recent = s.store.get(HOSTS, "ns", "host-0000")["status"]["recentTransitions"]
    history = s.store.get(HOSTSTATES, "ns", "host-0000")["status"]["history"]
    assert recent and {t["seq"] for t in recent} <= {t["seq"] for t in history}
    before: dict[str, Any] = dict(s.store.stats)
    s.reconcile("ns/host-0000")
    assert recorder.writes[2:] == [("hosts", "unchanged"), ("hoststates", "unchanged")]
    assert s.store.stats["update_status"] == before["update_status"]
    assert s.store.stats["patch"] == before["patch"]


def test_a_stale_cache_costs_one_retry_and_is_counted_as_conflict() -> None:
    s, recorder = setup()
    s.reconcile("ns/host-0000")
    # the user powers the host off; the cache sees that, but not a later label change
    s.patch("ns/host-0000", {"spec": {"online": False}})
    s.store.patch(HOSTS, "ns", "host-0000", {"metadata": {"labels": {"rack": "r7"}}})
    s.reconcile("ns/host-0000")
    assert ("hosts", "conflict") in recorder.writes
    stored = s.store.get(HOSTS, "ns", "host-0000")
    assert stored["status"]["poweredOn"] is False
    assert stored["metadata"]["labels"] == {"rack": "r7"}  # the other change survived


def test_the_answer_to_the_last_finalizer_removal_does_not_resurrect_the_host() -> None:
    s, _ = setup()
    s.reconcile("ns/host-0000")
    s.store.delete(HOSTS, "ns", "host-0000")
    s.hosts.mutate(s.store.get(HOSTS, "ns", "host-0000"))  # the cache sees the deletionTimestamp
    s.reconcile("ns/host-0000")  # deprovisions, then removes the finalizer
    assert s.store.list(HOSTS)[0] == []
    assert s.hosts.get("ns/host-0000") is None  # the PATCH answer must not bring it back


def test_a_host_changed_since_read_before_its_finalizer_is_read_again_not_failed() -> None:
    """The finalizer is added on condition that the Host is as read (so that a shard
    label moved meanwhile is not overwritten): a conflict asks for the Host to be read
    again, with nothing written or recorded, rather than failing the reconcile."""
    s, recorder = setup()
    s.store.patch(HOSTS, "ns", "host-0000", {"metadata": {"labels": {"rack": "r7"}}})
    outcome = s.reconciler.reconcile("ns/host-0000")  # the cache still has the one before
    assert outcome.rate_limited and outcome.requeue_after is None
    assert recorder.writes == []
    assert s.store.get(HOSTS, "ns", "host-0000")["metadata"].get("finalizers") is None
    assert s.store.list(HOSTSTATES)[0] == []
    s.hosts.mutate(s.store.get(HOSTS, "ns", "host-0000"))  # its event comes in
    s.reconcile("ns/host-0000")
    stored = s.store.get(HOSTS, "ns", "host-0000")
    assert stored["metadata"]["finalizers"] and stored["metadata"]["labels"] == {"rack": "r7"}
    assert recorder.writes[:2] == [("hosts", "written"), ("hoststates", "written")]
