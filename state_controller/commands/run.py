"""``state-controller run``: the controller against a Kubernetes cluster."""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING

from kubernetes.config import ConfigException

from ..books.stuck import stuck_policy
from ..sharding.members import shard_names
from ..updates.signals import DEFAULT_POOL_LABEL
from .flags import (
    duration,
    ironic_settings,
    kube_flags,
    provisioner_flags,
    reach,
    reach_flags,
    remediation,
    remediation_flags,
    simulated_timings_flag,
    trace_flag,
)

if TYPE_CHECKING:  # the manager is imported when the command runs, not when it is parsed
    from ..manager import RunOptions

HELP = "run the controller against a Kubernetes cluster"

SOURCES = frozenset({"hosts", "baremetalhosts", "machineconfignodes"})


def add(p: argparse.ArgumentParser) -> None:
    kube_flags(p)
    p.add_argument(
        "--namespace",
        action="append",
        dest="namespaces",
        help="watch this namespace (repeat, or comma-separate, for several); not given: "
        "every namespace",
    )
    p.add_argument(
        "--sources",
        default="hosts",
        metavar="LIST",
        help="what to watch, comma-separated: hosts (hoststate Hosts, driven), "
        "baremetalhosts (metal3 BareMetalHosts, observed: reported on, never written), "
        "machineconfignodes (OpenShift's, read beside their Nodes); default %(default)s",
    )
    p.add_argument(
        "--metrics-bind-address",
        default=":8443",
        help="'0' disables; served over HTTPS, only to callers the API server authenticates "
        "and authorises (TokenReview, SubjectAccessReview on the non-resource URL /metrics), "
        "unless --metrics-insecure or on loopback (default %(default)s)",
    )
    scheme = p.add_mutually_exclusive_group()
    scheme.add_argument(
        "--metrics-secure", action="store_true", help="HTTPS even on a loopback address"
    )
    scheme.add_argument(
        "--metrics-insecure",
        action="store_true",
        help="plain HTTP, no authentication, on any address: anyone who reaches it reads it",
    )
    p.add_argument(
        "--metrics-cert-dir",
        help="for HTTPS: a folder with tls.crt and tls.key, loaded again when they change "
        "(default: self-signed)",
    )
    p.add_argument("--health-probe-bind-address", default=":8081", help="'0' disables")
    p.add_argument("--leader-elect", action="store_true", help="reconcile only as leader")
    p.add_argument("--leader-election-namespace", default="hoststate-system")
    p.add_argument("--leader-election-id", default="hoststate-controller")
    p.add_argument(
        "--shard",
        metavar="NAME",
        default="",
        help="run as one of several replicas sharing the Hosts: reconcile only those the "
        "sharder gives NAME, holding the Lease hoststate-shard-NAME in "
        "--leader-election-namespace (the replica holding hoststate-sharder runs the "
        "sharder); NAME is unique among the replicas, e.g. the pod's name",
    )
    p.add_argument(
        "--shards",
        metavar="N|NAMES",
        default="",
        help="with --shard: every replica the operator runs, as the StatefulSet's replica "
        "count (its pods <name>-0 to <name>-(N-1)) or the shard names, comma-separated; a "
        "Lease of any other shard is ignored, never trusted (docs/security.md)",
    )
    p.add_argument("--lease-duration", type=int, default=15, help="whole seconds")
    p.add_argument("--renew-deadline", type=int, default=10, help="whole seconds")
    p.add_argument("--retry-period", type=int, default=2, help="whole seconds")
    p.add_argument("--workers", type=int, default=4)
    simulated_timings_flag(p, "zero")
    p.add_argument(
        "--simulated-hardware",
        metavar="FILE",
        help="keep the simulated machines in this sqlite file, so a restart finds them as "
        "it left them, and replicas given the same file share them as they would one "
        "Ironic (default: in memory, new hardware at every start)",
    )
    trace_flag(p)
    nodes = p.add_argument_group("nodes and their updates")
    nodes.add_argument(
        "--no-nodes", action="store_true", help="do not watch Nodes (no update progression)"
    )
    nodes.add_argument(
        "--node-state-namespace",
        default="hoststate-system",
        help="where HostStates of Nodes that run on no Host live (default hoststate-system)",
    )
    nodes.add_argument(
        "--node-pool-label",
        default=DEFAULT_POOL_LABEL,
        help="label naming a Node's pool; prefix/* takes the role (default %(default)s)",
    )
    nodes.add_argument(
        "--link-nodes-by-hostname",
        action="store_true",
        help="a Node whose hostname is the name of exactly one Host runs on it; off by "
        "default: anyone who may create a Host may name it, so only spec.providerID or "
        "the hoststate.io/host label link a Node",
    )
    p.add_argument(
        "--node-pool-status-interval",
        type=duration,
        default=1.0,
        metavar="DURATION",
        help="write a NodePool's status at most this often (default 1s)",
    )
    p.add_argument(
        "--node-pool-counts-grace",
        type=duration,
        default=120.0,
        metavar="DURATION",
        help="with --sources=...,machineconfignodes: a MachineConfigPool's degraded count "
        "that differs from its Nodes' is told (NodePool SourcesAgree False) once it has "
        "differed this long (default 2m)",
    )
    p.add_argument(
        "--stuck-after",
        action="append",
        default=[],
        metavar="[POOL:]NAME=DURATION",
        help="stuck threshold of a provisioning state or update or servicing step, e.g. "
        "draining=45m, or for one node pool's machines worker:draining=30m (repeat for "
        "several; 'none' never stuck)",
    )
    p.add_argument(
        "--servicing-max-unavailable",
        type=int,
        default=1,
        metavar="N",
        help="servicing runs (spec.servicingPolicy rolling) under way at once in each node "
        "pool (default 1)",
    )
    provisioner_flags(p)
    reach_flags(p)
    remediation_flags(p)


