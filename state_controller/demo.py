"""``state-controller demo``: a fleet on the embedded cluster, watched live.

Starts an in-process cluster and the controller with the simulated
provisioner (or a real Ironic the user runs), creates N Hosts (with their BMC
Secrets), and shows the HostStates as ``kubectl get hoststates`` would while
the fleet moves through registering → inspecting → preparing → available →
provisioning → provisioned. Metrics are served on loopback while it runs.

Against Ironic the demo leaves the server as it found it: it refuses to start
over nodes an earlier run left behind, and deletes its hosts at the end
(through the controller, so Ironic undeploys and forgets them) unless told to
keep them.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import start_http_server

from .api import API_VERSION
from .api.columns import HOSTSTATE_COLUMNS
from .api.states import OperationalStatus, ProvisioningState
from .books.stuck import StuckPolicy
from .cluster.embedded import EmbeddedCluster
from .cluster.interface import HOSTS, HOSTSTATES, SECRETS, Cluster
from .cluster.schema import validators
from .observability.tracing import Exporter
from .provisioning.backoff import Backoff
from .provisioning.fault_plan import FAULT_KINDS, FaultKind, FaultPlan
from .provisioning.ironic import IronicSettings, node_name_prefix
from .provisioning.provisioner import CheckedBackend, Provisioner
from .provisioning.simulated import SimulatedProvisioner, Timings
from .runtime.config import ControllerConfig
from .runtime.controller import HostController
from .tables import render, rows
from .wiring import observed_controller

IMAGE = {
    "url": "http://images.demo.example/os/rhcos-4.16.qcow2",
    "checksum": "http://images.demo.example/os/rhcos-4.16.qcow2.sha256sum",
    "checksumType": "sha256",
    "diskFormat": "qcow2",
}


@dataclass
class DemoOptions:
    hosts: int = 50
    namespace: str = "demo"
    faults: bool = False
    fault_rate: float = 0.3
    fault_kinds: tuple[FaultKind, ...] = FAULT_KINDS
    fault_attempts: int = 2  # 0: the fault never clears
    seed: int = 1
    speed: float = 1.0  # 2.0: twice as fast
    workers: int = 4
    metrics_port: int = 0
    exit_when_settled: bool = False
    timeout: float = 120.0
    json: bool = False
    table: bool = True
    store: str | None = None
    trace: Exporter = "none"
    target: ProvisioningState = ProvisioningState.PROVISIONED
    ironic: IronicSettings | None = None  # None: the simulated provisioner
    keep: bool = False  # with ironic: leave the hosts (and their nodes) at the end
    extra: dict[str, Any] = field(default_factory=dict)


def host_manifest(namespace: str, index: int, *, image: bool = True) -> dict[str, Any]:
    name = f"host-{index:04d}"
    spec: dict[str, Any] = {
        "bmc": {
            "address": f"redfish://bmc-{index:04d}.demo.example/redfish/v1/Systems/1",
            "credentialsName": f"{name}-bmc",
        },
        "bootMACAddress": "52:54:00:" + ":".join(f"{b:02x}" for b in index.to_bytes(3, "big")),
        "online": True,
    }
    if image:
        spec["image"] = dict(IMAGE)
    return {
        "apiVersion": API_VERSION,
        "kind": "Host",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def secret_manifest(namespace: str, name: str, username: str, password: str) -> dict[str, Any]:
    def b64(v: str) -> str:
        return base64.b64encode(v.encode()).decode()

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "data": {"username": b64(username), "password": b64(password)},
    }


def create_fleet(cluster: Cluster, namespace: str, count: int, *, image: bool = True) -> list[str]:
    keys = []
    for index in range(count):
        host = host_manifest(namespace, index, image=image)
        name = host["metadata"]["name"]
        cluster.create(SECRETS, secret_manifest(namespace, f"{name}-bmc", "admin", f"pw-{index}"))
        cluster.create(HOSTS, host)
        keys.append(f"{namespace}/{name}")
    return keys


def demo_policy(speed: float) -> StuckPolicy:
    """Thresholds scaled to the demo's timings, so a hanging step is flagged in seconds."""
    return StuckPolicy(
        {
            ProvisioningState.REGISTERING: 10.0,
            ProvisioningState.INSPECTING: 8.0,
            ProvisioningState.PREPARING: 8.0,
            ProvisioningState.PROVISIONING: 10.0,
            ProvisioningState.DEPROVISIONING: 10.0,
            ProvisioningState.POWERING_OFF_BEFORE_DELETE: 8.0,
            ProvisioningState.DELETING: 8.0,
        }
    ).scaled(1 / speed)


