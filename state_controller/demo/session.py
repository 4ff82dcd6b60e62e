"""``state-controller demo``: a fleet on the embedded cluster, watched live.

Starts an in-process cluster and the controller with the simulated
provisioner (or a real Ironic the user runs), creates N Hosts (with their BMC
Secrets), and shows the HostStates live (:mod:`..screens.live`: what needs a
person first) while the fleet moves through registering → inspecting → preparing → available →
provisioning → provisioned. Then each provisioned Host's kubelet registers a
Node and a simulated update agent rolls every Node to a new configuration
(``--no-update`` skips it): the same HostStates show each node's update
step, and the NodePools count the rollout. Metrics are served on loopback
while it runs.

Against Ironic the demo leaves the server as it found it: it refuses to start
over nodes an earlier run left behind, and deletes its hosts at the end
(through the controller, so Ironic undeploys and forgets them) unless told to
keep them.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import fields, replace
from typing import TypeVar

from ..api.servicing import ServiceStep
from ..api.states import ProvisioningState
from ..api.updates import UpdateStep
from ..books.stuck import StuckPolicy
from ..cluster.embedded import EmbeddedCluster
from ..cluster.interface import Cluster
from ..cluster.schema import validators
from ..observability.endpoints import BindError, serve_metrics
from ..provisioning.backoff import Backoff
from ..provisioning.fault_plan import FaultPlan, health_faults
from ..provisioning.hardware_file import HardwareFile
from ..provisioning.ironic import IronicSettings, node_name_prefix
from ..provisioning.provisioner import CheckedBackend, Provisioner
from ..provisioning.simulated import SimulatedProvisioner, Timings
from ..remediation.policy import RemediationPolicy
from ..runtime.config import ControllerConfig
from ..runtime.machinery.leader_election import DEFAULT_LEASE
from ..screens.progress import summarize
from ..simulation.firmware_rollout import FirmwareRollout, firmware_faults
from ..simulation.fleet import create_fleet, delete_fleet, host_manifest
from ..simulation.nodes import UpdateFault
from ..simulation.rollout import (
    AgentTimings,
    Kubelets,
    RollingUpdate,
    choose_faults,
)
from ..wiring import observed_controller
from .observed import run_observed_demo
from .options import DemoOptions
from .watch import summarize_update, watch

T = TypeVar("T", Timings, AgentTimings)


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
        },
        {
            UpdateStep.PREPARING: 4.0,
            UpdateStep.CORDONING: 4.0,
            UpdateStep.DRAINING: 5.0,
            UpdateStep.APPLYING: 5.0,
            UpdateStep.RELOADING_CRIO: 4.0,
            UpdateStep.REBOOTING: 6.0,
            UpdateStep.RESUMING: 4.0,
        },
        {
            ServiceStep.APPLYING_SETTINGS: 8.0,
            ServiceStep.UPDATING_FIRMWARE: 8.0,
            ServiceStep.CONFIGURING_RAID: 8.0,
            ServiceStep.REBOOTING: 6.0,
            ServiceStep.VERIFYING: 4.0,
        },
    ).scaled(1 / speed)


def run_demo(opts: DemoOptions) -> int:
    if opts.observe:
        # the played baremetal-operator's hosts' Nodes roll as the driven demo's do
        # (without its remediation, which power-cycles through hoststate's own backend)
        def rollout(cluster: Cluster, config: ControllerConfig) -> RollingUpdate | None:
            return _rollout(cluster, opts, config, None) if opts.update else None

        return run_observed_demo(opts, demo_policy, rollout)
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
    if opts.faults and opts.fault_kinds:
        hang = max(policy.thresholds.values()) * 1.5
        plan = FaultPlan.random(
            keys,
            rate=opts.fault_rate,
            kinds=opts.fault_kinds,
            seed=opts.seed,
            hang_seconds=hang,
            times=opts.fault_attempts or None,
        )
    if opts.faults and opts.firmware_rollout:
        hang = max(policy.service_thresholds.values()) * 1.5
        for key, fault in firmware_faults(keys, opts.fault_rate, opts.seed, hang).items():
            plan.add(key, fault)
    health_every = 0.0
    if opts.faults and opts.health_faults:
        trouble = max(policy.thresholds.values()) * 2  # long enough to be seen on the screen
        recovers = bool(opts.fault_attempts)
        for key, fault in health_faults(
            keys, opts.fault_rate, opts.seed, trouble, recovers=recovers
        ).items():
            plan.add(key, fault)
        health_every = trouble / 10
    timings = faster(Timings.demo(), opts.speed)
    # with --store the machines are kept in the same file: a second run finds them as they were
    hardware = HardwareFile(opts.store) if opts.store else None
    sim = SimulatedProvisioner(
        timings=timings, faults=plan, seed=opts.seed, hardware=hardware, health_every=health_every
    )
    remedied = opts.remediation_pools is None or bool(opts.remediation_pools)
    config = ControllerConfig(
        workers=opts.workers,
        stuck=policy,
        backoff=Backoff(base=1.0 / opts.speed, cap=8.0 / opts.speed),
        reach=opts.reach,
        remediation=demo_remediation(opts.speed) if remedied else None,
        remediation_pools=opts.remediation_pools,
        servicing_max_unavailable=opts.max_unavailable,
    )
    return _run_demo_on(opts, sim, config, plan)


def demo_remediation(speed: float) -> RemediationPolicy:
    """Remediation at the demo's pace: a NotReady Node waits seconds, not minutes, and
    longer than a rebooting step takes to be flagged stuck (:func:`demo_policy`), so a
    lost reboot is shown stuck before its machine is power-cycled, as an operator would
    meet it: twice as long, so a machine whose timers all run late under load still shows
    the stuck reboot for seconds (at equal waits, which came first was a race)."""
    return RemediationPolicy(
        not_ready_after=12.0 / speed, first_wait=2.0 / speed, max_wait=8.0 / speed
    )


def faster(timings: T, speed: float) -> T:
    """Seconds-valued timings ``speed`` times faster (the demo's ``--speed``); ratios as
    they are."""
    scaled = {f.name: getattr(timings, f.name) / speed for f in fields(timings)}
    return replace(timings, **{k: v for k, v in scaled.items() if not _ratio(timings, k)})


def _ratio(timings: object, name: str) -> bool:
    return any(f.name == name and f.metadata.get("factor") for f in fields(timings))  # type: ignore[arg-type]


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
    config = ControllerConfig(
        workers=opts.workers, backoff=Backoff(base=2.0, cap=30.0), reach=opts.reach
    )
    return prov, config, FaultPlan()


def _run_demo_on(
    opts: DemoOptions, prov: Provisioner, config: ControllerConfig, plan: FaultPlan
) -> int:
    cluster = EmbeddedCluster(path=opts.store, validators=validators())
    keys = _keys(opts)
    observed = observed_controller(cluster, prov, config, trace=opts.trace)
    controller, metrics = observed.controller, observed.metrics
    metrics.leading(DEFAULT_LEASE, True)  # the demo's controller runs alone
    try:
        server = serve_metrics(metrics.registry, ("127.0.0.1", opts.metrics_port), "--metrics-port")
    except BindError as refused:
        cluster.close()
        print(refused, file=sys.stderr)
        return 2
    port = server.port
    err = sys.stderr
    metrics_line = f"metrics: http://127.0.0.1:{port}/metrics"
    print(metrics_line, file=err, flush=True)
    updating = opts.update and opts.target == ProvisioningState.PROVISIONED
    rollout = _rollout(cluster, opts, config, prov) if updating else None
    hold = max(config.stuck.service_thresholds.values(), default=10.0) * 1.5
    firmware = FirmwareRollout(cluster, keys, hold) if opts.firmware_rollout else None
    if opts.faults:
        update_faults = len(rollout.kubelets.faults) if rollout else 0
        print(
            f"faults injected into {len(plan)} of {opts.hosts} hosts, update faults into "
            f"{update_faults} (seed {opts.seed})",
            file=err,
        )
    started = time.time()
    try:
        controller.start()
        create_fleet(cluster, opts.namespace, opts.hosts)
        settled_at = watch(
            controller, cluster, keys, opts, started, rollout, metrics_line, firmware
        )
        settled = settled_at is not None
        summary = summarize(controller, dict.fromkeys(keys, opts.target), opts.target.value)
        if rollout is not None:
            summary["update"] = summarize_update(controller, keys)
            summary["update"]["heartbeats"] = rollout.kubelets.heartbeats
        if firmware is not None:
            summary["firmware"] = firmware.summary(controller.books)
        # to settle, not to clean up or to linger
        summary["elapsed_seconds"] = round((settled_at or time.time()) - started, 2)
        if opts.ironic is not None and not opts.keep:
            summary["cleaned_up"] = delete_fleet(cluster, opts.namespace, opts.timeout)
    finally:
        controller.stop()
        observed.tracing.shutdown()  # send the spans still batched
        server.stop()
        cluster.close()
    summary["settled"] = settled
    summary["metrics_port"] = port
    summary["faults"] = {k: [f.kind for f in v] for k, v in plan.hosts().items()}
    if rollout is not None:
        summary["update_faults"] = {k: str(v) for k, v in sorted(rollout.kubelets.faults.items())}
    summary["provisioner"] = prov.backend
    if opts.json:
        print(json.dumps(summary, indent=2))
    else:
        line = f"{summary['at_target']}/{summary['hosts']} hosts {opts.target.value}"
        if "update" in summary:
            line += f", {summary['update']['updated']}/{summary['update']['nodes']} nodes updated"
        print(f"{line} in {summary['elapsed_seconds']}s", file=err)
    if opts.exit_when_settled and not settled:
        return 1
    return 0


def _rollout(
    cluster: Cluster, opts: DemoOptions, config: ControllerConfig, prov: Provisioner | None
) -> RollingUpdate:
    names = [key.rpartition("/")[2] for key in _keys(opts)]
    faults: dict[str, UpdateFault] = {}
    if opts.faults:
        faults = choose_faults(names, opts.fault_rate, opts.update_fault_kinds, opts.seed)
    timings = faster(AgentTimings(), opts.speed)
    kubelets = Kubelets(cluster, opts.namespace, timings, faults, time.monotonic)
    # a fault holds its node twice the step's stuck threshold, so the demo shows it stuck
    # for seconds even when the controller's polls run late on a busy machine
    hold = max(config.stuck.step_thresholds.values(), default=10.0) * 2
    return RollingUpdate(
        kubelets,
        max_unavailable=opts.max_unavailable,
        hold=hold if opts.fault_attempts else None,
        power_cycles=_power_cycles(prov, opts.namespace),
    )


def _power_cycles(prov: Provisioner | None, namespace: str) -> Callable[[str], int] | None:
    """How often each host's simulated machine was power-cycled through its BMC (None with
    a real backend, or none driven: its machines come back by themselves or not at all)."""
    if not isinstance(prov, SimulatedProvisioner):
        return None
    addresses: dict[str, str] = {}

    def count(host: str) -> int:
        if host not in addresses:
            index = int(host.rpartition("-")[2])
            addresses[host] = str(host_manifest(namespace, index)["spec"]["bmc"]["address"])
        return prov.machine(addresses[host]).reboots.count("hard")

    return count
