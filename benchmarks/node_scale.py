"""Nodes at scale against a real control plane (etcd + kube-apiserver on this machine):
what following N Nodes costs the controller at rest, through a rolling update and with
every Node cordoned at once.

Four phases over N Nodes (node-only HostStates, reported through the
``hoststate.io/`` annotations):

1. registration: N kubelets register their Nodes;
2. heartbeats: every kubelet posts its status every 10 s for M minutes and
   nothing else changes — the controller's API writes (target 0), reconciles
   and CPU seconds per minute;
3. a rolling update of all N, zero delay between steps (target → working →
   cordon → reboot down → back → uncordon → done; 16 nodes at a time;
   ``--step-delay`` paces them so that every step is seen): the
   controller's writes per recorded step transition (target ≤ 1.2) and the
   time from each node's last step to its HostState showing it (p50, p99);
4. a fleet-wide cordon of all N at once, with ``--pods-per-node`` pods on each: the
   first 16 get a pod watch each, the rest share one watch of every scheduled pod —
   the time until every node's pods are listed, the threads and memory they hold,
   the CPU they cost while idle — then the uncordon that closes them.

The kubelets and the agent run in a child process with their own client, so
the request counts and CPU measured here are the controller's own.

    .venv/bin/python -m benchmarks.node_scale [--nodes 1000] [--minutes 5] [--agents 16]
        [--pods-per-node 3]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from benchmarks.harness import WORKER, WRITES, by_kind, control_plane, percentile, wait, writes
from state_controller.cluster.interface import (
    HOSTSTATES,
    NODEPOOLS,
    AlreadyExists,
    NotFound,
    Resource,
)
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.controller import HostController
from state_controller.runtime.nodes.cordoned_pods import PER_NODE_WATCHES
from state_controller.simulation.nodes import SimulatedNode
from state_controller.wiring import observed_controller

NODE_STATES = "hoststate-system"
OLD, NEW = "rendered-worker-1", "rendered-worker-2"
APPS = "apps"  # the namespace of the pods on the nodes
NAMESPACES = Resource("", "v1", "Namespace", "namespaces", namespaced=False, has_status=False)
SERVICE_ACCOUNTS = Resource("", "v1", "ServiceAccount", "serviceaccounts", has_status=False)


# -- the fleet's side: kubelets and an update agent, in a child process ----------------------


def fleet(
    kubeconfig: str,
    n: int,
    minutes: float,
    agents: int,
    step_delay: float,
    pods: int,
    pipe: Connection,
) -> None:
    kube = KubeCluster.from_kubeconfig(kubeconfig)
    nodes = [SimulatedNode(kube, f"node-{i:04d}", labels=WORKER) for i in range(n)]
    pool = ThreadPoolExecutor(agents)

    def register(node: SimulatedNode) -> None:
        node.register()
        node.annotate({"hoststate.io/current-config": OLD})

    list(pool.map(register, nodes))
    pipe.send(("registered", None))

    assert pipe.recv() == "heartbeats"
    pipe.send(("heartbeats", heartbeats(nodes, 10.0, minutes * 60, agents)))

    assert pipe.recv() == "rollout"
    pipe.send(("rollout", rollout(kube, nodes, pool, step_delay)))

    assert pipe.recv() == "cordon"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": APPS}}
    with contextlib.suppress(AlreadyExists):
        kube.create(NAMESPACES, namespace)
    account = {"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "default", "namespace": APPS}}  # fmt: skip
    with contextlib.suppress(AlreadyExists):
        kube.create(SERVICE_ACCOUNTS, account)
    list(pool.map(lambda node: [node.run_pod(APPS, f"{node.name}-{j}") for j in range(pods)],
                  nodes))  # fmt: skip
    began = time.monotonic()
    list(pool.map(lambda node: node.cordon(), nodes))
    pipe.send(("cordoned", time.monotonic() - began))
    assert pipe.recv() == "uncordon"
    list(pool.map(lambda node: node.cordon(False), nodes))
    pipe.send(("uncordoned", None))
    pool.shutdown()
    kube.close()


def heartbeats(nodes: list[SimulatedNode], period: float, seconds: float, threads: int) -> Any:
    """Each node posts its status every ``period`` seconds, spread evenly over it."""
    began = time.monotonic()
    sent = [0] * threads
    late = [0.0] * threads

    def beat(slot: int) -> None:
        mine = nodes[slot::threads]
        k = 0
        while True:
            node = mine[k % len(mine)]
            due = began + (k // len(mine)) * period + (k % len(mine)) * period / len(mine)
            due += slot * period / len(nodes)
            if due >= began + seconds:
                return
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)  # pacing the load, not waiting for an outcome
            else:
                late[slot] = max(late[slot], -wait)
            node.heartbeat()
            sent[slot] += 1
            k += 1

    workers = [threading.Thread(target=beat, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return {"sent": sum(sent), "seconds": time.monotonic() - began, "late": max(late)}


def rollout(
    kube: KubeCluster, nodes: list[SimulatedNode], pool: ThreadPoolExecutor, step_delay: float
) -> Any:
    """Every node through a whole update with no pause between steps; for each, the time
    from its last step to the HostState showing it updated at the new configuration."""
    last_step: dict[str, float] = {}
    shown: dict[str, float] = {}
    _, version = kube.list(HOSTSTATES, NODE_STATES)
    watch = kube.watch(HOSTSTATES, NODE_STATES, version)

    def see() -> None:
        for event in watch:
            if event.type == "BOOKMARK":
                continue
            update = (event.object.get("status") or {}).get("update") or {}
            name = event.object["metadata"]["name"]
            if update.get("step") == "updated" and update.get("currentConfig") == NEW:
                shown.setdefault(name, time.monotonic())
                if len(shown) == len(nodes):
                    return

    watcher = threading.Thread(target=see, daemon=True)
    watcher.start()

    def update(node: SimulatedNode) -> None:
        steps: list[Callable[[], object]] = [
            lambda: node.annotate({"hoststate.io/desired-config": NEW}),
            lambda: node.annotate({"hoststate.io/update-state": "Working"}),
            node.cordon,
            node.go_down,
            lambda: node.come_back(kubelet_version="v1.36.3"),
            lambda: node.cordon(False),
        ]
        for step in steps:
            step()
            if step_delay:
                time.sleep(step_delay)  # the agent's pace, not a wait for an outcome
        node.annotate({"hoststate.io/current-config": NEW, "hoststate.io/update-state": "Done"})
        last_step[node.name] = time.monotonic()

    began = time.monotonic()
    list(pool.map(update, nodes))
    agent_done = time.monotonic() - began
    watcher.join(timeout=600)
    watch.stop()
    lags = sorted(shown[name] - last_step[name] for name in last_step if name in shown)
    return {
        "agent_seconds": agent_done,
        "seconds": time.monotonic() - began,
        "shown": len(shown),
        "lags": lags,
    }


# -- the controller's side -----------------------------------------------------------------


def pool_counts(kube: KubeCluster) -> dict[str, Any]:
    try:
        return dict(kube.get(NODEPOOLS, None, "worker").get("status") or {})
    except NotFound:
        return {}


def update_transitions(controller: HostController) -> int:
    return sum(
        c.transitions for b in controller.books.values() for c in b.chapters if c.name == "update"
    )


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--minutes", type=float, default=5.0, help="of heartbeats")
    parser.add_argument("--agents", type=int, default=16, help="nodes updated at once")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument(
        "--step-delay", type=float, default=0.0, help="seconds between an update's steps"
    )
    parser.add_argument(
        "--pods-per-node", type=int, default=3, help="pods on each node when all are cordoned"
    )
    args = parser.parse_args()
    n = args.nodes
    with control_plane("node-scale") as plane:
        kubeconfig = str(plane.kubeconfig)
        kube = KubeCluster.from_kubeconfig(kubeconfig)
        observed = observed_controller(
            kube, SimulatedProvisioner(), ControllerConfig(workers=args.workers)
        )
        controller = observed.controller
        controller.start()
        print(f"node scale run: {n} Nodes against kube-apiserver {plane.url}", flush=True)
        ours, theirs = mp.get_context("spawn").Pipe()
        child = mp.get_context("spawn").Process(
            target=fleet,
            args=(
                kubeconfig,
                n,
                args.minutes,
                args.agents,
                args.step_delay,
                args.pods_per_node,
                theirs,
            ),
        )
        child.start()

        def node_books_updated() -> bool:
            books = [b for b in controller.books.values() if b.node_only]
            return (
                len(books) == n
                and all(b.update.current == OLD for b in books)
                and controller.idle()
                and pool_counts(kube).get("machineCount") == n  # no write held back
            )

        began, cpu0, w0 = time.monotonic(), time.process_time(), writes(kube)
        assert ours.recv()[0] == "registered"
        wait(node_books_updated, "registration")
        print(
            f"\nregistration: {n} Nodes followed in {time.monotonic() - began:.1f}s, "
            f"{writes(kube) - w0} controller writes ({(writes(kube) - w0) / n:.2f} per Node), "
            f"CPU {time.process_time() - cpu0:.1f}s",
            flush=True,
        )

        w0, cpu0, r0 = writes(kube), time.process_time(), controller.workers.reconciles
        dropped0 = controller.node_index.dropped
        ours.send("heartbeats")
        _, beats = ours.recv()
        wait(controller.idle, "heartbeats settled")
        minutes = beats["seconds"] / 60
        print(
            f"heartbeats: {beats['sent']} in {beats['seconds']:.0f}s "
            f"({beats['sent'] / beats['seconds']:.0f}/s, at most {beats['late']:.1f}s late); "
            f"controller writes {writes(kube) - w0}, "
            f"reconciles {controller.workers.reconciles - r0}, "
            f"dropped by the Node filter {controller.node_index.dropped - dropped0}, "
            f"CPU {(time.process_time() - cpu0) / minutes:.2f}s per minute",
            flush=True,
        )

        w0, t0, cpu0 = writes(kube), update_transitions(controller), time.process_time()
        verbs0, kinds0 = kube.stats, by_kind(observed.metrics.registry)
        ours.send("rollout")
        _, rolled = ours.recv()
        wait(controller.idle, "rollout settled")
        written, steps = writes(kube) - w0, update_transitions(controller) - t0
        by_verb = {k: kube.stats[k] - verbs0[k] for k in WRITES if kube.stats[k] - verbs0[k]}
        kinds = {k: int(v - kinds0[k]) for k, v in by_kind(observed.metrics.registry).items()}
        lags = rolled["lags"]
        print(
            f"rolling update: {rolled['shown']}/{n} shown updated in {rolled['seconds']:.1f}s "
            f"(the agent's writes took {rolled['agent_seconds']:.1f}s); {steps} step "
            f"transitions recorded ({steps / n:.1f} per Node), {written} controller writes "
            f"{by_verb} {kinds}, "
            f"{written / steps:.2f} per transition; last step to HostState p50 "
            f"{percentile(lags, 50) * 1000:.0f} ms, p99 {percentile(lags, 99) * 1000:.0f} ms; "
            f"CPU {time.process_time() - cpu0:.1f}s",
            flush=True,
        )

        rss0, threads0, w0 = rss_mb(), threading.active_count(), writes(kube)
        kinds0 = by_kind(observed.metrics.registry)
        ours.send("cordon")
        _, cordon_seconds = ours.recv()
        began = time.monotonic()
        wait(lambda: controller.drains.synced() == n, "pod watches listed")
        opened = time.monotonic() - began
        wait(controller.idle, "cordon settled")
        rss1, threads1 = rss_mb(), threading.active_count()
        cpu0 = time.process_time()
        time.sleep(60)  # a minute with every pod watch open and nothing changing
        idle_cpu = time.process_time() - cpu0
        ours.send("uncordon")
        ours.recv()
        began = time.monotonic()
        wait(lambda: not controller.drains.watched(), "pod watches closed")
        closed = time.monotonic() - began
        wait(lambda: threading.active_count() <= threads0, "their threads ended")
        kinds1 = by_kind(observed.metrics.registry)
        kinds = {k: int(v - kinds0[k]) for k, v in kinds1.items()}
        print(
            f"fleet-wide cordon: the pods of {n} nodes ({args.pods_per_node} each) listed "
            f"{opened:.1f}s after the cordons ({cordon_seconds:.1f}s to write them), "
            f"{min(n, PER_NODE_WATCHES)} watched each on its own, the rest on one shared "
            f"watch; +{threads1 - threads0} threads, "
            f"+{rss1 - rss0:.0f} MB RSS; idle CPU {idle_cpu:.2f}s per minute with all open; "
            f"closed {closed:.1f}s after the uncordons; controller writes {writes(kube) - w0} "
            f"{kinds}",
            flush=True,
        )
        child.join(timeout=60)
        controller.stop()
        kube.close()


if __name__ == "__main__":
    main()
