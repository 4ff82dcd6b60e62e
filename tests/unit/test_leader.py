"""Leader election when the API server does not answer: the Lease's calls fail as an
API error would, and an election that fails anyway ends as a lost one."""

from __future__ import annotations

import threading
from typing import Any

from kubernetes.leaderelection.leaderelectionrecord import LeaderElectionRecord
from urllib3.exceptions import MaxRetryError, ProtocolError

from state_controller.runtime import leader
from state_controller.runtime.leader import AnsweringLeaseLock, LeaderElectionConfig


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
