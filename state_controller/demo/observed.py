"""``state-controller demo --observe``: a fleet that baremetal-operator drives, observed.

What a baremetal-operator user would see before installing anything: a played
baremetal-operator (:mod:`..simulation.bmo_fleet`) creates BareMetalHosts on the embedded
cluster and walks them through its states, writing their status as it does, with its
own faults (a deploy that fails and is retried, an inspection that hangs, a BMC whose
health rollup turns Critical or Warning); hoststate runs in observe mode beside it, as
``run --sources baremetalhosts`` would in a cluster: it drives nothing and never writes
a BareMetalHost, and tells each host's story in its HostState, on the same live screen
as the driven demo. Then, as there, each provisioned host's Node registers (linked to its
BareMetalHost by the providerID cluster-api-provider-metal3 gives it) and rolls to a new
configuration, unless ``--no-update``. At the end it lists the hosts whose hardware is
unhealthy, as their ``HardwareHealthy`` condition says.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

from ..api.states import ProvisioningState
from ..books.stuck import StuckPolicy
from ..cluster.embedded import EmbeddedCluster
from ..cluster.interface import HOSTSTATES, Cluster
from ..cluster.schema import validators
from ..observability.endpoints import BindError, serve_metrics
from ..provisioning.backoff import Backoff
from ..provisioning.simulated import SimulatedProvisioner
from ..runtime.config import ControllerConfig
from ..runtime.machinery.leader_election import DEFAULT_LEASE
from ..screens.progress import summarize
from ..simulation.bmo_fleet import BmoTimings, PlayedFleet, choose_bmo_faults
from ..simulation.rollout import RollingUpdate
from ..wiring import observed_controller
from .options import DemoOptions
from .watch import summarize_update, watch

HARDWARE_HEALTHY = "HardwareHealthy"
NAMED = 3  # unhealthy hosts named on a progress line; the end lists every one


def run_observed_demo(
    opts: DemoOptions,
    policy_for: Callable[[float], StuckPolicy],
    rollout_for: Callable[[Cluster, ControllerConfig], RollingUpdate | None] | None = None,
    cluster: EmbeddedCluster | None = None,
) -> int:
    """Run the played fleet and the observing controller until it settled or timed out
    (``policy_for``: the demo's stuck thresholds at a speed; ``rollout_for``: the
    provisioned hosts' Nodes and their rolling update, as the driven demo has them, or
    None). ``cluster``: one to run on and leave open, for a caller to read afterwards
    (default: a new embedded cluster)."""
    policy = policy_for(opts.speed)
    given = cluster is not None
    cluster = cluster if cluster is not None else EmbeddedCluster(validators=validators())
    config = ControllerConfig(
        workers=opts.workers,
        stuck=policy,
        backoff=Backoff(base=1.0 / opts.speed, cap=8.0 / opts.speed),
        drive_hosts=False,
        observe_baremetalhosts=True,
    )
    # observe mode drives nothing: the provisioner is never asked (the wiring wants one)
    observed = observed_controller(cluster, SimulatedProvisioner(), config, trace=opts.trace)
    controller, metrics = observed.controller, observed.metrics
    metrics.leading(DEFAULT_LEASE, True)  # the demo's controller runs alone
    try:
        server = serve_metrics(metrics.registry, ("127.0.0.1", opts.metrics_port), "--metrics-port")
    except BindError as refused:
        if not given:
            cluster.close()
        print(refused, file=sys.stderr)
        return 2
    metrics_line = f"metrics: http://127.0.0.1:{server.port}/metrics"
    print(metrics_line, file=sys.stderr, flush=True)
    fleet = _fleet(cluster, opts, hold=policy.thresholds[ProvisioningState.INSPECTING] * 1.5)
    rollout = rollout_for(cluster, config) if rollout_for is not None else None
    if opts.faults:
        print(
            f"baremetal-operator faults in {len(fleet.faults)} of {opts.hosts} hosts "
            f"(seed {opts.seed})",
            file=sys.stderr,
        )
    started = time.time()
    try:
        controller.start()
        keys = fleet.create()
        fleet.start()
        settled_at = watch(
            controller, cluster, keys, opts, started, rollout, metrics_line,
            notes=lambda: health_line(cluster, opts.namespace),
        )  # fmt: skip
        summary = summarize(controller, dict.fromkeys(keys, opts.target), opts.target.value)
        if rollout is not None:
            summary["update"] = summarize_update(controller, keys)
        summary["elapsed_seconds"] = round((settled_at or time.time()) - started, 2)
        unhealthy = hardware_unhealthy(cluster, opts.namespace)
    finally:
        fleet.stop()
        controller.stop()
        observed.tracing.shutdown()
        server.stop()
        if not given:
            cluster.close()
    summary["settled"] = settled_at is not None
    summary["metrics_port"] = server.port
    summary["faults"] = {f"{opts.namespace}/{k}": str(v) for k, v in sorted(fleet.faults.items())}
    if rollout is not None:
        summary["update_faults"] = {k: str(v) for k, v in sorted(rollout.kubelets.faults.items())}
    summary["hardware_unhealthy"] = unhealthy
    summary["source"] = "BareMetalHost"
    if opts.json:
        print(json.dumps(summary, indent=2))
    else:
        for name, said in unhealthy.items():
            print(f"{name}: {HARDWARE_HEALTHY} {said}", file=sys.stderr)
        line = f"{summary['at_target']}/{summary['hosts']} BareMetalHosts {opts.target.value}"
        if "update" in summary:
            line += f", {summary['update']['updated']}/{summary['update']['nodes']} nodes updated"
        print(f"{line} in {summary['elapsed_seconds']}s", file=sys.stderr)
    if opts.exit_when_settled and settled_at is None:
        return 1
    return 0


def _fleet(cluster: Cluster, opts: DemoOptions, hold: float) -> PlayedFleet:
    names = [f"host-{i:04d}" for i in range(opts.hosts)]
    faults = {}
    if opts.faults:
        faults = choose_bmo_faults(names, opts.fault_rate, opts.bmo_fault_kinds, opts.seed)
    return PlayedFleet(
        cluster,
        opts.namespace,
        opts.hosts,
        timings=BmoTimings().faster(opts.speed),
        faults=faults,
        attempts=opts.fault_attempts,
        hold=hold,
        seed=opts.seed,
    )


def hardware_unhealthy(cluster: Cluster, namespace: str) -> dict[str, str]:
    """The hosts whose HostState says their hardware is not healthy: name → "False
    (CriticalError): message", in name order."""
    out = {}
    for item in sorted(cluster.list(HOSTSTATES, namespace)[0], key=lambda i: i["metadata"]["name"]):
        for cond in (item.get("status") or {}).get("conditions") or ():
            if cond.get("type") == HARDWARE_HEALTHY and cond.get("status") == "False":
                said = f"{cond['status']} ({cond.get('reason', '')})"
                if cond.get("message"):
                    said += f": {cond['message']}"
                out[item["metadata"]["name"]] = said
    return out


def health_line(cluster: Cluster, namespace: str) -> str:
    """The fleet's hardware health in a few words, for the progress line and the screen."""
    unhealthy = hardware_unhealthy(cluster, namespace)
    if not unhealthy:
        return "hardware healthy"
    named = [
        f"{name} {said.partition('(')[2].partition(')')[0]}" for name, said in unhealthy.items()
    ]
    more = f" and {len(named) - NAMED} more" if len(named) > NAMED else ""
    return f"hardware unhealthy: {', '.join(named[:NAMED])}{more}"