def summarize(
    controller: HostController, keys: list[str], target: ProvisioningState
) -> dict[str, Any]:
    books = controller.books
    by_state: Counter[str] = Counter()
    not_at_target = []
    errors = 0
    stuck_now = 0
    for key in keys:
        book = books.get(key)
        state = book.cursor.state.value if book else ""
        by_state[state or "(new)"] += 1
        if (
            book is None
            or book.cursor.state != target
            or book.cursor.operational_status != OperationalStatus.OK
        ):
            not_at_target.append(key)
        if book is not None:
            errors += book.cursor.error_count
            stuck_now += controller.config.stuck.is_stuck(book.cursor, time.time())
    return {
        "hosts": len(keys),
        "target": target.value,
        "at_target": len(keys) - len(not_at_target),
        "by_state": dict(sorted(by_state.items())),
        "errors_in_a_row": errors,
        "stuck_now": stuck_now,
        "not_at_target": not_at_target,
    }


def run_demo(opts: DemoOptions) -> int:
    if opts.ironic is not None:
        try:
            backend = _ironic_backend(opts.ironic, opts)
        except DemoRefused as refused:
            print(str(refused), file=sys.stderr)
            return 2
        return _run_demo_on(opts, *backend)
    policy = demo_policy(opts.speed)
    keys = _keys(opts)
    plan = FaultPlan()
    if opts.faults:
        hang = max(policy.thresholds.values()) * 1.5
        plan = FaultPlan.random(
            keys,
            rate=opts.fault_rate,
            kinds=opts.fault_kinds,
            seed=opts.seed,
            hang_seconds=hang,
            times=opts.fault_attempts or None,
        )
    timings = Timings.demo()
    timings = Timings(**{k: v / opts.speed for k, v in vars(timings).items()})
    sim = SimulatedProvisioner(timings=timings, faults=plan, seed=opts.seed)
    config = ControllerConfig(
        workers=opts.workers,
        stuck=policy,
        backoff=Backoff(base=1.0 / opts.speed, cap=8.0 / opts.speed),
    )
    return _run_demo_on(opts, sim, config, plan)


def _keys(opts: DemoOptions) -> list[str]:
    return [f"{opts.namespace}/host-{i:04d}" for i in range(opts.hosts)]


class DemoRefused(Exception):
    """The demo cannot start: the message says why and what to do."""


def _ironic_backend(
    settings: IronicSettings, opts: DemoOptions
) -> tuple[Provisioner, ControllerConfig, FaultPlan]:
    """The Ironic provisioner, once Ironic answered and holds none of this demo's nodes.

    Real steps take real time: the stuck thresholds and backoff are the controller's
    defaults (minutes), not the simulated demo's seconds.
    """
    prov: CheckedBackend = settings.provisioner(workers=opts.workers)
    problem = prov.check()
    if problem:
        raise DemoRefused(f"--ironic-url: {problem}")
    prefix = node_name_prefix(opts.namespace)
    try:
        left = [name for name in prov.node_names() if name.startswith(prefix)]
    except RuntimeError as error:
        raise DemoRefused(f"--ironic-url: {error}") from None
    if left:
        raise DemoRefused(
            f"Ironic at {settings.url} already has {len(left)} node(s) named {prefix}* "
            f"(e.g. {left[0]}), left by an earlier demo; delete them in Ironic or pick "
            "another --namespace"
        )
    config = ControllerConfig(workers=opts.workers, backoff=Backoff(base=2.0, cap=30.0))
    return prov, config, FaultPlan()