def leader_election_problem(lease: int, renew: int, retry: int) -> str:
    """The client's LeaderElection exits its thread on these; say so before starting."""
    if retry < 1:
        return "--retry-period must be at least 1 second"
    if renew <= 1.2 * retry:
        return "--renew-deadline must be longer than 1.2 times --retry-period"
    if lease <= renew:
        return "--lease-duration must be longer than --renew-deadline"
    return ""


SHARD_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def shard_problem(shard: str, *, leader_elect: bool, sources: set[str]) -> str:
    if not shard:
        return ""
    if "baremetalhosts" in sources:
        return (
            "--shard with --sources baremetalhosts: BareMetalHosts are not shared out between "
            "shards; observe them from one replica (--leader-elect, no --shard)"
        )
    if not SHARD_NAME.match(shard):
        return (
            f"--shard {shard!r}: name it as a label value and a Lease name allow (lowercase "
            "letters, digits and '-', up to 63, starting and ending with a letter or digit)"
        )
    if leader_elect:
        return (
            "--shard and --leader-elect: a shard holds its own Lease and the sharder is "
            "elected among the shards; drop --leader-elect"
        )
    return ""


def watched_namespaces(args: argparse.Namespace) -> tuple[str, ...] | None:
    """The namespaces ``--namespace`` names (repeated or comma-separated); None, when it is
    not given: every namespace."""
    names = tuple(
        n.strip() for value in args.namespaces or () for n in value.split(",") if n.strip()
    )
    return names or None


def chosen_sources(args: argparse.Namespace) -> set[str]:
    """What ``--sources`` names (checked against :data:`SOURCES` by :func:`main`)."""
    return {s.strip() for s in args.sources.split(",") if s.strip()}


def run_options(args: argparse.Namespace) -> RunOptions:
    """The options the command line gives, checked; ValueError names the flag and the fix."""
    from ..manager import RunOptions

    namespaces = watched_namespaces(args)
    problem = leader_election_problem(args.lease_duration, args.renew_deadline, args.retry_period)
    sources = chosen_sources(args)
    if not sources or sources - SOURCES:
        problem = (
            f"--sources {args.sources!r}: name one or more of {', '.join(sorted(SOURCES))}, "
            "separated by commas"
        )
    if args.servicing_max_unavailable < 1:
        problem = "--servicing-max-unavailable: give 1 or more"
    problem = problem or shard_problem(args.shard, leader_elect=args.leader_elect, sources=sources)
    if problem:
        raise ValueError(problem)
    shards = shard_names(args.shards, args.shard) if args.shard else frozenset[str]()
    ironic = ironic_settings(args)
    policy, pools = remediation(args)
    return RunOptions(
        kubeconfig=args.kubeconfig,
        context=args.context,
        namespaces=namespaces,
        metrics_bind_address=args.metrics_bind_address,
        metrics_secure=args.metrics_secure,
        metrics_insecure=args.metrics_insecure,
        metrics_cert_dir=args.metrics_cert_dir,
        health_probe_bind_address=args.health_probe_bind_address,
        leader_elect=args.leader_elect,
        shard=args.shard,
        shards=shards,
        leader_election_namespace=args.leader_election_namespace,
        leader_election_id=args.leader_election_id,
        lease_duration=args.lease_duration,
        renew_deadline=args.renew_deadline,
        retry_period=args.retry_period,
        workers=args.workers,
        simulated_timings=args.simulated_timings,
        simulated_hardware=args.simulated_hardware,
        trace=args.trace,
        ironic=ironic,
        follow_nodes=not args.no_nodes,
        node_state_namespace=args.node_state_namespace,
        pool_label=args.node_pool_label,
        link_nodes_by_hostname=args.link_nodes_by_hostname,
        drive_hosts="hosts" in sources,
        observe_baremetalhosts="baremetalhosts" in sources,
        observe_machineconfignodes="machineconfignodes" in sources,
        reach=reach(args),
        pool_status_interval=args.node_pool_status_interval,
        pool_counts_grace=args.node_pool_counts_grace,
        stuck=stuck_policy(args.stuck_after),
        remediation=policy,
        remediation_pools=pools,
        servicing_max_unavailable=args.servicing_max_unavailable,
    )


def main(args: argparse.Namespace) -> int:
    from ..manager import run_controller

    try:
        return run_controller(run_options(args))
    except (ValueError, ConfigException) as err:
        print(str(err), file=sys.stderr)
        return 2
