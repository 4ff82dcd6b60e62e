"""Scale run on the embedded cluster with the simulated provisioner at zero latency.

N hosts from creation to provisioned, some idle, then all deleted: the full controller
(metrics and Events) with nothing else in the way, so what it costs per transition is
its own. Prints transitions per second, CPU seconds per 1,000 transitions, peak RSS, API
writes per transition (by kind) and the writes made while idle.

    .venv/bin/python -m benchmarks.scale [--hosts 10000] [--idle 60] [--workers 4]
"""

from __future__ import annotations

import argparse
import time

from benchmarks.harness import WRITES, counted, host_name, peak_rss_mb, wait
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.fleet import create_fleet
from state_controller.wiring import observed_controller


def rate(phase: str, transitions: float, wall: float, cpu: float) -> str:
    return (
        f"{phase}: {transitions:.0f} transitions in {wall:.1f}s = {transitions / wall:,.0f}/s; "
        f"CPU {1000 * cpu / transitions:.2f}s per 1,000"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()

    cluster = EmbeddedCluster()
    observed = observed_controller(
        cluster, SimulatedProvisioner(), ControllerConfig(workers=args.workers)
    )
    controller, metrics = observed.controller, observed.metrics
    controller.start()
    n = args.hosts
    print(f"scale run: {n} hosts, {args.workers} workers, simulated provisioner at zero latency")

    # -- creation to provisioned -----------------------------------------------------------
    cpu0, wall0 = time.process_time(), time.monotonic()
    created = dict(cluster.stats)
    create_fleet(cluster, "scale", n)
    wait(
        lambda: (
            len(controller.books) == n  # a fresh dict each time: Hosts' and Nodes' books
            and controller.idle()
            and all(b.cursor.state.value == "provisioned" for b in controller.books.values())
        ),
        "provisioning",
        since=wall0,
        poll=0.05,
    )
    up_wall, up_cpu = time.monotonic() - wall0, time.process_time() - cpu0
    up_transitions = counted(metrics.hosts.transitions)
    up_writes = {k: cluster.stats[k] - created[k] for k in WRITES}
    up_writes["create"] -= 2 * n  # the fleet's Secrets and Hosts are ours, not the controller's

    # -- idle ------------------------------------------------------------------------------
    before_idle = dict(cluster.stats)
    time.sleep(args.idle)
    idle_writes = sum(cluster.stats[k] - before_idle[k] for k in WRITES)

    # -- deletion --------------------------------------------------------------------------
    cpu1, wall1 = time.process_time(), time.monotonic()
    deleted = dict(cluster.stats)
    for i in range(n):
        cluster.delete(HOSTS, "scale", host_name(i))
    wait(lambda: not controller.books and controller.idle(), "deletion", since=wall1, poll=0.05)
    down_wall, down_cpu = time.monotonic() - wall1, time.process_time() - cpu1
    down_transitions = counted(metrics.hosts.transitions) - up_transitions
    down_writes = {k: cluster.stats[k] - deleted[k] for k in WRITES}
    down_writes["delete"] -= n  # the benchmark's own deletes
    controller.stop()
    cluster.close()

    peak_mb = peak_rss_mb()
    total_t = up_transitions + down_transitions
    total_wall, total_cpu = up_wall + down_wall, up_cpu + down_cpu

    def per(writes: dict[str, int], count: float) -> str:
        total = sum(writes.values())
        kinds = ", ".join(f"{k} {v / count:.2f}" for k, v in writes.items() if v)
        return f"{total / count:.2f} ({kinds})"

    print()
    print(rate("provisioning", up_transitions, up_wall, up_cpu))
    print(f"  writes per transition: {per(up_writes, up_transitions)}")
    print(rate("deletion", down_transitions, down_wall, down_cpu))
    print(f"  writes per transition: {per(down_writes, down_transitions)}")
    print(
        f"overall: {total_t:.0f} transitions, {total_t / total_wall:,.0f}/s, "
        f"CPU {1000 * total_cpu / total_t:.2f}s per 1,000 transitions"
    )
    print(f"writes during {args.idle:.0f}s idle after settling: {idle_writes}")
    print(f"peak RSS: {peak_mb:.0f} MB")
    print(f"reconciles: {controller.workers.reconciles}")


if __name__ == "__main__":
    main()
