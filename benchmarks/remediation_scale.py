"""Remediation at scale against a real control plane (etcd + kube-apiserver on this machine):
that a pool's unhealthy budget holds when many Nodes are lost at once, and how soon the
controller power-cycles the machines it may once the budget is freed. The phases, the
kubelets' child process and the invariants checked at the end are read together, so they
are one file.

N Hosts (simulated provisioner at zero latency) are provisioned by the controller, each
with a Node linked by providerID in the worker pool, and the pool is remediated with a
20 % unhealthy budget (``--budget``: 50 of 250). Then ``--lost`` of those Nodes (100) lose
their update's reboot at once: the agent reports Working and the Node goes NotReady and
stays so. Phases:

1. provisioning and linking: the Hosts created, provisioned, their Nodes registered and
   linked;
2. held: past the rebooting step's threshold (``--reboot-allowed``, 2 s) every lost Node
   is stuck, and since more of the pool is unhealthy than the budget allows, every one of
   them must show ``Held`` (HostState ``status.remediation.action``) and no machine may be
   power-cycled;
3. the budget freed: lost Nodes come back by themselves, ``--batch`` at a time
   ``--pause`` seconds apart ("someone fixed the switch"), until exactly the budget's
   count is left down;
4. remediation: the controller must power-cycle each remaining lost machine exactly once
   (a "hard" entry in the simulated machine's reboots); the benchmark plays the machine:
   a power-cycled machine's Node comes back and its agent finishes the update.

Printed: each phase's wall time, controller writes (its own client's requests by verb,
and its status writes and Events by kind) and CPU seconds; the time from the budget
being freed (the write that brought the count of Nodes not Ready down to the budget) to
each remaining host's power-cycle, its ``PowerCycled`` record and its ``Remediated``
record (p50, p99, max); power-cycles per host; for each power-cycle, how many of the
pool's Nodes were not Ready at that instant. The count is the benchmark's own
bookkeeping, lowered *before* a Node's come-back is written, so it never exceeds the
truth while Nodes only come back: a power-cycle made while it is above the budget was
certainly decided on a count above it.

The run exits non-zero, naming them, when the invariants break: a lost host not Held,
a power-cycle while the pool was over its budget or before the budget was freed, a
remediated host power-cycled other than once, a host that came back by itself (or never
lost its reboot) power-cycled at all, or ``PowerCycled`` records that do not match the
power-cycles. The Nodes' kubelets and agent run in a child process with their own
client, so the request counts are the controller's; its CPU is this process's, which
also runs the benchmark's light bookkeeping.

    .venv/bin/python -m benchmarks.remediation_scale [--hosts 250] [--lost 100] [--budget 0.2]
        [--batch 10] [--pause 2] [--workers 4]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import queue
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from benchmarks.harness import (
    NS,
    WORKER,
    Phase,
    all_provisioned,
    books_of,
    control_plane,
    figures,
    host_name,
    wait,
)
from state_controller.api.updates import DEFAULT_STEP_THRESHOLDS, UpdateStep
from state_controller.books.records import POWER_CYCLED, REMEDIATED
from state_controller.books.stuck import StuckPolicy
from state_controller.cluster.interface import HOSTSTATES
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.remediation.policy import RemediationPolicy
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.controller import HostController
from state_controller.simulation.fleet import create_fleet, host_manifest
from state_controller.simulation.nodes import SimulatedNode
from state_controller.updates.signals import (
    OWN_CURRENT_CONFIG,
    OWN_DESIRED_CONFIG,
    OWN_UPDATE_STATE,
)
from state_controller.wiring import observed_controller

# -- the Nodes' side: kubelets and an update agent, in a child process ---------------------


def kubelets(kubeconfig: str, n: int, agents: int, pipe: Connection) -> None:
    """Plays the Nodes on orders from the pipe: ("register",), ("lose", [i]), ("back", [i]).

    A come-back is answered ("back", i, when written) as soon as it is written, from the
    thread that wrote it; the other orders with ("done", order) once all are written."""
    kube = KubeCluster.from_kubeconfig(kubeconfig)
    nodes = [
        SimulatedNode(
            kube,
            f"worker-{i}",
            labels=WORKER,
            provider_id=f"metal3://{NS}/{host_name(i)}/m-{i}",
        )
        for i in range(n)
    ]
    pool = ThreadPoolExecutor(agents)
    sending = threading.Lock()

    def send(message: tuple[Any, ...]) -> None:
        with sending:
            pipe.send(message)

    def register(node: SimulatedNode) -> None:
        node.register()
        node.annotate({OWN_DESIRED_CONFIG: "a", OWN_CURRENT_CONFIG: "a", OWN_UPDATE_STATE: "Done"})

    def lose(node: SimulatedNode) -> None:
        node.annotate({OWN_DESIRED_CONFIG: "b", OWN_UPDATE_STATE: "Working"})
        node.go_down()

    def back(index: int) -> None:
        node = nodes[index]
        node.come_back()
        send(("back", index, time.time()))
        node.annotate({OWN_CURRENT_CONFIG: "b", OWN_UPDATE_STATE: "Done"})  # the agent ends

    while True:
        order = pipe.recv()
        if order[0] == "register":
            list(pool.map(register, nodes))
        elif order[0] == "lose":
            list(pool.map(lose, [nodes[i] for i in order[1]]))
        elif order[0] == "back":
            for index in order[1]:
                pool.submit(back, index)
            continue
        elif order[0] == "stop":
            break
        send(("done", order[0]))
    pool.shutdown()
    send(("done", "stop"))
    kube.close()


class Fleet:
    """The main process's end of the pipe, and its bookkeeping of the Nodes not Ready."""

    def __init__(self, pipe: Connection) -> None:
        self.pipe = pipe
        self.sending = threading.Lock()
        self.lock = threading.Lock()
        self.down: set[int] = set()  # lowered before a come-back is written
        self.backs: dict[int, float] = {}  # index: when its come-back was written
        self.done: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            message = self.pipe.recv()
            if message[0] == "back":
                with self.lock:
                    self.backs[message[1]] = message[2]
            else:
                self.done.put(message[1])
                if message[1] == "stop":
                    return

    def order(self, *order: Any) -> None:
        with self.sending:
            self.pipe.send(order)

    def call(self, *order: Any) -> None:
        self.order(*order)
        assert self.done.get(timeout=600) == order[0]

    def lose(self, indices: list[int]) -> None:
        with self.lock:
            self.down.update(indices)
        self.call("lose", indices)

    def bring_back(self, indices: list[int]) -> int:
        """Order the come-back of ``indices``; the count of Nodes down once they are back."""
        with self.lock:
            self.down.difference_update(indices)
            left = len(self.down)
        self.order("back", indices)
        return left

    def back(self, indices: list[int]) -> bool:
        with self.lock:
            return all(i in self.backs for i in indices)


