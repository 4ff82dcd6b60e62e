"""A firmware rollout at scale against a real control plane (etcd + kube-apiserver here):
that a rolling servicing keeps to its slots, and how soon and at what cost the controller
shows each step of each run.

N Hosts (simulated provisioner) are provisioned by the controller; then every Host is
asked for the same BIOS image with ``servicingPolicy: rolling``, and the controller rolls
it out ``--at-once`` machines at a time (``--servicing-max-unavailable``; Hosts without a
Node are all in the pool ``""``). Each simulated run takes ``--task`` seconds to flash and
``--reboot`` seconds to restart, then the controller reads the firmware back.

Printed, for the rollout (from the first patch to the last HostState showing
``serviced``): its wall time, the controller's writes (by verb, and its status writes and
Events) per servicing step recorded in the books, its CPU seconds; and the time from a step
on the machine to the HostState showing it (p50, p99, max), per step:

* ``updating firmware``: from the run's start on the machine (the controller's request)
  to the HostState's ``status.servicing.step`` showing it;
* ``service rebooting``: from the moment the simulated machine finishes flashing;
* ``verifying service`` or ``serviced``, whichever is shown first: from the moment the
  machine is back from its restart.

The Hosts are patched and the HostStates watched from a child process with its own
client, so the request counts and CPU seconds are the controller's own. Both processes
read ``time.monotonic`` (one clock per machine on Linux), which the simulated machines
use too.

The run exits non-zero, naming it, when an invariant breaks: a machine serviced other than
once, a HostState never shown ``serviced``, a machine not at the new version, or more runs
under way at once than ``--at-once`` (a run counts from its start on the machine until the
controller first asks it after it ended, which is when its slot may be given on).

    .venv/bin/python -m benchmarks.firmware_rollout_scale [--hosts 1000] [--at-once 50]
        [--task 1] [--reboot 1] [--workers 4]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection

from benchmarks.harness import (
    NS,
    Phase,
    all_provisioned,
    books_of,
    control_plane,
    figures,
    host_name,
    percentile,
    wait,
)
from state_controller.api.servicing import ServiceStep
from state_controller.cluster.interface import HOSTS, HOSTSTATES
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.fleet import create_fleet, host_manifest
from state_controller.wiring import observed_controller

IMAGE = {"component": "bios", "url": "http://firmware.example/bios-1.1.0.bin"}
SHOWN_END = (ServiceStep.VERIFYING.value, ServiceStep.SERVICED.value)
# the steps every run goes through, each of which its history must hold
THROUGH = tuple(
    s.value for s in (ServiceStep.UPDATING_FIRMWARE, ServiceStep.REBOOTING, ServiceStep.VERIFYING)
)


# -- the operator's side: the patches and a watch of HostStates, in a child process --------


def operator(kubeconfig: str, n: int, patchers: int, pipe: Connection) -> None:
    """Patch every Host for the image, and note when each HostState first shows each
    servicing step; answer ``{name: {step: monotonic}}`` once every one shows ``serviced``."""
    kube = KubeCluster.from_kubeconfig(kubeconfig)
    shown: dict[str, dict[str, float]] = {host_name(i): {} for i in range(n)}
    done = threading.Event()
    _, version = kube.list(HOSTSTATES, NS)
    watch = kube.watch(HOSTSTATES, NS, version)
    patched = threading.Event()
    serviced: set[str] = set()

    def see() -> None:
        for event in watch:
            if event.type == "BOOKMARK" or not patched.is_set():
                continue
            now = time.monotonic()
            name = event.object["metadata"]["name"]
            step = ((event.object.get("status") or {}).get("servicing") or {}).get("step")
            if step and name in shown:
                shown[name].setdefault(step, now)
                if step == ServiceStep.SERVICED.value and len(shown[name]) > 1:
                    serviced.add(name)
                    if len(serviced) == n:
                        done.set()
                        return

    watcher = threading.Thread(target=see, daemon=True)
    watcher.start()
    assert pipe.recv() == "patch"
    patched.set()  # every event after this is the rollout's
    began = time.monotonic()
    spec = {"spec": {"firmwareUpdates": [IMAGE], "servicingPolicy": "rolling"}}
    with ThreadPoolExecutor(patchers) as pool:
        list(pool.map(lambda i: kube.patch(HOSTS, NS, host_name(i), spec), range(n)))
    pipe.send(("patched", time.monotonic() - began))
    done.wait(timeout=1800)
    watch.stop()
    pipe.send(("shown", shown, time.monotonic()))
    kube.close()


# -- the controller's side -----------------------------------------------------------------


def concurrency(runs: list[tuple[float, float]]) -> int:
    """The most runs under way at one instant."""
    edges = sorted([(a, 1) for a, _ in runs] + [(b, -1) for _, b in runs])
    most = now = 0
    for _, change in edges:
        now += change
        most = max(most, now)
    return most


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--at-once", type=int, default=50, help="--servicing-max-unavailable")
    parser.add_argument("--task", type=float, default=1.0, help="seconds to flash the image")
    parser.add_argument("--reboot", type=float, default=1.0, help="seconds to restart")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--patchers", type=int, default=8, help="the operator's threads")
    args = parser.parse_args()
    n = args.hosts
    broken: list[str] = []
    start = time.monotonic()
    with control_plane("firmware-rollout") as plane:
        kubeconfig = str(plane.kubeconfig)
        kube = KubeCluster.from_kubeconfig(kubeconfig)
        machines = SimulatedProvisioner()  # zero latency while provisioning
        config = ControllerConfig(workers=args.workers, servicing_max_unavailable=args.at_once)
        observed = observed_controller(kube, machines, config)
        controller, registry = observed.controller, observed.metrics.registry
        ours, theirs = mp.get_context("spawn").Pipe()
        child = mp.get_context("spawn").Process(
            target=operator, args=(kubeconfig, n, args.patchers, theirs)
        )
        controller.start()
        print(
            f"firmware rollout scale run: {n} hosts, {args.at_once} at a time, flash "
            f"{args.task:g}s + restart {args.reboot:g}s each, against kube-apiserver "
            f"{plane.url}, {args.workers} workers",
            flush=True,
        )

        phase = Phase(kube, registry)
        others = KubeCluster.from_kubeconfig(kubeconfig)
        create_fleet(others, NS, n)
        wait(lambda: all_provisioned(controller, n), "provisioning")
        others.close()
        print(f"\nprovisioned: {n} hosts in {phase.told()}", flush=True)

        machines.timings = Timings(service=args.task, power=args.reboot)
        child.start()
        phase = Phase(kube, registry)
        ours.send("patch")
        _, patch_seconds = ours.recv()
        _, shown, last_shown = ours.recv()
        wait(controller.idle, "rollout settled")
        books = books_of(controller, list(range(n)))
        steps = sum(c.transitions for b in books for c in b.chapters if c.name == "servicing")
        told = phase.told()
        written = phase.written()
        rollout = last_shown - phase.began
        print(
            f"rollout: {n} hosts patched in {patch_seconds:.1f}s, the last HostState shown "
            f"serviced {rollout:.1f}s after the first patch; {told}; {steps} servicing steps "
            f"recorded ({steps / n:.1f} per host), {written / max(steps, 1):.2f} controller "
            "writes per step",
            flush=True,
        )

        labels = ("updating firmware", "service rebooting", "verifying or serviced")
        recorded = "  the machine back -> VerifyingService recorded in the book"
        polls: list[float] = []  # the controller's own lag, before any write
        to_monotonic = time.monotonic() - time.time()  # the book's records are wall-clock
        lags: dict[str, list[float]] = {label: [] for label in labels}
        ends: list[tuple[float, float]] = []  # (the run's start, its end step's lag)
        runs: list[tuple[float, float]] = []
        missing = 0  # steps a machine went through that its history lacks
        for i in range(n):
            name = host_name(i)
            firmware = machines.machine(str(host_manifest(NS, i)["spec"]["bmc"]["address"]))
            firmware_state = firmware.firmware
            run, seen = firmware_state.run, shown.get(name, {})
            if firmware_state.runs != 1 or run is None:
                broken.append(f"{name}: {firmware_state.runs} servicing runs")
                continue
            if firmware_state.versions.get("bios") != "1.1.0":
                broken.append(f"{name}: bios {firmware_state.versions.get('bios')}")
            if ServiceStep.SERVICED.value not in seen:
                broken.append(f"{name}: never shown serviced ({sorted(seen)})")
                continue
            flashed = run.started + run.task_seconds
            back = flashed + run.reboot_seconds
            runs.append((run.started, run.ended_at or back))
            these = {labels[2]: min(seen[s] for s in SHOWN_END if s in seen) - back}
            if ServiceStep.UPDATING_FIRMWARE.value in seen:
                these[labels[0]] = seen[ServiceStep.UPDATING_FIRMWARE.value] - run.started
            if ServiceStep.REBOOTING.value in seen:
                these[labels[1]] = seen[ServiceStep.REBOOTING.value] - flashed
            book = controller.books[f"{NS}/{name}"]
            went = {r.to_state for r in book.history if r.chapter == "servicing"}
            missing += len(set(THROUGH) - went)
            verified = [r.at for r in book.history if r.reason == "VerifyingService"]
            if verified:
                polls.append(verified[-1] + to_monotonic - back)
            for label, seconds in these.items():
                lags[label].append(seconds)
            ends.append((run.started, these[labels[2]]))
        most = concurrency(runs)
        if most > args.at_once:
            broken.append(f"{most} runs under way at once (at most {args.at_once} allowed)")
        print("\nfrom a step on the machine to the HostState showing it:")
        for label, seconds in lags.items():
            print(figures(f"  {label} ({len(seconds)} shown)", seconds))
        print(figures(recorded, polls))
        if ends:
            first, last = min(a for a, _ in ends), max(a for a, _ in ends)
            quarters: list[list[float]] = [[], [], [], []]
            for began, seconds in ends:
                quarters[min(3, int(4 * (began - first) / max(last - first, 1e-9)))].append(seconds)
            print("  verifying or serviced, by when the run began (quarters of the rollout):")
            for q, seconds in enumerate(quarters, start=1):
                print(figures(f"    quarter {q} ({len(seconds)} runs)", seconds))
        every = [s for seconds in lags.values() for s in seconds]
        if len(every) > 1:
            ms = sorted(s * 1000 for s in every)
            print(f"  all steps: p50 {percentile(ms, 50):.0f} ms, p99 {percentile(ms, 99):.0f} ms")
        print(f"  runs under way at once: at most {most} (allowed {args.at_once})")
        print(f"  steps the machines went through missing from their histories: {missing}")
        if missing:
            broken.append(f"{missing} steps missing from the histories")

        idle = Phase(kube, registry)
        time.sleep(5)  # nothing changes: the controller must write nothing
        print(f"idle 5 s: {idle.told()}")
        print(f"\nwhole run {time.monotonic() - start:.0f}s (with the control plane's start)")
        child.join(timeout=60)
        controller.stop()
        kube.close()
    if broken:
        print("\nINVARIANTS BROKEN:\n  " + "\n  ".join(broken[:20]), file=sys.stderr)
        raise SystemExit(1)
    print("invariants held")


if __name__ == "__main__":
    main()
