"""``state-controller``: demo | run | get | gen."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from kubernetes.config import ConfigException

from .api.columns import HOST_COLUMNS, HOSTSTATE_COLUMNS, NODEPOOL_COLUMNS
from .books.stuck import parse_duration, stuck_policy
from .observability.endpoints import port_number
from .observability.logs import LEVELS
from .observability.logs import configure as configure_logs
from .observability.tracing import CHOICES as TRACE_EXPORTERS
from .observability.tracing import exporter_from_env
from .provisioning.fault_plan import FAULT_KINDS
from .provisioning.simulated import TIMINGS
from .simulated_nodes import UPDATE_FAULTS, UpdateFault
from .upgrades.signals import DEFAULT_POOL_LABEL

UPDATE_FAULT_KINDS = tuple(f.value for f in UPDATE_FAULTS)
ALL_FAULT_KINDS = (*FAULT_KINDS, *UPDATE_FAULT_KINDS)

if TYPE_CHECKING:
    from .provisioning.ironic import IronicSettings

IRONIC_FLAGS = (
    "ironic_username",
    "ironic_password_file",
    "ironic_credentials_dir",
    "ironic_driver",
    "ironic_ca_file",
)


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _trace_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trace",
        choices=[c for c in TRACE_EXPORTERS if c != "memory"],
        default=None,
        help="export traces: otlp (OTEL_EXPORTER_OTLP_ENDPOINT…), console, or none; "
        "default: $OTEL_TRACES_EXPORTER, else none",
    )


def _simulated_timings_flag(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument(
        "--simulated-timings",
        choices=list(TIMINGS),
        default=default,
        help="how long the simulated machines take: zero, or demo (seconds per step); "
        "default %(default)s",
    )


def _provisioner_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "provisioner",
        "which backend changes the hosts; --ironic-url alone selects ironic",
    )
    g.add_argument(
        "--provisioner",
        choices=["simulated", "ironic"],
        default=None,
        help="simulated hardware (default), or a real OpenStack Ironic",
    )
    g.add_argument("--ironic-url", help="Ironic API endpoint, e.g. http://ironic.example:6385")
    g.add_argument("--ironic-username", help="HTTP basic auth user (omit for a noauth Ironic)")
    g.add_argument("--ironic-password-file", help="file holding the HTTP basic auth password")
    g.add_argument(
        "--ironic-credentials-dir",
        help="directory with 'username' and 'password' files (a mounted Secret)",
    )
    g.add_argument(
        "--ironic-driver",
        help="one hardware type for every node (fake-hardware for a test Ironic); "
        "default: from each host's BMC address",
    )
    g.add_argument(
        "--ironic-poll-delay",
        type=float,
        default=2.0,
        help="seconds between polls of a node that is busy (default 2)",
    )
    g.add_argument("--ironic-ca-file", help="CA bundle for an https Ironic")
    g.add_argument("--ironic-insecure", action="store_true", help="skip TLS verification")


def ironic_settings(args: argparse.Namespace) -> IronicSettings | None:
    """The Ironic settings the flags ask for, None for the simulated provisioner."""
    from .provisioning.ironic import load_ironic_settings

    chosen = args.provisioner or ("ironic" if args.ironic_url else "simulated")
    if chosen != "ironic":
        names = ("ironic_url", *IRONIC_FLAGS, "ironic_insecure")
        given = [f"--{n.replace('_', '-')}" for n in names if vars(args)[n]]
        if given:
            raise ValueError(
                f"{', '.join(given)}: only with --provisioner ironic; add it or drop "
                f"{'this flag' if len(given) == 1 else 'these flags'}"
            )
        return None
    return load_ironic_settings(
        args.ironic_url,
        username=args.ironic_username,
        password_file=args.ironic_password_file,
        credentials_dir=args.ironic_credentials_dir,
        driver=args.ironic_driver,
        poll_delay=args.ironic_poll_delay,
        ca_file=args.ironic_ca_file,
        insecure=args.ironic_insecure,
    )


class OneLineParser(argparse.ArgumentParser):
    """A mistake on the command line is one line that says what is wrong, not the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="state-controller",
        description="Observability-first state controller for bare-metal hosts.",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    p.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="text (default): readable lines; json: one JSON object per line",
    )
    p.add_argument(
        "--log-level",
        choices=list(LEVELS),
        default=None,
        help="default: info for run, warning otherwise (the demo's table owns the screen)",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    demo = sub.add_parser("demo", help="run a simulated fleet on the embedded cluster and watch it")
    demo.add_argument("--hosts", type=int, default=50, help="fleet size (default 50)")
    demo.add_argument("--namespace", default="demo")
    demo.add_argument(
        "--faults", action="store_true", help="inject failures into some hosts and their updates"
    )
    demo.add_argument("--fault-rate", type=float, default=0.3, help="share of hosts with a fault")
    demo.add_argument(
        "--fault-kinds",
        default=",".join(ALL_FAULT_KINDS),
        help=f"comma-separated subset of: {', '.join(ALL_FAULT_KINDS)}",
    )
    demo.add_argument(
        "--no-upgrade",
        action="store_true",
        help="provision only: no Nodes, no rolling update",
    )
    demo.add_argument(
        "--max-unavailable",
        type=int,
        default=5,
        help="nodes of a pool updating at once (default 5; 1: one at a time)",
    )
    demo.add_argument(
        "--fault-attempts",
        type=int,
        default=2,
        help="attempts each fault fails before the host recovers (0: it never does)",
    )
    demo.add_argument("--seed", type=int, default=1, help="seed for faults and hardware")
    demo.add_argument("--speed", type=float, default=1.0, help="time scale (2 = twice as fast)")
    demo.add_argument("--workers", type=int, default=4)
    demo.add_argument(
        "--metrics-port", type=port_number, default=0, help="0 (default): pick a free port"
    )
    demo.add_argument(
        "--exit-when-settled",
        action="store_true",
        help="exit when every host reached its target (default: keep serving /metrics until "
        "--timeout); non-zero if one did not by --timeout",
    )
    demo.add_argument("--timeout", type=float, default=300.0, help="seconds (default 300)")
    demo.add_argument("--json", action="store_true", help="print a JSON summary at the end")
    demo.add_argument("--no-table", action="store_true", help="progress lines only")
    demo.add_argument("--store", help="persist the embedded cluster to this sqlite file")
    _trace_flag(demo)
    demo.add_argument(
        "--keep",
        action="store_true",
        help="with ironic: leave the demo's nodes in Ironic (default: delete the hosts at the end)",
    )
    _provisioner_flags(demo)

    run = sub.add_parser("run", help="run the controller against a Kubernetes cluster")
    run.add_argument("--kubeconfig", help="default: $KUBECONFIG, ~/.kube/config, or in-cluster")
    run.add_argument("--context", help="kubeconfig context")
    run.add_argument(
        "--namespace",
        action="append",
        dest="namespaces",
        help="watch this namespace (repeat, or comma-separate, for several; default all)",
    )
    run.add_argument("--metrics-bind-address", default=":8080", help="'0' disables")
    run.add_argument(
        "--metrics-secure",
        action="store_true",
        help="serve /metrics over HTTPS, only to callers the API server authenticates and "
        "authorises (TokenReview, SubjectAccessReview on the non-resource URL /metrics)",
    )
    run.add_argument(
        "--metrics-cert-dir",
        help="with --metrics-secure: a folder with tls.crt and tls.key (default: self-signed)",
    )
    run.add_argument("--health-probe-bind-address", default=":8081", help="'0' disables")
    run.add_argument("--leader-elect", action="store_true", help="reconcile only as leader")
    run.add_argument("--leader-election-namespace", default="hoststate-system")
    run.add_argument("--leader-election-id", default="hoststate-controller")
    run.add_argument("--lease-duration", type=int, default=15, help="whole seconds")
    run.add_argument("--renew-deadline", type=int, default=10, help="whole seconds")
    run.add_argument("--retry-period", type=int, default=2, help="whole seconds")
    run.add_argument("--workers", type=int, default=4)
    _simulated_timings_flag(run, "zero")
    run.add_argument(
        "--simulated-hardware",
        metavar="FILE",
        help="keep the simulated machines in this sqlite file, so a restart finds them as "
        "it left them (default: in memory, new hardware at every start)",
    )
    _trace_flag(run)
    nodes = run.add_argument_group("nodes and their updates")
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
    run.add_argument(
        "--node-pool-status-interval",
        type=_duration,
        default=1.0,
        metavar="DURATION",
        help="write a NodePool's status at most this often (default 1s)",
    )
    run.add_argument(
        "--stuck-after",
        action="append",
        default=[],
        metavar="NAME=DURATION",
        help="stuck threshold of a provisioning state or update step, e.g. draining=45m "
        "(repeat for several; 'none' never stuck)",
    )
    _provisioner_flags(run)

    boot = sub.add_parser(
        "bootstrap",
        help="provision the first hosts before the cluster exists, books kept in --state-dir",
    )
    boot.add_argument(
        "--hosts",
        metavar="FILE",
        help="YAML of Hosts and their BMC Secrets (as for kubectl apply); needed the first "
        "time, optional when carrying on with a state dir",
    )
    boot.add_argument(
        "--state-dir", required=True, metavar="DIR", help="where the books and machines are kept"
    )
    boot.add_argument(
        "--metrics-bind-address",
        default="127.0.0.1:8080",
        help="'0' disables (default %(default)s)",
    )
    boot.add_argument("--workers", type=int, default=4)
    _simulated_timings_flag(boot, "demo")
    boot.add_argument(
        "--exit-when-settled", action="store_true", help="exit once every host is at its goal"
    )
    boot.add_argument(
        "--timeout", type=float, default=None, help="give up settling after this many seconds"
    )
    boot.add_argument("--no-table", action="store_true", help="progress lines only")
    _trace_flag(boot)
    _provisioner_flags(boot)

    move = sub.add_parser(
        "pivot",
        help="move Hosts, their Secrets and HostStates into a cluster (from a bootstrap's "
        "state dir or another cluster)",
    )
    source = move.add_mutually_exclusive_group(required=True)
    source.add_argument("--state-dir", metavar="DIR", help="a bootstrap's state directory")
    source.add_argument("--from", dest="source", metavar="KUBECONFIG", help="another cluster")
    into = move.add_mutually_exclusive_group(required=True)
    into.add_argument("--kubeconfig", metavar="FILE", help="the cluster to move into")
    into.add_argument("--to", dest="target", metavar="KUBECONFIG", help="same as --kubeconfig")
    move.add_argument("--from-context", help="context of --from's kubeconfig")
    move.add_argument("--to-context", help="context of the target's kubeconfig")
    move.add_argument("-n", "--namespace", default=None, help="only this namespace's hosts")
    move.add_argument("--workers", type=int, default=8, help="hosts moved at once (default 8)")

    get = sub.add_parser("get", help="list hosts or hoststates like kubectl get")
    get.add_argument(
        "kind",
        choices=["hoststates", "hoststate", "hs", "hosts", "host", "hst", "nodepools", "np"],
    )
    get.add_argument("name", nargs="?", help="only this object")
    where = get.add_mutually_exclusive_group(required=True)
    where.add_argument("--store", help="sqlite file of an embedded cluster (demo --store)")
    where.add_argument("--state-dir", help="a bootstrap's state directory (bootstrap --state-dir)")
    where.add_argument("--kubeconfig", help="a cluster's kubeconfig ('-' for in-cluster/default)")
    get.add_argument("--context", help="kubeconfig context")
    get.add_argument("-n", "--namespace", default=None)
    get.add_argument("-o", "--output", choices=["wide", "json"], default=None)

    gen = sub.add_parser(
        "gen", help="generate files from the code that defines them (CRDs, monitoring)"
    )
    gen.add_argument(
        "what",
        choices=list(GENERATED),
        help="crds: api/v1alpha1/; prometheusrule: manifests/base/prometheusrule.yaml from "
        "manifests/prometheus/hoststate.rules.yaml; dashboards: dashboards/*.json; "
        "metrics: docs/metrics.md; all: every one",
    )
    gen.add_argument(
        "--root", default=".", help="the project's directory, where the files go (default .)"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    default = "info" if args.command == "run" else "warning"
    configure_logs(args.log_format, args.log_level or ("debug" if args.verbose else default))
    if args.command in ("demo", "run", "bootstrap"):
        try:  # --trace, else the standard variable
            args.trace = args.trace or exporter_from_env()
        except ValueError as err:
            print(err, file=sys.stderr)
            return 2
    if args.command == "demo":
        try:
            return _demo(args)
        except KeyboardInterrupt:  # Ctrl-C: the demo has stopped its controller and servers
            return 130
    if args.command == "run":
        return _run(args)
    if args.command == "bootstrap":
        return _bootstrap(args)
    if args.command == "pivot":
        return _pivot(args)
    if args.command == "get":
        return _get(args)
    return _gen(args)


def _demo(args: argparse.Namespace) -> int:
    from .demo import DemoOptions, run_demo

    kinds = tuple(k.strip() for k in args.fault_kinds.split(",") if k.strip())
    unknown = [k for k in kinds if k not in ALL_FAULT_KINDS]
    if unknown:
        known = ", ".join(ALL_FAULT_KINDS)
        print(f"--fault-kinds: unknown {', '.join(unknown)}; use some of {known}", file=sys.stderr)
        return 2
    if (
        args.hosts < 1
        or args.speed <= 0
        or not 0 <= args.fault_rate <= 1
        or args.fault_attempts < 0
        or args.max_unavailable < 1
    ):
        print(
            "--hosts must be ≥ 1, --speed > 0, --fault-rate within 0..1, --fault-attempts ≥ 0, "
            "--max-unavailable ≥ 1",
            file=sys.stderr,
        )
        return 2
    try:
        ironic = ironic_settings(args)
    except ValueError as err:
        print(str(err), file=sys.stderr)
        return 2
    if ironic is not None and args.faults:
        print(
            "--faults injects failures into simulated hardware only; with Ironic, make its "
            "nodes fail (e.g. an unreachable image) or leave --faults out",
            file=sys.stderr,
        )
        return 2
    opts = DemoOptions(
        hosts=args.hosts,
        namespace=args.namespace,
        faults=args.faults,
        fault_rate=args.fault_rate,
        fault_kinds=tuple(k for k in FAULT_KINDS if k in kinds),
        update_fault_kinds=tuple(UpdateFault(k) for k in UPDATE_FAULT_KINDS if k in kinds),
        upgrade=not args.no_upgrade,
        max_unavailable=args.max_unavailable,
        fault_attempts=args.fault_attempts,
        seed=args.seed,
        speed=args.speed,
        workers=args.workers,
        metrics_port=args.metrics_port,
        exit_when_settled=args.exit_when_settled,
        timeout=args.timeout,
        json=args.json,
        table=not args.no_table,
        store=args.store,
        trace=args.trace,
        ironic=ironic,
        keep=args.keep,
    )
    return run_demo(opts)


def _bootstrap(args: argparse.Namespace) -> int:
    from .bootstrap import BootstrapOptions, run_bootstrap

    if args.workers < 1 or (args.timeout is not None and args.timeout <= 0):
        print("--workers must be ≥ 1 and --timeout > 0", file=sys.stderr)
        return 2
    try:
        ironic = ironic_settings(args)
        return run_bootstrap(
            BootstrapOptions(
                state_dir=args.state_dir,
                hosts=args.hosts,
                ironic=ironic,
                simulated_timings=args.simulated_timings,
                workers=args.workers,
                metrics_bind_address=args.metrics_bind_address,
                exit_when_settled=args.exit_when_settled,
                timeout=args.timeout,
                table=not args.no_table,
                trace=args.trace,
            )
        )
    except ValueError as err:
        print(str(err), file=sys.stderr)
        return 2


def _pivot(args: argparse.Namespace) -> int:
    from .pivot import PivotOptions, run_pivot

    if args.workers < 1:
        print("--workers must be ≥ 1", file=sys.stderr)
        return 2
    return run_pivot(
        PivotOptions(
            target=args.kubeconfig or args.target,
            state_dir=args.state_dir,
            source=args.source,
            source_context=args.from_context,
            target_context=args.to_context,
            namespace=args.namespace,
            workers=args.workers,
        )
    )


def leader_election_problem(lease: int, renew: int, retry: int) -> str:
    """The client's LeaderElection exits its thread on these; say so before starting."""
    if retry < 1:
        return "--retry-period must be at least 1 second"
    if renew <= 1.2 * retry:
        return "--renew-deadline must be longer than 1.2 times --retry-period"
    if lease <= renew:
        return "--lease-duration must be longer than --renew-deadline"
    return ""


def _run(args: argparse.Namespace) -> int:
    from .run import RunOptions, run_controller

    namespaces = tuple(
        n.strip() for value in args.namespaces or () for n in value.split(",") if n.strip()
    )
    problem = leader_election_problem(args.lease_duration, args.renew_deadline, args.retry_period)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    try:
        ironic = ironic_settings(args)
        return run_controller(
            RunOptions(
                kubeconfig=args.kubeconfig,
                context=args.context,
                namespaces=namespaces or None,
                metrics_bind_address=args.metrics_bind_address,
                metrics_secure=args.metrics_secure,
                metrics_cert_dir=args.metrics_cert_dir,
                health_probe_bind_address=args.health_probe_bind_address,
                leader_elect=args.leader_elect,
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
                pool_status_interval=args.node_pool_status_interval,
                stuck=stuck_policy(args.stuck_after),
            )
        )
    except (ValueError, ConfigException) as err:
        print(str(err), file=sys.stderr)
        return 2


def _get(args: argparse.Namespace) -> int:
    import urllib3

    from .cluster.embedded import EmbeddedCluster
    from .cluster.interface import HOSTS, HOSTSTATES, NODEPOOLS, ApiError
    from .cluster.kube import KubeCluster, load_api_client
    from .tables import render, rows

    if args.state_dir is not None:
        from .bootstrap.state_dir import StateDir

        kept = StateDir(args.state_dir)
        args.store = str(kept.store)
        if not kept.exists:
            print(
                f"--state-dir: {args.state_dir} holds no bootstrap; start one with "
                "state-controller bootstrap --hosts FILE --state-dir DIR",
                file=sys.stderr,
            )
            return 2
    if args.store is not None and not Path(args.store).exists():
        print(
            f"--store: {args.store} does not exist; start a demo with --store first",
            file=sys.stderr,
        )
        return 2
    if args.kind in ("hosts", "host", "hst"):
        resource, columns = HOSTS, HOST_COLUMNS
    elif args.kind in ("nodepools", "np"):
        resource, columns = NODEPOOLS, NODEPOOL_COLUMNS
    else:
        resource, columns = HOSTSTATES, HOSTSTATE_COLUMNS
    cluster: EmbeddedCluster | KubeCluster
    if args.store is not None:
        cluster = EmbeddedCluster(path=args.store, read_only=True)
    else:
        kubeconfig = None if args.kubeconfig == "-" else args.kubeconfig
        try:
            cluster = KubeCluster(load_api_client(kubeconfig, args.context))
        except (ConfigException, OSError) as err:
            print(f"--kubeconfig {args.kubeconfig}: {err}", file=sys.stderr)
            return 2
    try:
        items, _ = cluster.list(resource, args.namespace)
    except (ApiError, OSError, urllib3.exceptions.HTTPError) as err:
        print(f"state-controller get: {err}", file=sys.stderr)
        return 1
    finally:
        cluster.close()
    if args.name is not None:
        items = [i for i in items if i["metadata"]["name"] == args.name]
        if not items:
            print(f'{resource.plural} "{args.name}" not found', file=sys.stderr)
            return 1
    if args.output == "json":
        print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2))
        return 0
    if not items:
        print(
            f"No resources found{f' in {args.namespace} namespace' if args.namespace else ''}.",
            file=sys.stderr,
        )
        return 0
    namespaces = args.namespace is None and resource.namespaced
    table = rows(items, columns, wide=args.output == "wide", namespaces=namespaces)
    print(render(table))
    return 0


GENERATED = ("all", "crds", "prometheusrule", "dashboards", "metrics")


def _gen(args: argparse.Namespace) -> int:
    from .api import crds
    from .monitoring import rules

    root = Path(args.root)
    written: list[Path] = []
    if args.what in ("all", "crds"):
        written += crds.write(root / "api")
    if args.what in ("all", "dashboards"):
        from .monitoring import dashboards

        written += dashboards.write(root)
    if args.what in ("all", "metrics"):
        from .monitoring import catalogue

        written += catalogue.write(root)
    if args.what in ("all", "prometheusrule"):
        try:
            written += rules.write(root)
        except (OSError, ValueError) as err:
            print(f"state-controller gen: {err}", file=sys.stderr)
            return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
