"""``state-controller bootstrap``: provision the first hosts before their cluster exists.

The controller runs on the embedded store kept in the state directory, in bootstrap
mode (each new host's history opens with the bootstrap chapter, its HostState says
``mode: Bootstrap``, ``hoststate_controller_mode`` says so too), with a real provisioner:
Ironic, or the simulated machines kept in the same directory. It applies the hosts file,
serves ``/metrics``, and shows the HostStates as ``demo`` does until every host is at
its goal; then it keeps serving until Ctrl-C, or exits with ``--exit-when-settled``.

Killed at any moment and started again with the same directory, it carries on from the
books and the machines as they were: nothing lost, nothing redone. ``state-controller
get hoststates --state-dir DIR`` reads the books from another terminal while it runs,
and ``state-controller pivot`` moves them into the cluster once it has stopped.
"""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from ..api.hoststate import Mode
from ..api.reach import Reach
from ..api.states import ProvisioningState
from ..cluster.embedded import EmbeddedCluster
from ..cluster.interface import HOSTS
from ..cluster.schema import validators
from ..observability.endpoints import BindError, Server, parse_bind_address, serve_metrics
from ..observability.tracing import Exporter
from ..provisioning.backoff import Backoff
from ..provisioning.hardware_file import HardwareFile
from ..provisioning.ironic import IronicSettings
from ..provisioning.provisioner import Provisioner
from ..provisioning.simulated import SimulatedProvisioner, Timings
from ..runtime.config import ControllerConfig
from ..runtime.controller import HostController
from ..runtime.machinery.leader_election import DEFAULT_LEASE
from ..screens.live import Bars, cluster_frame, hoststates_settled
from ..screens.progress import provisioning_line, summarize
from ..screens.terminal import LiveScreen
from ..wiring import observed_controller
from .hostsfile import HostsFileError, apply_hosts_file, read_hosts_file
from .state_dir import StateDir, StateDirError


@dataclass
class BootstrapOptions:
    state_dir: str
    hosts: str | None = None  # the hosts file; None: carry on with the hosts already kept
    ironic: IronicSettings | None = None  # None: the simulated machines
    simulated_timings: str = "demo"  # zero | demo
    workers: int = 4
    metrics_bind_address: str = "127.0.0.1:8080"
    exit_when_settled: bool = False
    timeout: float | None = None  # seconds to settle in; None: no limit
    table: bool = True
    trace: Exporter = "none"
    reach: Reach = field(default_factory=Reach)


class BootstrapRefused(Exception):
    """Bootstrap cannot start; the message says why and what to do."""


def run_bootstrap(opts: BootstrapOptions) -> int:
    try:
        with StateDir(opts.state_dir).lock("bootstrap") as state_dir:
            return _bootstrap(opts, state_dir)
    except (BootstrapRefused, StateDirError, HostsFileError) as refused:
        print(refused, file=sys.stderr)
        return 2
    except sqlite3.Error as err:
        print(
            f"--state-dir {opts.state_dir}: cluster.db cannot be read ({err}); "
            "it is not a bootstrap's store, or it is damaged",
            file=sys.stderr,
        )
        return 2


def _bootstrap(opts: BootstrapOptions, state_dir: StateDir) -> int:
    moved = state_dir.pivoted_into()
    if moved is not None:
        raise BootstrapRefused(
            f"--state-dir {state_dir.path}: its hosts were pivoted into {moved} and are kept "
            "there now; finish the move with state-controller pivot, or bootstrap other hosts "
            "in a new directory"
        )
    hosts_file = read_hosts_file(opts.hosts) if opts.hosts else None
    for note in hosts_file.notes if hosts_file is not None else ():
        print(note, file=sys.stderr, flush=True)
    if hosts_file is None and not state_dir.exists:
        raise BootstrapRefused(
            f"--state-dir {state_dir.path} holds no bootstrap yet; pass --hosts FILE to begin"
        )
    address = parse_bind_address(opts.metrics_bind_address, "--metrics-bind-address")
    since = state_dir.started_at()
    cluster = EmbeddedCluster(path=state_dir.store, validators=validators())
    try:
        prov = _provisioner(opts, state_dir.store)
        config = ControllerConfig(
            workers=opts.workers,
            mode=Mode.BOOTSTRAP,
            backoff=Backoff(base=1.0, cap=30.0),
            reach=opts.reach,
        )
        observed = observed_controller(cluster, prov, config, trace=opts.trace, mode_since=since)
        observed.metrics.leading(DEFAULT_LEASE, True)  # it runs alone
        servers, metrics_line = _serve(observed.metrics.registry, address)
        print(metrics_line, file=sys.stderr, flush=True)
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        controller = observed.controller
        try:
            controller.start()
            if hosts_file is not None:
                done = apply_hosts_file(cluster, hosts_file)
                print(
                    f"{hosts_file.path}: {done['created']} created, {done['updated']} updated, "
                    f"{done['unchanged']} unchanged",
                    file=sys.stderr,
                    flush=True,
                )
            settled = _watch(controller, cluster, opts, stop, metrics_line)
        finally:
            controller.stop()
            observed.tracing.shutdown()
            for server in servers:
                server.stop()
    finally:
        cluster.close()
    if settled is None:
        return 0 if stop.is_set() else 1  # stopped by the user; else the timeout passed
    return 0


