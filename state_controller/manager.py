"""``state-controller run``: the controller against a real cluster.

Reads a kubeconfig (or the pod's service account), watches Hosts, HostStates
and Secrets in the given namespaces (or all), serves /metrics and the
/healthz and /readyz probes, and with ``--leader-elect`` reconciles only
while it holds the Lease; the standby keeps its caches warm. SIGTERM stops it
cleanly; losing the lease ends it with exit code 1, for Kubernetes to restart.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from .api.reach import Reach
from .books.stuck import StuckPolicy
from .cluster.interface import LEASES, ApiError, Cluster
from .cluster.kube import KubeCluster, load_api_client
from .observability.endpoints import (
    BindError,
    loopback,
    parse_bind_address,
    serve_metrics,
    serve_probes,
)
from .observability.metrics_auth import DelegatedAuth, ServerCertificate, serve_metrics_securely
from .observability.tracing import Exporter
from .provisioning.hardware_file import HardwareFile
from .provisioning.ironic import IronicSettings
from .provisioning.provisioner import Provisioner
from .provisioning.simulated import SimulatedProvisioner, Timings
from .remediation.policy import RemediationPolicy
from .runtime.config import ControllerConfig
from .runtime.controller import HostController
from .runtime.machinery.leader_election import (
    DEFAULT_LEASE,
    LeaderElectionConfig,
    run_for_leadership,
)
from .runtime.shards.sharder import SHARDER_LEASE, Sharder
from .sharding.leases import LEASE_PREFIX
from .sharding.members import Members, identity_for
from .updates.signals import DEFAULT_POOL_LABEL
from .wiring import observed_controller

log = logging.getLogger("state_controller.manager")


@dataclass
class RunOptions:
    kubeconfig: str | None = None
    context: str | None = None
    namespaces: tuple[str, ...] | None = None
    metrics_bind_address: str = ":8443"
    # HTTPS, callers authenticated and authorised by the API server, unless insecure or,
    # without secure, the address is loopback
    metrics_secure: bool = False
    metrics_insecure: bool = False
    metrics_cert_dir: str | None = None  # tls.crt and tls.key; None: self-signed
    health_probe_bind_address: str = ":8081"
    leader_elect: bool = False
    shard: str = ""  # one of several replicas sharing the Hosts (runtime/shards/sharder.py)
    # every replica's shard (--shards): a Lease of another name is no shard
    shards: frozenset[str] = frozenset()
    leader_election_namespace: str = "hoststate-system"
    leader_election_id: str = DEFAULT_LEASE
    lease_duration: int = 15
    renew_deadline: int = 10
    retry_period: int = 2
    workers: int = 4
    simulated_timings: str = "zero"
    simulated_hardware: str | None = None  # sqlite file keeping the simulated machines
    trace: Exporter = "none"
    ironic: IronicSettings | None = None  # None: the simulated provisioner
    follow_nodes: bool = True
    node_state_namespace: str = "hoststate-system"
    pool_label: str = DEFAULT_POOL_LABEL
    pool_status_interval: float = 1.0
    pool_counts_grace: float = 120.0
    link_nodes_by_hostname: bool = False
    drive_hosts: bool = True
    observe_baremetalhosts: bool = False
    observe_machineconfignodes: bool = False
    reach: Reach = field(default_factory=Reach)
    stuck: StuckPolicy = field(default_factory=StuckPolicy)
    remediation: RemediationPolicy | None = None  # None: off
    remediation_pools: frozenset[str] | None = None  # None: every pool
    servicing_max_unavailable: int = 1


def shard_members(opts: RunOptions) -> Members | None:
    """The shards this installation runs (``--shards``, else this one alone) and their
    Lease duration; None when not sharded."""
    if not opts.shard:
        return None
    return Members(opts.shards or frozenset({opts.shard}), opts.lease_duration)


def provisioner_for(opts: RunOptions) -> Provisioner:
    """The backend the options name. An Ironic that does not answer yet is no reason to
    exit: hosts show ``BackendUnavailable`` and back off until it does."""
    if opts.ironic is None:
        # On a real cluster a simulated backend marks hosts provisioned while no machine
        # was touched; say so where the person who deployed it will look first.
        log.warning(
            "simulated provisioner: no hardware is touched, hosts only pretend to change "
            "state; pass --ironic-url (and --ironic-credentials-dir) to drive OpenStack Ironic"
        )
        timings = Timings.named(opts.simulated_timings)
        hardware = HardwareFile(opts.simulated_hardware) if opts.simulated_hardware else None
        return SimulatedProvisioner(timings=timings, hardware=hardware)
    ironic = opts.ironic.provisioner(workers=opts.workers)
    problem = ironic.check()
    if problem:
        log.warning("Ironic is not usable yet: %s", problem)
    else:
        log.info("Ironic at %s, API %s", opts.ironic.url, ironic.microversion)
    return ironic


def _service_names() -> list[str]:
    """The names a self-signed metrics certificate is made for: the metrics Service's."""
    namespace = os.environ.get("POD_NAMESPACE", "hoststate-system")
    service = f"hoststate-controller-metrics.{namespace}.svc"
    return [service, f"{service}.cluster.local", "localhost", "127.0.0.1"]


