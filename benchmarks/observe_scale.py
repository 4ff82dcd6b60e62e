"""Observed metal3 BareMetalHosts at scale, against a real control plane: how soon and at
what cost the controller tells what another controller does.

N BareMetalHosts (baremetal-operator's own CRD) are walked through a whole life by a
BMO-like writer in a child process (its own client, so the figures are the
controller's): registering, inspecting, available, provisioning, provisioned, each a
status write with operationHistory, ``--step-delay`` apart for each host. The
controller observes them (``--sources=baremetalhosts``). Printed:

- the delay from each status write to the HostState showing that state (p50, p99), as a
  separate watch of HostStates in this process sees it;
- controller writes per observed transition (creates, status writes), Events apart;
- controller CPU and peak RSS (this process also holds that watch);
- controller writes while BMO is idle (target 0), and after a restart (target 0).

    .venv/bin/python -m benchmarks.observe_scale [--hosts 1000] [--step-delay 2] [--idle 30]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from benchmarks.harness import control_plane, counted, figures, peak_rss_mb, wait, writes
from state_controller.cluster.interface import EVENTS, HOSTSTATES
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.controller import HostController
from state_controller.runtime.machinery.informer import Informer
from state_controller.simulation.baremetal_operator import PlayedBMO
from state_controller.wiring import observed_controller

NS = "metal"
LIFE = (
    ("registering", ("register",), ()),
    ("inspecting", ("inspect",), ("register",)),
    ("available", (), ("inspect",)),
    ("provisioning", ("provision",), ()),
    ("provisioned", (), ("provision",)),
)


def bmo(kubeconfig: str, n: int, step_delay: float, writers: int, pipe: Connection) -> None:
    """The BMO-like writer: create the hosts, then walk each through its life; send back
    when each state was written, by host."""
    kube = KubeCluster.from_kubeconfig(kubeconfig)
    pool = ThreadPoolExecutor(writers)
    hosts = list(pool.map(lambda i: PlayedBMO(kube, NS, f"bmh-{i:04d}"), range(n)))
    written: dict[tuple[str, str], float] = {}
    lock = threading.Lock()
    began = time.monotonic()

    def walk(index: int) -> None:
        host = hosts[index]
        name = host.obj["metadata"]["name"]
        time.sleep(step_delay * index / n)  # spread the hosts over one step
        for state, started, ended in LIFE:
            host.show(state, started=started, ended=ended, poweredOn=state.startswith("prov"))
            with lock:
                written[(name, state)] = time.time()
            time.sleep(step_delay)

    list(pool.map(walk, range(n)))
    pipe.send((written, time.monotonic() - began))
    pool.shutdown()
    kube.close()


def controller_for(kubeconfig: str, workers: int) -> tuple[HostController, KubeCluster, Any]:
    kube = KubeCluster.from_kubeconfig(kubeconfig)
    config = ControllerConfig(
        workers=workers,
        namespaces=(NS,),
        drive_hosts=False,
        observe_baremetalhosts=True,
        follow_nodes=False,
    )
    observed = observed_controller(kube, SimulatedProvisioner(), config)
    return observed.controller, kube, observed.metrics


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--step-delay", type=float, default=2.0)
    parser.add_argument("--writers", type=int, default=32, help="BMO's writing threads")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--idle", type=float, default=30.0)
    args = parser.parse_args()
    n = args.hosts
    with control_plane("observe-scale") as plane:
        kubeconfig = str(plane.kubeconfig)
        controller, kube, metrics = controller_for(kubeconfig, args.workers)
        seen: dict[tuple[str, str], float] = {}

        def shown(key: str, state: Any) -> None:
            current = ((state or {}).get("status") or {}).get("provisioning", {}).get("state")
            name = key.partition("/")[2]
            if current and (name, current) not in seen:
                seen[(name, current)] = time.time()

        watcher_client = KubeCluster.from_kubeconfig(kubeconfig)
        watcher = Informer(watcher_client, HOSTSTATES, NS, handlers=[shown])
        watcher.start()
        controller.start()
        print(f"observe scale run: {n} BareMetalHosts against kube-apiserver {plane.url}")
        cpu0, w0 = time.process_time(), writes(kube)
        ours, theirs = mp.get_context("spawn").Pipe()
        child = mp.get_context("spawn").Process(
            target=bmo, args=(kubeconfig, n, args.step_delay, args.writers, theirs)
        )
        child.start()
        written, walked = ours.recv()
        child.join(timeout=60)
        wait(lambda: sum(1 for (_, s) in seen if s == "provisioned") == n, "all shown", poll=0.2)
        wait(controller.idle, "settled", poll=0.2)
        cpu = time.process_time() - cpu0
        by_verb = {k: v for k, v in kube.stats.items() if v}
        total = writes(kube) - w0
        events = sum(1 for _ in kube.list(EVENTS, NS)[0])
        transitions = counted(metrics.hosts.transitions)
        delays = [seen[k] - at for k, at in written.items() if k in seen]
        missed = sum(1 for k in written if k not in seen)
        print(
            f"\n{n} hosts walked through {len(LIFE)} states in {walked:.0f}s "
            f"({len(written)} BMO status writes)"
        )
        print(
            figures("  BMH status write -> HostState shows it:", delays)
            + f" ({len(delays)} seen, {missed} passed between two looks: one marked jump each)"
        )
        births = 2 * n  # each HostState's create and its first status (phase Pending)
        print(
            f"  controller writes {total}: {by_verb}; {events} Events; "
            f"{transitions:.0f} transitions recorded: "
            f"{(total - events) / transitions:.2f} writes per transition, Events apart; "
            f"{(total - events - births) / transitions:.2f} after each HostState's birth"
        )
        print(f"  controller CPU {cpu:.1f}s, peak RSS {peak_rss_mb():.0f} MB")

        before = writes(kube)
        time.sleep(args.idle)
        print(f"writes during {args.idle:.0f}s with BMO idle: {writes(kube) - before}")
        controller.stop()
        kube.close()

        restarted, kube2, _ = controller_for(kubeconfig, args.workers)
        began = time.monotonic()
        restarted.start()
        wait(lambda: len(restarted.books) == n and restarted.idle(), "restart", poll=0.2)
        print(
            f"restart: {n} books rebuilt and reconciled in {time.monotonic() - began:.1f}s, "
            f"writes {writes(kube2)}"
        )
        restarted.stop()
        kube2.close()
        watcher.stop()
        watcher_client.close()


if __name__ == "__main__":
    main()