@dataclass(frozen=True)
class Cycle:
    """One power-cycle, as the machine saw it made."""

    index: int
    at: float
    down: int  # the pool's Nodes not Ready then (the benchmark's count, never above the truth)
    ready: str  # the Node's Ready status in the controller's own Node index then
    back_at: float | None  # when the Node's come-back was written, if it was


class Machines(SimulatedProvisioner):
    """The simulated provisioner, telling each power-cycle (a hard reboot) as it is made:
    the instant, the pool's count of Nodes not Ready then, and the machine's Node comes
    back (the power-cycle worked)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.index = {str(host_manifest(NS, i)["spec"]["bmc"]["address"]): i for i in range(n)}
        self.fleet: Fleet | None = None
        self.controller: HostController | None = None
        self.cycles: list[Cycle] = []
        self._cycles_lock = threading.Lock()

    def reboot(self, host: Any, *, soft: bool = False) -> Any:
        before = self.machine(host.bmc_address).reboots.count("hard")
        result = super().reboot(host, soft=soft)
        if self.machine(host.bmc_address).reboots.count("hard") > before:
            index = self.index[host.bmc_address]
            assert self.fleet is not None and self.controller is not None
            node = self.controller.node_index.node_on(f"{NS}/{host_name(index)}")
            with self.fleet.lock:
                down = len(self.fleet.down)
                back = self.fleet.backs.get(index)
            cycle = Cycle(index, time.time(), down, node.ready if node else "", back)
            with self._cycles_lock:
                self.cycles.append(cycle)
            if index in self.fleet.down:
                self.fleet.bring_back([index])
        return result

    def hard(self, index: int) -> int:
        return self.machine(str(host_manifest(NS, index)["spec"]["bmc"]["address"])).reboots.count(
            "hard"
        )


# -- the controller's side -----------------------------------------------------------------


def config(args: argparse.Namespace) -> ControllerConfig:
    steps = {**DEFAULT_STEP_THRESHOLDS, UpdateStep.REBOOTING: args.reboot_allowed}
    return ControllerConfig(
        workers=args.workers,
        stuck=StuckPolicy(step_thresholds=steps),
        remediation=RemediationPolicy(
            max_unhealthy=args.budget, first_wait=args.first_wait, max_wait=4 * args.first_wait
        ),
    )


def action_of(book: Any) -> str:
    known = book.facts.remediation if book is not None else None
    return "" if known is None else str(known.action)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=250)
    parser.add_argument("--lost", type=int, default=100)
    parser.add_argument("--budget", type=float, default=0.2, help="max_unhealthy, a share")
    parser.add_argument("--batch", type=int, default=10, help="Nodes back by themselves at once")
    parser.add_argument("--pause", type=float, default=2.0, help="seconds between batches")
    parser.add_argument("--reboot-allowed", type=float, default=2.0, help="rebooting threshold")
    parser.add_argument(
        "--first-wait",
        type=float,
        default=10.0,
        help="seconds after a power-cycle before another (a Node back within it is not "
        "power-cycled again)",
    )
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--agents", type=int, default=16, help="the kubelets' threads")
    args = parser.parse_args()
    n, lost = args.hosts, list(range(args.lost))
    allowed = RemediationPolicy(max_unhealthy=args.budget).unhealthy_allowed(n)
    if allowed >= len(lost):
        raise SystemExit(f"--lost {len(lost)} is within the budget ({allowed}): nothing is held")
    alone, remaining = lost[: len(lost) - allowed], lost[len(lost) - allowed :]
    broken: list[str] = []
    start = time.monotonic()
    with control_plane("remediation-scale") as plane:
        kubeconfig = str(plane.kubeconfig)
        kube = KubeCluster.from_kubeconfig(kubeconfig)
        machines = Machines(n)
        observed = observed_controller(kube, machines, config(args))
        controller, registry = observed.controller, observed.metrics.registry
        others = KubeCluster.from_kubeconfig(kubeconfig)  # the fleet's creator and reader
        ours, theirs = mp.get_context("spawn").Pipe()
        child = mp.get_context("spawn").Process(
            target=kubelets, args=(kubeconfig, n, args.agents, theirs)
        )
        child.start()
        fleet = Fleet(ours)
        machines.fleet, machines.controller = fleet, controller
        controller.start()
        print(
            f"remediation scale run: {n} hosts, {len(lost)} lose their reboot, budget "
            f"{args.budget:.0%} ({allowed} unhealthy allowed), against kube-apiserver "
            f"{plane.url}, {args.workers} workers",
            flush=True,
        )

        # 1. provisioned, then linked to their Nodes
        phase = Phase(kube, registry)
        create_fleet(others, NS, n)
        wait(lambda: all_provisioned(controller, n), "provisioning")
        print(f"\nprovisioned: {n} hosts in {phase.told()}", flush=True)
        phase = Phase(kube, registry)
        fleet.call("register")
        wait(
            lambda: (
                all(b.facts.node for b in books_of(controller, list(range(n))))
                and controller.idle()
            ),
            "Nodes linked",
        )
        print(f"linked: {n} Nodes registered and linked in {phase.told()}", flush=True)

        # 2. lost at once, held
        phase = Phase(kube, registry)
        lost_at = time.time()
        fleet.lose(lost)
        written = time.time() - lost_at
        last_written = time.monotonic()
        wait(
            lambda: all(action_of(b) == "Held" for b in books_of(controller, lost)),
            "every lost host Held",
            timeout=120,
        )
        held_after = time.monotonic() - last_written
        wait(controller.idle, "held settled")
        print(
            f"held: {len(lost)} Nodes lost their reboot ({written:.1f}s to write it), all "
            f"shown Held {time.time() - lost_at:.1f}s after the first write (the threshold "
            f"is {args.reboot_allowed:g}s; {held_after:.1f}s after the last); {phase.told()}",
            flush=True,
        )
        if machines.cycles:
            broken.append(f"{len(machines.cycles)} power-cycles while every lost host was held")

        # 3. Nodes back by themselves until the pool is within its budget
        phase = Phase(kube, registry)
        batches = [alone[i : i + args.batch] for i in range(0, len(alone), args.batch)]
        for k, batch in enumerate(batches):
            left = fleet.bring_back(batch)
            wait(lambda: fleet.back(batch), "a batch back", timeout=120)  # noqa: B023
            if k < len(batches) - 1:
                wait(controller.idle, "batch settled")
                time.sleep(args.pause)  # the switch's repair, not a wait for an outcome
                if machines.cycles:
                    broken.append(
                        f"{len(machines.cycles)} power-cycles with {left} Nodes still down"
                    )
        freed = max(fleet.backs[i] for i in alone)  # the write that brought the count down
        still_held = sum(action_of(b) == "Held" for b in books_of(controller, alone))
        print(
            f"budget freed: {len(alone)} Nodes back by themselves in {len(batches)} batches "
            f"{args.pause:g}s apart; {phase.told()} (with the {len(machines.cycles)} "
            f"power-cycles made meanwhile)",
            flush=True,
        )

        # 4. each remaining host power-cycled once, its Node back
        phase = Phase(kube, registry)
        wait(
            lambda: (
                all(
                    b.facts.remediation is None and REMEDIATED in [h.reason for h in b.history]
                    for b in books_of(controller, remaining)
                )
                and all(b.facts.remediation is None for b in books_of(controller, alone))
                and controller.idle()
            ),
            "remediated",
            timeout=300,
        )
        everyone_back = time.time() - freed
        print(f"remediated: {len(remaining)} hosts in {phase.told()} (from the end of phase 3)")

        # invariants and figures
        cycled_at: dict[int, float] = {}
        early = 0  # before the freeing write's answer reached the kubelet (a race, not a bug)
        already = []  # power-cycles of a Node the controller itself saw back and Ready
        for cycle in machines.cycles:
            cycled_at.setdefault(cycle.index, cycle.at)
            if cycle.down > allowed:
                broken.append(f"{host_name(cycle.index)} power-cycled with {cycle.down} down")
            early += cycle.at < freed
            if cycle.ready == "True" and cycle.back_at is not None:
                already.append(cycle)
        if already:
            told = ", ".join(
                f"{host_name(c.index)} {(c.at - (c.back_at or 0)) * 1000:.0f} ms after"
                for c in already[:8]
            )
            broken.append(
                f"{len(already)} power-cycles of a Node already back, Ready in the controller's "
                f"own Node index at that instant ({told} its come-back was written"
                f"{', …' if len(already) > 8 else ''})"
            )
        counts = {i: machines.hard(i) for i in range(n)}
        twice = [host_name(i) for i in remaining if counts[i] != 1]
        if twice:
            broken.append(f"power-cycled other than once: {twice} {[counts[i] for i in remaining]}")
        wrongly = [host_name(i) for i in range(n) if i not in remaining and counts[i]]
        if wrongly:
            broken.append(f"power-cycled though never unhealthy after the budget: {wrongly}")
        items, _ = others.list(HOSTSTATES, NS)
        records = {
            str(h["metadata"]["name"]): [
                r["reason"] for r in (h.get("status") or {}).get("history") or ()
            ]
            for h in items
        }
        mismatched = [
            host_name(i)
            for i in range(n)
            if records.get(host_name(i), []).count(POWER_CYCLED) != counts[i]
        ]
        if mismatched:
            broken.append(f"PowerCycled records unlike the power-cycles: {mismatched}")
        recorded, back = [], []
        for book in books_of(controller, remaining):
            reasons: dict[str, float] = {}
            for record in book.history:  # the first of each
                reasons.setdefault(record.reason, record.at)
            if POWER_CYCLED in reasons:
                recorded.append(reasons[POWER_CYCLED] - freed)
            if REMEDIATED in reasons:
                back.append(reasons[REMEDIATED] - freed)
        downs = [c.down for c in machines.cycles]
        print(
            f"\nbudget freed → every remaining Node back: {everyone_back:.1f}s; still Held "
            f"when freed, among those back alone: {still_held}"
        )
        print(figures("  freed → power-cycle", [cycled_at[i] - freed for i in cycled_at]))
        print(figures("  freed → PowerCycled record", recorded))
        print(figures("  freed → Remediated record", back))
        print(
            f"  power-cycles: {sum(counts.values())} on {sum(1 for c in counts.values() if c)} "
            f"hosts ({sorted(set(counts[i] for i in remaining))} each remediated, "
            f"{sum(counts[i] for i in alone)} on the {len(alone)} back alone, "
            f"{sum(counts[i] for i in range(n) if i not in lost)} on the {n - len(lost)} "
            f"never lost); Nodes down at each: {min(downs, default=0)} to {max(downs, default=0)} "
            f"(budget {allowed}); {early} made before the freeing write's answer reached "
            "its kubelet"
        )
        print(
            f"  PowerCycled records {sum(r.count(POWER_CYCLED) for r in records.values())}, "
            f"Remediated records {sum(r.count(REMEDIATED) for r in records.values())}"
        )

        idle = Phase(kube, registry)
        time.sleep(5)  # nothing changes: the controller must write nothing
        print(f"idle 5 s: {idle.told()}")
        print(f"\nwhole run {time.monotonic() - start:.0f}s (with the control plane's start)")
        fleet.call("stop")
        child.join(timeout=60)
        controller.stop()
        kube.close()
        others.close()
    if broken:
        print("\nINVARIANTS BROKEN:\n  " + "\n  ".join(broken), file=sys.stderr)
        raise SystemExit(1)
    print("invariants held")


if __name__ == "__main__":
    main()