def metrics_over_https(address: tuple[str, int], opts: RunOptions) -> bool:
    """Plain HTTP only where asked for, or where only this pod can reach it."""
    return not opts.metrics_insecure and (opts.metrics_secure or not loopback(address[0]))


def controller_config(opts: RunOptions) -> ControllerConfig:
    """What the controller is told to do by the options (the one translation, so a test
    that reads an installed Deployment's arguments runs the controller they describe)."""
    return ControllerConfig(
        workers=opts.workers,
        namespaces=opts.namespaces,
        stuck=opts.stuck,
        remediation=opts.remediation,
        remediation_pools=opts.remediation_pools,
        servicing_max_unavailable=opts.servicing_max_unavailable,
        follow_nodes=opts.follow_nodes,
        node_state_namespace=opts.node_state_namespace,
        pool_label=opts.pool_label,
        pool_status_interval=opts.pool_status_interval,
        pool_counts_grace=opts.pool_counts_grace,
        link_nodes_by_hostname=opts.link_nodes_by_hostname,
        drive_hosts=opts.drive_hosts,
        observe_baremetalhosts=opts.observe_baremetalhosts,
        observe_machineconfignodes=opts.observe_machineconfignodes,
        reach=opts.reach,
        shard=opts.shard,
        shard_members=shard_members(opts),
        lease_namespace=opts.leader_election_namespace,
    )


def run_controller(opts: RunOptions) -> int:
    metrics_address = parse_bind_address(opts.metrics_bind_address, "--metrics-bind-address")
    probe_address = parse_bind_address(
        opts.health_probe_bind_address, "--health-probe-bind-address"
    )
    api = load_api_client(opts.kubeconfig, opts.context)
    cluster = KubeCluster(api)
    config = controller_config(opts)
    observed = observed_controller(cluster, provisioner_for(opts), config, trace=opts.trace)
    controller, metrics = observed.controller, observed.metrics
    servers = []
    try:
        if metrics_address is not None and metrics_over_https(metrics_address, opts):
            certificate = ServerCertificate(opts.metrics_cert_dir, _service_names())
            servers.append(
                serve_metrics_securely(
                    metrics.registry, metrics_address, DelegatedAuth(cluster), certificate
                )
            )
            where = f"{metrics_address[0]}:{servers[-1].port}/metrics"
            print(f"metrics: https://{where} (authenticated)", file=sys.stderr)
        elif metrics_address is not None:
            if not loopback(metrics_address[0]):
                log.warning("--metrics-insecure: /metrics is plain HTTP to anyone who reaches it")
            servers.append(serve_metrics(metrics.registry, metrics_address))
            print(f"metrics: {metrics_address[0]}:{servers[-1].port}/metrics", file=sys.stderr)
        if probe_address is not None:
            servers.append(serve_probes(lambda: controller.synced, probe_address))
            print(f"probes: {probe_address[0]}:{servers[-1].port}/healthz,/readyz", file=sys.stderr)
    except BindError as err:
        for server in servers:
            server.stop()
        cluster.close()
        print(err, file=sys.stderr)
        return 2

    stop = threading.Event()
    lost = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    scope = ", ".join(opts.namespaces) if opts.namespaces else "all namespaces"
    sharder: Sharder | None = None
    released = False
    try:
        controller.start_caches()
        log.info("caches synced for %s", scope)
        if opts.shard:
            sharder = run_as_shard(api, cluster, opts, controller, lost=lost, stop=stop)
        elif opts.leader_elect:
            identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
            log.info(
                "campaigning for lease %s/%s as %s",
                opts.leader_election_namespace,
                opts.leader_election_id,
                identity,
            )

            metrics.leading(opts.leader_election_id, False)

            def started() -> None:
                log.info("became leader; reconciling")
                metrics.leading(opts.leader_election_id, True)
                controller.start_workers()

            def stopped() -> None:
                metrics.leading(opts.leader_election_id, False)
                log.error("lost the lease; stopping so that only one replica acts")
                lost.set()
                stop.set()

            run_for_leadership(
                api,
                LeaderElectionConfig(
                    namespace=opts.leader_election_namespace,
                    name=opts.leader_election_id,
                    identity=identity,
                    lease_duration=opts.lease_duration,
                    renew_deadline=opts.renew_deadline,
                    retry_period=opts.retry_period,
                ),
                on_started=started,
                on_stopped=stopped,
            )
        else:
            metrics.leading(opts.leader_election_id, True)
            controller.start_workers()
        stop.wait()
    finally:
        if sharder is not None:
            sharder.stop()
        controller.stop()
        observed.tracing.shutdown()  # send the spans still batched
        for server in servers:
            server.stop()
        leaving = bool(opts.shard) and not lost.is_set()
        released = leaving and release_shard(controller.cluster, opts)
        cluster.close()
    if lost.is_set():
        os._exit(1)  # the election thread cannot be stopped; leave at once
    if released:  # before the election thread's next renew could take the Lease again
        logging.shutdown()
        os._exit(0)
    return 0


