"""Scale run against a real control plane (etcd + kube-apiserver on this machine).

N hosts (simulated provisioner at zero latency) from creation to provisioned, some idle,
then a controller restart over the settled fleet: what the controller asks of a real
API server per host and per transition, at rest, and to come back. Prints wall time, API
requests per host by verb, writes per transition, controller CPU seconds and peak RSS,
idle writes, and the restart's time to ready and writes. The fleet is created by a child
process with its own client, so the request counts, CPU and RSS are the controller's
own.

    .venv/bin/python -m benchmarks.kube_scale [--hosts 1000] [--idle 60] [--workers 4]
        [--timings zero|demo]

``--timings demo`` runs each state as long as the demo does (seconds, not zero), so
every transition is its own reconcile and nothing is coalesced: the floor of writes
per transition, reported with and without Events and split by what was written.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time

from benchmarks.harness import (
    NS,
    WRITES,
    all_provisioned,
    control_plane,
    counted,
    peak_rss_mb,
    wait,
)
from state_controller.cluster.kube import KubeCluster
from state_controller.observability.metrics import Metrics
from state_controller.provisioning.simulated import TIMINGS, SimulatedProvisioner, Timings
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.controller import HostController
from state_controller.simulation.fleet import create_fleet
from state_controller.wiring import observed_controller


def controller_for(
    kubeconfig: str, workers: int, sim: SimulatedProvisioner
) -> tuple[HostController, KubeCluster, Metrics]:
    kube = KubeCluster.from_kubeconfig(kubeconfig)
    observed = observed_controller(kube, sim, ControllerConfig(workers=workers, namespaces=(NS,)))
    return observed.controller, kube, observed.metrics


def counted_by(counter: object, written: str) -> dict[frozenset[tuple[str, str]], float]:
    """A counter's ``_total`` samples whose ``outcome`` is not ``unchanged``, by labels."""
    out: dict[frozenset[tuple[str, str]], float] = {}
    for family in counter.collect():  # type: ignore[attr-defined]
        for s in family.samples:
            if s.name.endswith("_total") and s.labels.get(written) != "unchanged" and s.value:
                key = frozenset((k, v) for k, v in s.labels.items() if k != written)
                out[key] = out.get(key, 0.0) + s.value
    return out


def create(kubeconfig: str, n: int) -> None:
    """The fleet's Hosts and Secrets, written from a process of their own."""
    fleet = KubeCluster.from_kubeconfig(kubeconfig)
    create_fleet(fleet, NS, n)
    fleet.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--timings", choices=TIMINGS, default="zero")
    args = parser.parse_args()
    n = args.hosts
    with control_plane("kube-scale") as plane:
        kubeconfig = str(plane.kubeconfig)
        sim = SimulatedProvisioner(timings=Timings.named(args.timings))
        controller, kube, metrics = controller_for(kubeconfig, args.workers, sim)
        controller.start()
        print(
            f"kube scale run: {n} hosts against kube-apiserver {plane.url}, {args.workers} workers"
        )

        cpu0, wall0 = time.process_time(), time.monotonic()
        creator = mp.get_context("spawn").Process(target=create, args=(kubeconfig, n))
        creator.start()
        creator.join()
        created = time.monotonic() - wall0
        wait(lambda: all_provisioned(controller, n), "provisioning", since=wall0)
        wall, cpu = time.monotonic() - wall0, time.process_time() - cpu0
        count = counted(metrics.hosts.transitions)
        stats = kube.stats
        writes = sum(stats[k] for k in WRITES)
        print(f"\n{n} hosts provisioned in {wall:.1f}s (creating them took {created:.1f}s)")
        per_host = ", ".join(f"{k} {v / n:.2f}" for k, v in stats.items() if v)
        print(f"  API requests per host by verb: {per_host}")
        print(
            f"  writes per transition: {writes / count:.2f} "
            f"({writes} writes, {count:.0f} transitions)"
        )
        told = counted(metrics.hosts.events)
        statuses = {
            dict(labels)["resource"]: value
            for labels, value in counted_by(metrics.hosts.status_writes, "outcome").items()
        }
        print(
            f"  without Events: {(writes - told) / count:.2f} ({told:.0f} Events); per host: "
            + ", ".join(f"{r} status {v / n:.2f}" for r, v in sorted(statuses.items()))
        )
        print(f"  CPU {cpu:.1f}s, peak RSS {peak_rss_mb():.0f} MB")

        before = kube.stats
        time.sleep(args.idle)
        idle = sum(kube.stats[k] - before[k] for k in WRITES)
        print(f"writes during {args.idle:.0f}s idle: {idle}")
        controller.stop()
        kube.close()

        restarted, kube2, _ = controller_for(kubeconfig, args.workers, sim)
        wall1 = time.monotonic()
        restarted.start()
        synced = time.monotonic() - wall1
        wait(
            lambda: restarted.workers.reconciles >= n and all_provisioned(restarted, n),
            "restart",
            since=wall1,
        )
        ready = time.monotonic() - wall1
        restart_writes = {k: kube2.stats[k] for k in WRITES if kube2.stats[k]}
        print(
            f"restart: caches synced in {synced:.1f}s, all {n} books rebuilt and reconciled "
            f"in {ready:.1f}s, writes {sum(restart_writes.values())} {restart_writes}"
        )
        restarted.stop()
        kube2.close()


if __name__ == "__main__":
    main()