def _run_demo_on(
    opts: DemoOptions, prov: Provisioner, config: ControllerConfig, plan: FaultPlan
) -> int:
    cluster = EmbeddedCluster(path=opts.store, validators=validators())
    keys = _keys(opts)
    observed = observed_controller(cluster, prov, config, trace=opts.trace)
    controller, metrics = observed.controller, observed.metrics
    server, server_thread = start_http_server(
        opts.metrics_port, addr="127.0.0.1", registry=metrics.registry
    )
    port = server.server_address[1]
    err = sys.stderr
    print(f"metrics: http://127.0.0.1:{port}/metrics", file=err, flush=True)
    if opts.faults:
        print(
            f"faults injected into {len(plan)} of {opts.hosts} hosts (seed {opts.seed})", file=err
        )
    started = time.time()
    try:
        controller.start()
        create_fleet(cluster, opts.namespace, opts.hosts)
        settled = _watch(controller, cluster, keys, opts, started)
        summary = summarize(controller, keys, opts.target)
        summary["elapsed_seconds"] = round(time.time() - started, 2)  # to settle, not to clean
        if opts.ironic is not None and not opts.keep:
            summary["cleaned_up"] = _delete_fleet(cluster, opts.namespace, opts.timeout)
    finally:
        controller.stop()
        server.shutdown()
        server_thread.join(timeout=5)
        cluster.close()
    summary["settled"] = settled
    summary["metrics_port"] = port
    summary["faults"] = {k: [f.kind for f in v] for k, v in plan.hosts().items()}
    summary["provisioner"] = prov.backend
    if opts.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"{summary['at_target']}/{summary['hosts']} hosts {opts.target.value} "
            f"in {summary['elapsed_seconds']}s",
            file=err,
        )
    if opts.exit_when_settled and not settled:
        return 1
    return 0


def _delete_fleet(cluster: Cluster, namespace: str, timeout: float) -> bool:
    """Delete the demo's hosts and wait until the controller let them go (True)."""
    hosts, _ = cluster.list(HOSTS, namespace)
    print(f"deleting {_hosts(len(hosts))} (their Ironic nodes go with them)", file=sys.stderr)
    began = time.monotonic()
    for host in hosts:
        cluster.delete(HOSTS, namespace, host["metadata"]["name"])
    deadline = time.monotonic() + timeout
    last = 0.0
    while True:
        left = len(cluster.list(HOSTS, namespace)[0])
        if left == 0:
            print(f"deleted in {time.monotonic() - began:.1f}s", file=sys.stderr)
            return True
        if time.monotonic() >= deadline:
            print(f"{_hosts(left)} still being deleted after {timeout:g}s", file=sys.stderr)
            return False
        if time.monotonic() - last >= 2:
            print(f"  {_hosts(left)} left", file=sys.stderr, flush=True)
            last = time.monotonic()
        time.sleep(0.25)


def _hosts(n: int) -> str:
    return f"{n} host" if n == 1 else f"{n} hosts"


def _table(cluster: Cluster, namespace: str) -> str:
    items, _ = cluster.list(HOSTSTATES, namespace)
    return render(rows(items, HOSTSTATE_COLUMNS))


def _watch(
    controller: HostController,
    cluster: Cluster,
    keys: list[str],
    opts: DemoOptions,
    started: float,
) -> bool:
    """Show progress until every host is at its target (True) or the timeout (False)."""
    deadline = started + opts.timeout
    live = opts.table and sys.stdout.isatty() and not opts.json
    stop = threading.Event()
    last_line = 0.0
    while not stop.wait(0.25):
        summary = summarize(controller, keys, opts.target)
        done = summary["at_target"] == len(keys)
        if live:
            sys.stdout.write("\x1b[H\x1b[2J" + _table(cluster, opts.namespace) + "\n")
            sys.stdout.write(_progress(summary, started) + "\n")
            sys.stdout.flush()
        elif time.time() - last_line >= 2 or done:
            print(_progress(summary, started), file=sys.stderr, flush=True)
            last_line = time.time()
        if done:
            if opts.table and not opts.json and not live:
                print(_table(cluster, opts.namespace))
            return True
        if time.time() >= deadline:
            if opts.table and not opts.json:
                print(_table(cluster, opts.namespace))
            return False
    return False


def _progress(summary: dict[str, Any], started: float) -> str:
    states = ", ".join(f"{k}={v}" for k, v in summary["by_state"].items())
    return (
        f"[{time.time() - started:5.1f}s] {summary['at_target']}/{summary['hosts']} "
        f"{summary['target']} | {states} | errors {summary['errors_in_a_row']} | "
        f"stuck {summary['stuck_now']}"
    )