def _serve(
    registry: CollectorRegistry, address: tuple[str, int] | None
) -> tuple[list[Server], str]:
    """The /metrics server (none when disabled), and the line that says where it is."""
    if address is None:
        return [], "metrics: off"
    try:
        server = serve_metrics(registry, address)
    except BindError as err:
        raise BootstrapRefused(str(err)) from None
    return [server], f"metrics: http://{address[0]}:{server.port}/metrics"


def _provisioner(opts: BootstrapOptions, store: Path) -> Provisioner:
    if opts.ironic is not None:
        ironic = opts.ironic.provisioner(workers=opts.workers)
        problem = ironic.check()
        if problem:
            raise BootstrapRefused(f"--ironic-url: {problem}")
        return ironic
    timings = Timings.named(opts.simulated_timings)
    return SimulatedProvisioner(timings=timings, hardware=HardwareFile(store))


def goal_of(host: dict[str, Any]) -> ProvisioningState:
    """Where a host of the file is going: deployed, taken over as it runs, or ready."""
    spec = host.get("spec") or {}
    if spec.get("externallyProvisioned"):
        return ProvisioningState.EXTERNALLY_PROVISIONED
    if spec.get("image"):
        return ProvisioningState.PROVISIONED
    return ProvisioningState.AVAILABLE


def goals_of(cluster: EmbeddedCluster) -> dict[str, ProvisioningState]:
    """Each host of the store (namespace/name) and its own goal."""
    hosts, _ = cluster.list(HOSTS, None)
    return {f"{h['metadata']['namespace']}/{h['metadata']['name']}": goal_of(h) for h in hosts}


def _watch(
    controller: HostController,
    cluster: EmbeddedCluster,
    opts: BootstrapOptions,
    stop: threading.Event,
    metrics_line: str,
) -> float | None:
    """Show progress until every host is at its goal, then (unless told to exit) until
    stopped. When it settled; None when stopped or timed out before."""
    live = opts.table and sys.stdout.isatty() and opts.trace != "console"
    screen = LiveScreen() if live else None
    with screen or contextlib.nullcontext():
        return _follow(controller, cluster, opts, stop, metrics_line, screen)


def _follow(
    controller: HostController,
    cluster: EmbeddedCluster,
    opts: BootstrapOptions,
    stop: threading.Event,
    metrics_line: str,
    screen: LiveScreen | None,
) -> float | None:
    started = time.time()
    deadline = started + opts.timeout if opts.timeout is not None else None
    settled_at: float | None = None
    settled = ""  # the line that says so, and how to pivot
    last = 0.0
    bars = Bars()
    while not stop.wait(0.2):
        goals = goals_of(cluster)
        summary = summarize(controller, goals, "at their goal")
        now = time.time()
        done = (
            summary["hosts"] > 0
            and summary["at_target"] == summary["hosts"]
            # the HostStates, written after the books, say it too
            and (settled_at is not None or hoststates_settled(cluster, None, goals))
        )
        line = provisioning_line(summary, started)
        settling = done and settled_at is None  # the frame that shows it settled
        if screen is not None and (now - last >= 0.5 or settling):
            bars.set("at their goal", summary["at_target"], max(summary["hosts"], 1))
            footer = [settled or line, metrics_line]
            if settling:
                footer[0] = _settled_line(summary, now - started, opts.state_dir)
            screen.show(
                cluster_frame(cluster, None, screen.size, pools=False, bars=bars, footer=footer)
            )
            last = now
        elif screen is None and now - last >= (2.0 if settled_at is None else 30.0):
            print(line, file=sys.stderr, flush=True)
            last = now
        if settling:
            settled_at = now
            settled = _settled_line(summary, now - started, opts.state_dir)
            _tell(settled, screen)
            if opts.exit_when_settled:
                return settled_at
        if deadline is not None and now >= deadline and settled_at is None:
            _tell(
                f"not settled after {opts.timeout:g}s: {line}; the books are kept in "
                f"{opts.state_dir}, start again to carry on",
                screen,
            )
            return None
    return settled_at


def _tell(line: str, screen: LiveScreen | None) -> None:
    """A line for the user: now, or below the last frame once the screen closes."""
    if screen is None:
        print(line, file=sys.stderr, flush=True)
    else:
        screen.after(line)


def _settled_line(summary: dict[str, Any], seconds: float, state_dir: str) -> str:
    return (
        f"{summary['hosts']} hosts at their goal in {seconds:.1f}s; move them into the "
        f"cluster with: state-controller pivot --state-dir {state_dir} --kubeconfig FILE"
    )
