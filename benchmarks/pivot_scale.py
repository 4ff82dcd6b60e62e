"""Pivot at scale: provisioned hosts from a bootstrap into one real control plane, then
from it into a second one (two etcd + kube-apiserver pairs on this machine): how long a
move takes, what it writes and how long each host stays paused.

The hosts are bootstrapped on the embedded store (the controller in bootstrap mode over
simulated machines at zero latency), as ``state-controller bootstrap`` leaves them. Each
move prints its wall time, the API writes per host (source and target), the requests
each side served by verb, and how long each host was paused (median, p99, max). The
second control plane starts bare: the move installs the CRDs and the namespace.

    .venv/bin/python -m benchmarks.pivot_scale [--hosts 1000] [--workers 8]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.harness import WRITES, control_plane, percentile, wait
from state_controller.api.hoststate import Mode
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, HOSTSTATES
from state_controller.cluster.kube import KubeCluster
from state_controller.cluster.schema import validators
from state_controller.pivot import PivotReport, pivot
from state_controller.provisioning.hardware_file import HardwareFile
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.fleet import create_fleet
from state_controller.wiring import observed_controller
from testbed.control_plane import ControlPlane
from testbed.kube import k8s_bin_dir

NS = "metal"


def quiet(line: str, done: int, total: int) -> None:
    """A pivot's lines, one per host, are not what this measures."""


def bootstrap(path: Path, hosts: int, workers: int) -> EmbeddedCluster:
    store = EmbeddedCluster(path=path, validators=validators())
    sim = SimulatedProvisioner(hardware=HardwareFile(path))
    config = ControllerConfig(workers=workers, mode=Mode.BOOTSTRAP)
    observed = observed_controller(store, sim, config)
    began = time.monotonic()
    observed.controller.start()
    create_fleet(store, NS, hosts)
    wait(
        lambda: (
            len(observed.controller.books) == hosts
            and all(
                b.cursor.state.value == "provisioned" for b in observed.controller.books.values()
            )
            and observed.controller.idle()
        ),
        "bootstrap provisioned",
        poll=0.2,
    )
    observed.controller.stop()
    print(f"bootstrap: {hosts} hosts provisioned in {time.monotonic() - began:.1f}s (embedded)")
    return store


def take_in(cluster: KubeCluster, hardware: Path, hosts: int) -> None:
    """The controller in the cluster takes the moved hosts over (status restored from the
    annotation, finalizer added, arrival recorded), as it would before they move on."""
    sim = SimulatedProvisioner(hardware=HardwareFile(hardware))
    observed = observed_controller(cluster, sim, ControllerConfig(namespaces=(NS,)))
    began = time.monotonic()
    observed.controller.start()

    def taken() -> int:
        books = list(observed.controller.books.values())  # a new mapping at every read
        return sum(
            1
            for b in books
            if b.facts.mode == Mode.CLUSTER and b.cursor.state.value == "provisioned"
        )

    wait(
        lambda: taken() == hosts and observed.controller.idle(),
        "taken in",
        poll=0.2,
        progress=lambda: f"{taken()} taken in, queue {len(observed.controller.queue)}",
    )
    observed.controller.stop()
    print(f"the cluster's controller took in {hosts} hosts in {time.monotonic() - began:.1f}s")


def show(label: str, report: PivotReport, hosts: int, sides: dict[str, dict[str, int]]) -> None:
    paused = sorted(report.paused_seconds())
    p99 = percentile(paused, 99)
    print(f"{label}: {hosts} hosts in {report.seconds:.1f}s ({hosts / report.seconds:.0f} hosts/s)")
    print(f"  writes: {report.writes} ({report.writes / hosts:.2f} per host)")
    for side, counts in sides.items():
        writes = sum(counts.get(v, 0) for v in WRITES)
        verbs = ", ".join(f"{v} {counts[v]}" for v in sorted(counts) if counts[v])
        print(f"  {side} requests: {verbs} ({writes / hosts:.2f} writes per host)")
    print(
        f"  paused per host: median {percentile(paused, 50) * 1000:.0f} ms, "
        f"p99 {p99 * 1000:.0f} ms, max {paused[-1] * 1000:.0f} ms"
    )


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in after}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args()
    n = args.hosts
    work = Path(tempfile.mkdtemp(prefix="pivot-scale-"))
    source = bootstrap(work / "cluster.db", n, 4)
    with (
        control_plane("pivot-scale", work / "first") as first_plane,
        ControlPlane(k8s_bin_dir(), work / "second") as second_plane,
    ):
        first = KubeCluster.from_kubeconfig(str(first_plane.kubeconfig))
        second = KubeCluster.from_kubeconfig(str(second_plane.kubeconfig))
        before = first.stats
        report = pivot(source, first, workers=args.workers, progress=quiet)
        show("bootstrap -> cluster", report, n, {"target": delta(first.stats, before)})
        assert len(first.list(HOSTSTATES, NS)[0]) == n and not source.list(HOSTS, None)[0]

        take_in(first, work / "cluster.db", n)
        first_before, second_before = first.stats, second.stats
        report = pivot(first, second, workers=args.workers, progress=quiet)
        show(
            "cluster -> cluster",
            report,
            n,
            {
                "source": delta(first.stats, first_before),
                "target": delta(second.stats, second_before),
            },
        )
        assert len(second.list(HOSTSTATES, NS)[0]) == n and not first.list(HOSTS, NS)[0]
        began = time.monotonic()
        again = pivot(first, second, workers=args.workers, progress=quiet)
        print(
            f"again: {again.writes} writes, {time.monotonic() - began:.1f}s (nothing left to move)"
        )
        first.close()
        second.close()
    source.close()


if __name__ == "__main__":
    main()
