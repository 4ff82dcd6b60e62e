"""The update agent's side of :mod:`benchmarks.eta_accuracy`: the demo's kubelets and
rolling update, ticked to the end of the rollout, telling each machine updated (its pool,
when) and, at the end, how late each of its actions came after it was due.

On the real kube-apiserver the agent runs in a process of its own, with its own client:
in the controller's process, a thousand Nodes' agent waits on the controller's threads for
the interpreter and its actions come minutes late, which stretches the very steps the
estimate is measured on. On the embedded store (one process's memory) it runs in the
benchmark's process, where a hundred Nodes' agent keeps to its timings.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from benchmarks.harness import NS
from state_controller.cluster.interface import Cluster
from state_controller.simulation.nodes import UpdateFault
from state_controller.simulation.rollout import AgentTimings, Kubelets, Phase, RollingUpdate

TICK = 0.02  # seconds between the agent's looks at its Nodes
Updated = list[tuple[str, float]]  # (pool, when) of each machine the agent updated


class Agent:
    """The kubelets and the rolling update of one fleet, ticked."""

    def __init__(
        self,
        cluster: Cluster,
        names: list[str],
        timings: AgentTimings,
        faults: dict[str, UpdateFault],
        max_unavailable: int,
        hold: float,
    ) -> None:
        self.kubelets = Kubelets(cluster, NS, timings, faults, time.monotonic)
        for index, name in enumerate(names):
            self.kubelets.register(name, index)
        self.rollout = RollingUpdate(self.kubelets, max_unavailable=max_unavailable, hold=hold)
        self.members = list(self.kubelets.members.values())
        self.updated: set[str] = set()
        self.lateness: list[float] = []  # seconds each action came after it was due
        # each machine's phases as the agent moved it: (phase, monotonic seconds)
        self.phases: dict[str, list[tuple[str, float]]] = {m.name: [] for m in self.members}

    def start(self) -> None:
        self.rollout.start()

    def tick(self) -> Updated:
        """One look at every Node; the machines updated in it."""
        tick = time.monotonic()
        self.lateness += [
            tick - m.due for m in self.members if m.phase not in AT_REST and tick >= m.due
        ]
        self.rollout.tick(tick)
        now = time.time()
        out = []
        for member in self.members:
            seen = self.phases[member.name]
            if member.phase is not None and (not seen or seen[-1][0] != member.phase.value):
                seen.append((member.phase.value, tick))
            if member.phase == Phase.DONE and member.name not in self.updated:
                self.updated.add(member.name)
                out.append((member.pool, now))
        return out

    def done(self) -> bool:
        return self.rollout.done()

    def report(self) -> Report:
        return Report(self.lateness, self.phases, {m.name: m.pool for m in self.members})


@dataclass
class Report:
    """What the agent saw of its own rollout, for the benchmark's figures."""

    lateness: list[float]  # seconds each action came after it was due
    phases: dict[str, list[tuple[str, float]]]  # each machine's phases, entered when
    pools: dict[str, str]  # each machine's pool

    def wholes(self, pool: str) -> list[tuple[float, str]]:
        """Each machine's update, from its turn given to done (seconds), longest last."""
        return sorted(
            (steps[-1][1] - steps[0][1], name)
            for name, steps in self.phases.items()
            if self.pools[name] == pool and len(steps) > 1
        )


AT_REST = (None, Phase.DONE)


class InProcess:
    """The agent in the benchmark's own process."""

    def __init__(self, cluster: Cluster, *args: Any) -> None:
        self.agent = Agent(cluster, *args)

    def start(self) -> None:
        self.agent.start()

    def updates(self) -> Updated:
        """The machines updated since the last call (a tick, then a pause)."""
        out = self.agent.tick()
        time.sleep(TICK)
        return out

    def report(self) -> Report:
        return self.agent.report()

    def stop(self) -> None:
        pass


class Child:
    """The agent in a process of its own, with its own client of the cluster."""

    def __init__(self, kubeconfig: str, *args: Any) -> None:
        context = mp.get_context("spawn")
        self.conn, theirs = context.Pipe()
        self.process = context.Process(target=_run, args=(kubeconfig, theirs, *args))
        self.process.start()
        self._report: Report | None = None
        kind, _ = self._receive(600.0)
        if kind != "registered":
            raise SystemExit(f"the agent's process did not register its Nodes: {kind}")

    def start(self) -> None:
        self.conn.send("go")

    def updates(self) -> Updated:
        kind, body = self._receive(1.0)
        if kind == "updated":
            return list(body)
        if kind == "report":
            self._report = body
        return []

    def report(self) -> Report:
        while self._report is None:  # its last message, after the rollout
            kind, body = self._receive(60.0)
            if kind == "report":
                self._report = body
        return self._report

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(10)

    def _receive(self, timeout: float) -> tuple[str, Any]:
        if not self.conn.poll(timeout):
            if not self.process.is_alive():
                raise SystemExit(f"the agent's process ended (exit {self.process.exitcode})")
            return "", None
        kind, body = self.conn.recv()
        return str(kind), body


def _run(kubeconfig: str, conn: Connection, *args: Any) -> None:
    """The child: register the Nodes, wait for the word, roll, tell each update."""
    from state_controller.cluster.kube import KubeCluster

    cluster = KubeCluster.from_kubeconfig(kubeconfig)
    try:
        agent = Agent(cluster, *args)
        conn.send(("registered", None))
        conn.recv()
        agent.start()
        while not agent.done():
            updated = agent.tick()
            if updated:
                conn.send(("updated", updated))
            time.sleep(TICK)
        conn.send(("report", agent.report()))
    finally:
        cluster.close()


def agent_for(kubeconfig: str | None) -> Callable[..., InProcess | Child]:
    """The agent's place: a process of its own on the kube-apiserver, else this one."""
    if kubeconfig is None:
        return InProcess
    return lambda _cluster, *args: Child(kubeconfig, *args)
