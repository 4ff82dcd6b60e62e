"""Lease leader election, with the official client's ``LeaderElection`` and ``LeaseLock``.

Only the leader reconciles; the others keep their caches warm so they can take
over at once. A leader that cannot renew its lease stops leading and the
process exits (as controller-runtime managers do), so two replicas never act
on the same host at the same time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock
from urllib3.exceptions import HTTPError

log = logging.getLogger(__name__)

UNREACHABLE = (HTTPError, OSError)  # no answer from the API server, as urllib3 raises it


class AnsweringLeaseLock(LeaseLock):
    """The official ``LeaseLock``, whose calls fail like an API error when the API server
    cannot be reached.

    The official client's election catches only ``ApiException``: a refused or reset
    connection raised out of its thread, which ended silently, so ``onstopped_leading``
    never ran and the process went on reconciling without renewing its Lease. Found by
    cutting a shard off from the API server (tests/cluster/test_shard_replicas.py): it
    reconciled on while the sharder gave its hosts away. With these answers a renew that
    cannot reach the server fails, the election gives up after ``renew_deadline``, and
    the process exits before the Lease expires.
    """

    may_hold: Callable[[str], bool] | None = None  # None: any holder is believed

    def get(self, name: str, namespace: str) -> tuple[bool, Any]:
        try:
            found, record = super().get(name, namespace)
        except UNREACHABLE as err:
            return False, ApiException(status=0, reason=f"API server unreachable: {err}")
        holder = getattr(record, "holder_identity", None) if found else None
        if holder and self.may_hold is not None and not self.may_hold(holder):
            # a holder no replica of this installation could be: taken over at once (the
            # election writes over a record with no holder), with the resourceVersion read
            log.warning("Lease %s/%s: holder %r not believed; taking it", namespace, name, holder)
            record.holder_identity = None
        return found, record

    def create(self, name: str, namespace: str, election_record: Any) -> bool:
        try:
            return super().create(name, namespace, election_record)  # type: ignore[no-any-return]
        except UNREACHABLE:
            return False

    def update(self, name: str, namespace: str, updated_record: Any) -> bool:
        try:
            return super().update(name, namespace, updated_record)  # type: ignore[no-any-return]
        except UNREACHABLE:
            return False


DEFAULT_LEASE = "hoststate-controller"


@dataclass(frozen=True)
class LeaderElectionConfig:
    namespace: str
    name: str = DEFAULT_LEASE
    identity: str = ""
    lease_duration: int = 15
    renew_deadline: int = 10
    retry_period: int = 2
    # the holders this Lease may have (None: any); another is taken over at once rather
    # than waited out, so a Lease someone else wrote cannot stop this election forever
    may_hold: Callable[[str], bool] | None = None


def run_for_leadership(
    api: client.ApiClient,
    cfg: LeaderElectionConfig,
    *,
    on_started: Callable[[], None],
    on_stopped: Callable[[], None],
) -> threading.Thread:
    """Campaign in a daemon thread; ``on_started`` runs once this process leads. An
    election that fails in a way its library does not handle ends as a lost one
    (``on_stopped``): a process must never act on without knowing it holds the Lease."""
    election = campaign(api, cfg, on_started=on_started, on_stopped=on_stopped)

    def run() -> None:
        try:
            election.run()
        except Exception:
            log.exception("the election for the Lease %s/%s failed", cfg.namespace, cfg.name)
            on_stopped()

    thread = threading.Thread(target=run, name="leader-election", daemon=True)
    thread.start()
    return thread


def campaign(
    api: client.ApiClient,
    cfg: LeaderElectionConfig,
    *,
    on_started: Callable[[], None],
    on_stopped: Callable[[], None],
) -> leaderelection.LeaderElection:
    """The election, not yet run: the Lease ``cfg`` names, read and written through ``api``
    (get, create, update: what the manifests' Role grants on that one Lease)."""
    lock = AnsweringLeaseLock(cfg.name, cfg.namespace, cfg.identity)
    lock.may_hold = cfg.may_hold
    lock.api_instance = client.CoordinationV1Api(api)  # ours, not the global default client
    return leaderelection.LeaderElection(
        electionconfig.Config(
            lock,
            lease_duration=cfg.lease_duration,
            renew_deadline=cfg.renew_deadline,
            retry_period=cfg.retry_period,
            onstarted_leading=on_started,
            onstopped_leading=on_stopped,
        )
    )