def run_as_shard(
    api: Any,
    cluster: KubeCluster,
    opts: RunOptions,
    controller: HostController,
    *,
    lost: threading.Event,
    stop: threading.Event,
) -> Sharder:
    """Hold this shard's Lease (reconciling while it is held) and campaign for the
    sharder's; losing either ends the process, as losing the leader's Lease does."""
    identity = identity_for(opts.shard, uuid.uuid4().hex)
    members = controller.config.shard_members or shard_members(opts)
    assert members is not None  # sharded
    election = LeaderElectionConfig(
        namespace=opts.leader_election_namespace,
        name=LEASE_PREFIX + opts.shard,
        identity=identity,
        lease_duration=opts.lease_duration,
        renew_deadline=opts.renew_deadline,
        retry_period=opts.retry_period,
        may_hold=lambda holder: members.may_hold_own(opts.shard, holder),
    )
    sharder = Sharder(
        controller.cluster,  # instrumented: its requests are counted with the controller's
        lease_namespace=opts.leader_election_namespace,
        members=members,
        namespaces=opts.namespaces,
        identity=identity,
        on_host=controller.routes.on_fleet_host,
    )

    def lose(what: str) -> None:
        if stop.is_set():
            return  # stopping anyway: the Lease given up (release_shard) on the way out
        log.error("lost the %s Lease; stopping so that no host has two owners", what)
        lost.set()
        stop.set()

    def shard_held() -> None:
        log.info("holding shard %s's Lease; reconciling its hosts", opts.shard)
        controller.start_workers()

    def sharder_held() -> None:
        log.info("elected to run the sharder; keeping the Nodes with no Host and the NodePools")
        sharder.start()
        controller.take_lead()

    log.info("shard %s: campaigning for %s/%s", opts.shard, election.namespace, election.name)
    run_for_leadership(api, election, on_started=shard_held, on_stopped=lambda: lose("shard"))
    run_for_leadership(
        api,
        replace(election, name=SHARDER_LEASE, may_hold=members.may_hold_sharder),
        on_started=sharder_held,
        on_stopped=lambda: lose("sharder"),
    )
    return sharder


def release_shard(cluster: Cluster, opts: RunOptions) -> bool:
    """On a clean stop, after the last reconcile: give up the shard's Lease, so that the
    sharder moves its hosts at once rather than after twice the Lease's duration. The
    election thread renews every ``--retry-period``; one renew that reads the Lease in
    the instant before the process leaves takes it again, and the hosts then move when
    it expires, as after a kill."""
    name = LEASE_PREFIX + opts.shard
    try:
        cluster.patch(
            LEASES, opts.leader_election_namespace, name, {"spec": {"holderIdentity": ""}}
        )
    except ApiError as err:
        log.warning("could not release the Lease %s: %s; its hosts move when it expires", name, err)
        return False
    log.info("released the Lease %s: its hosts move now", name)
    return True
