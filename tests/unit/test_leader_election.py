"""Leader election when the API server does not answer: the Lease's calls fail as an
API error would, and an election that fails anyway ends as a lost one."""

from __future__ import annotations

import threading
from typing import Any

from kubernetes.leaderelection.leaderelectionrecord import LeaderElectionRecord
from urllib3.exceptions import MaxRetryError, ProtocolError

from state_controller.runtime.machinery import leader_election as leader
from state_controller.runtime.machinery.leader_election import (
    AnsweringLeaseLock,
    LeaderElectionConfig,
)


class Unreachable:
    """A CoordinationV1Api whose every call finds no API server."""

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise MaxRetryError(None, "/apis/coordination.k8s.io", ProtocolError("reset"))  # type: ignore[arg-type]

        return call


def test_a_lease_call_with_no_api_server_answers_failed_instead_of_raising() -> None:
    lock = AnsweringLeaseLock("hoststate-shard-a", "hoststate-system", "a_1")
    lock.api_instance = Unreachable()
    found, error = lock.get("hoststate-shard-a", "hoststate-system")
    assert found is False and "unreachable" in error.reason and error.body is None
    record = LeaderElectionRecord("a_1", "15", "2026-11-26 10:00:00", "2026-11-26 10:00:00")
    assert lock.create("hoststate-shard-a", "hoststate-system", record) is False
    assert lock.update("hoststate-shard-a", "hoststate-system", record) is False


def test_an_election_that_raises_ends_as_a_lost_one(monkeypatch: Any) -> None:
    class Broken:
        def run(self) -> None:
            raise RuntimeError("a failure the library does not handle")

    monkeypatch.setattr(leader, "campaign", lambda *args, **kwargs: Broken())
    lost = threading.Event()
    thread = leader.run_for_leadership(
        None,
        LeaderElectionConfig(namespace="hoststate-system"),
        on_started=lambda: None,
        on_stopped=lost.set,
    )
    thread.join(timeout=10)
    assert lost.is_set()


class Held:
    """A CoordinationV1Api whose one Lease is held by ``holder``, renewed just now."""

    def __init__(self, holder: str) -> None:
        import datetime

        from kubernetes import client

        now = datetime.datetime.now(datetime.UTC)
        spec = client.V1LeaseSpec(
            holder_identity=holder,
            lease_duration_seconds=2_147_483_647,
            acquire_time=now,
            renew_time=now,
        )
        self.lease = client.V1Lease(metadata=client.V1ObjectMeta(resource_version="7"), spec=spec)
        self.replaced: list[Any] = []

    def read_namespaced_lease(self, name: str, namespace: str) -> Any:
        return self.lease

    def replace_namespaced_lease(self, name: str, namespace: str, body: Any) -> Any:
        self.replaced.append(body)
        return body


def test_a_holder_no_replica_could_be_is_taken_over_at_once_not_waited_out() -> None:
    from state_controller.sharding.members import Members

    members = Members(frozenset({"a", "b"}), 15)
    for holder, taken in (("mallory", True), ("b_0123abcd", False)):
        api = Held(holder)
        cfg = LeaderElectionConfig(
            "hoststate-system", "hoststate-sharder", "a_0123abcd", may_hold=members.may_hold_sharder
        )
        election = leader.campaign(api, cfg, on_started=lambda: None, on_stopped=lambda: None)  # type: ignore[arg-type]
        election.election_config.lock.api_instance = api
        assert election.try_acquire_or_renew() is taken, holder  # type: ignore[no-untyped-call]
        if taken:  # written over the resourceVersion read: a renew since is a conflict
            (body,) = api.replaced
            assert body.spec.holder_identity == "a_0123abcd"
            assert body.metadata.resource_version == "7"
