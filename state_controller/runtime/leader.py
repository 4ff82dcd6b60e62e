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

from kubernetes import client
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

log = logging.getLogger(__name__)


DEFAULT_LEASE = "hoststate-controller"


@dataclass(frozen=True)
class LeaderElectionConfig:
    namespace: str
    name: str = DEFAULT_LEASE
    identity: str = ""
    lease_duration: int = 15
    renew_deadline: int = 10
    retry_period: int = 2


def run_for_leadership(
    api: client.ApiClient,
    cfg: LeaderElectionConfig,
    *,
    on_started: Callable[[], None],
    on_stopped: Callable[[], None],
) -> threading.Thread:
    """Campaign in a daemon thread; ``on_started`` runs once this process leads."""
    election = campaign(api, cfg, on_started=on_started, on_stopped=on_stopped)
    thread = threading.Thread(target=election.run, name="leader-election", daemon=True)
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
    lock = LeaseLock(cfg.name, cfg.namespace, cfg.identity)
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
