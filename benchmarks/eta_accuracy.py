"""How honest a rollout's finish time is: the NodePools' estimates, taken as the rollout
goes, against when each pool really finished, and against what constants per step would
have said for the same rollout.

A fleet of ``--hosts`` simulated machines is provisioned, each gets a Node, and the demo's
update agent (:class:`~state_controller.simulation.rollout.RollingUpdate`) rolls every
pool to a new configuration ``--max-unavailable`` Nodes at a time, with the spread of its
timings (each action of each node times a log-normal factor) and its two hardware models
(every fourth machine's restarts take 2.5 times as long); ``--faults`` holds some nodes as
the demo's faults do (a blocked drain, a lost reboot, a degraded apply), each for
``--hold`` simulated minutes. The agent's timings are the demo's, read as minutes:
one simulated minute is ``--minute`` seconds (0.1: a drain of three pods takes about nine
minutes, a restart twelve, thirty on the slow model).

The truth is the agent's: a pool reaches 10, 25, 50 and 75 % of the way, and finishes,
when the agent has updated that share of its machines, and the run reads the pool's
NodePool at that moment: the finish time its ``status.estimate`` shows (what a user reads
then) is compared with the pool's real finish, the error as a share of the time the
rollout had left, and whether the pool finished by the late bound shown (what the
estimate says of what it cannot foresee, a fault still to come). The NodePool's counts
are not the clock: they are written at most once per ``--node-pool-status-interval``, so
they trail the agent. That interval (1 s by default, against rollouts of hours) is scaled
with the time, as the agent's timings are: one simulated minute. The agent acts on a
tick; how late its actions came after they were due is printed, since a loaded process
stretches the steps it times. On the kube-apiserver it runs in a process of its own
(:mod:`benchmarks.eta_agent`). Beside it, what constants per step say at the same moment, as
``oc adm upgrade status`` does for each node (openshift/oc,
``pkg/cli/admin/upgrade/status/workerpool.go``: ``+10m`` while draining, ``+5m`` while
updating or rebooting, nothing for a node not started): the pool ends, by them, when its
last node under way does (its constant), plus, for the nodes not started, the same
constants in turn, ``--max-unavailable`` at a time. The constants are scaled by
``--minute`` as the timings are.

    .venv/bin/python -m benchmarks.eta_accuracy [--hosts 200] [--max-unavailable 10]
        [--faults] [--seed 1] [--minute 0.1] [--hold 30] [--kube]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import statistics
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from benchmarks.eta_agent import Child, InProcess, Report, agent_for
from benchmarks.harness import NS, all_provisioned, wait
from state_controller.api.timefmt import parse_rfc3339
from state_controller.api.updates import UpdateStep
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import NODEPOOLS, Cluster
from state_controller.cluster.schema import validators
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.pools.reconciler import pool_object_name
from state_controller.simulation.fleet import create_fleet
from state_controller.simulation.nodes import UpdateFault
from state_controller.simulation.rollout import (
    AgentTimings,
    choose_faults,
    config_name,
    pool_for,
)
from state_controller.wiring import observed_controller

CHECKPOINTS = (0.10, 0.25, 0.50, 0.75)
# oc adm upgrade status: the time left it gives a node, by the step it is in (minutes)
OC_MINUTES = {
    UpdateStep.DRAINING: 10.0,
    UpdateStep.APPLYING: 5.0,
    UpdateStep.REBOOTING: 5.0,
}
OC_WHOLE_NODE = 10.0 + 5.0  # a node not started: drained, then updated and rebooted
UNDER_WAY = (*OC_MINUTES, UpdateStep.PREPARING, UpdateStep.CORDONING, UpdateStep.RESUMING)
NOT_STARTED = (UpdateStep.UPDATED, UpdateStep.PENDING)


@dataclass
class PoolRun:
    """What one pool showed as its rollout went."""

    machines: int
    began: float
    done: int = 0  # machines the agent has updated
    finished: float | None = None  # when the agent updated its last machine
    seen: dict[float, Seen] = field(default_factory=dict)  # by checkpoint


@dataclass(frozen=True)
class Seen:
    """What a pool showed at one checkpoint."""

    at: float
    ours: float | None  # the end the NodePool shows
    late: float | None  # its late bound
    at_once: int | None  # the machines it takes as updating at once
    newest: float | None  # the end of the newest estimate made, shown or not
    theirs: float  # the constants' end


# pool -> the end of the newest estimate the controller made, shown or not
NEWEST: dict[str, float] = {}
_MAKING = threading.local()  # the pool whose estimate this thread is making


def record_newest() -> None:
    """A NodePool shows the estimate it said while the rollout runs within it; the newest
    one made is recorded beside it (in :data:`NEWEST`), so one run compares the two
    without another run's chance between them."""
    from state_controller.durations.rollout import rollout_expected as expected
    from state_controller.runtime.pools import reconciler

    estimate = reconciler.PoolReconciler._estimate

    def making(self: Any, pool: str, *args: Any) -> None:
        _MAKING.pool = pool
        estimate(self, pool, *args)

    def newest(*args: Any, **kwargs: Any) -> Any:
        made = expected(*args, **kwargs)
        if made is not None:
            NEWEST[_MAKING.pool] = made.ends_at
        return made

    vars(reconciler)["rollout_expected"] = newest
    setattr(reconciler.PoolReconciler, "_estimate", making)  # noqa: B010


@contextlib.contextmanager
def cluster_for(kube: bool) -> Iterator[tuple[Cluster, str | None]]:
    """The cluster, and its kubeconfig when other processes can reach it."""
    if not kube:
        store = EmbeddedCluster(validators=validators())
        try:
            yield store, None
        finally:
            store.close()
        return
    from benchmarks.harness import control_plane
    from state_controller.cluster.kube import KubeCluster
    from testbed.scenarios import allow_pods

    with control_plane("eta-accuracy") as plane:
        client = KubeCluster.from_kubeconfig(str(plane.kubeconfig))
        allow_pods(client)  # the Nodes' pods need the namespace's default ServiceAccount
        try:
            yield client, str(plane.kubeconfig)
        finally:
            client.close()


def constants_end(
    steps: list[UpdateStep], waiting: int, at_once: int, now: float, minute: float
) -> float:
    """When the constants say the pool ends: its nodes under way by their step's
    constant, then the nodes not started, ``at_once`` at a time, a whole node each."""
    under_way = [OC_MINUTES.get(step, 5.0) for step in steps]
    last = max(under_way, default=0.0)
    rounds = -(-waiting // max(at_once, 1))
    return now + (last + rounds * OC_WHOLE_NODE) * minute


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--max-unavailable", type=int, default=10)
    parser.add_argument("--faults", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--minute", type=float, default=0.1, help="seconds per simulated minute")
    parser.add_argument("--hold", type=float, default=30.0, help="minutes a fault holds a node")
    parser.add_argument(
        "--kube", action="store_true", help="a real kube-apiserver, not the embedded store"
    )
    args = parser.parse_args()
    scale = args.minute / 0.1  # the agent's timings are the demo's: minutes at 0.1 s
    timings = AgentTimings(
        prepare=0.4 * scale, evict_every=0.3 * scale, apply=0.8 * scale,
        reboot=1.2 * scale, resume=0.4 * scale, heartbeat=10.0,
    )  # fmt: skip
    names = [f"host-{i:04d}" for i in range(args.hosts)]
    kinds = (UpdateFault.DRAIN_BLOCKED, UpdateFault.REBOOT_LOST, UpdateFault.APPLY_DEGRADED)
    faults = choose_faults(names, 0.2, kinds, args.seed) if args.faults else {}
    record_newest()
    with cluster_for(args.kube) as (cluster, kubeconfig):
        # the NodePool's status interval scaled with the time, as the agent's timings are
        config = ControllerConfig(workers=4, pool_status_interval=args.minute)
        observed = observed_controller(cluster, SimulatedProvisioner(), config)
        controller = observed.controller
        controller.start()
        agent: InProcess | Child | None = None
        try:
            create_fleet(cluster, NS, args.hosts)
            wait(lambda: all_provisioned(controller, args.hosts), "provisioning")
            hold = args.hold * args.minute
            agent = agent_for(kubeconfig)(
                cluster, names, timings, faults, args.max_unavailable, hold
            )
            wait(lambda: _all_at_rest(controller, names), "every Node followed, at rest")
            print(
                f"eta accuracy run: {args.hosts} hosts, {args.max_unavailable} at a time per "
                f"pool, 1 simulated minute = {args.minute:g} s, faults: "
                f"{len(faults)} nodes ({args.hold:g} min each), "
                f"{'kube-apiserver' if args.kube else 'embedded store'}, the update agent "
                f"{'in a process of its own' if kubeconfig else 'in this process'}",
                flush=True,
            )
            pools = _roll(cluster, controller, agent, names, args)
            report = agent.report()
        finally:
            if agent is not None:
                agent.stop()
            controller.stop()
    _report(pools, report, args.minute)


def _all_at_rest(controller: Any, names: list[str]) -> bool:
    books = controller.books
    for name in names:
        book = books.get(f"{NS}/{name}")
        update = book.node_update() if book is not None else None
        if update is None or update.step != UpdateStep.UPDATED:
            return False
    return True


def _roll(
    cluster: Cluster,
    controller: Any,
    agent: InProcess | Child,
    names: list[str],
    args: argparse.Namespace,
) -> dict[str, PoolRun]:
    """The rollout to its end; each pool's checkpoints and finish are the agent's, each
    checkpoint's estimates read at that moment."""
    members = [(name, pool_for(index)) for index, name in enumerate(names)]
    began = time.time()
    runs = {pool: PoolRun(count, began) for pool, count in Counter(p for _, p in members).items()}
    agent.start()
    deadline = time.monotonic() + 3600
    while time.monotonic() < deadline:
        for pool, when in agent.updates():
            run = runs[pool]
            run.done += 1
            if run.done == run.machines:
                run.finished = when
            for checkpoint in CHECKPOINTS:
                if checkpoint not in run.seen and run.done >= checkpoint * run.machines:
                    run.seen[checkpoint] = _look(cluster, controller, members, pool, when, args)
        if all(r.finished is not None for r in runs.values()):
            return runs
    raise SystemExit("the rollout did not finish within an hour")


def _look(
    cluster: Cluster,
    controller: Any,
    members: list[tuple[str, str]],
    pool: str,
    now: float,
    args: argparse.Namespace,
) -> Seen:
    """What the pool's NodePool shows now, what the newest estimate made said, and what
    the constants say from the steps the controller has recorded."""
    status = cluster.get(NODEPOOLS, None, pool_object_name(pool)).get("status") or {}
    estimate = status.get("estimate") or {}
    target = config_name(pool, 2)
    steps, waiting = [], 0
    for name, its_pool in members:
        if its_pool != pool:
            continue
        book = controller.books.get(f"{NS}/{name}")
        update = book.node_update() if book is not None else None
        if update is None:
            continue
        if update.step in UNDER_WAY:
            steps.append(update.step)
        elif update.step in NOT_STARTED and update.current != target:
            waiting += 1
    theirs = constants_end(steps, waiting, args.max_unavailable, now, args.minute)
    ours, late = parse_rfc3339(estimate.get("endsAt")), parse_rfc3339(estimate.get("lateAt"))
    at_once = estimate.get("atOnce")
    return Seen(now, ours, late, at_once, NEWEST.get(pool), theirs)


def _report(pools: dict[str, PoolRun], agent: Report, minute: float) -> None:
    lateness = agent.lateness
    if len(lateness) > 1:
        cuts = statistics.quantiles(lateness, n=100)
        print(
            f"the agent's {len(lateness)} actions came after they were due by "
            f"{cuts[49] / minute:.2f} simulated min at the median, {cuts[98] / minute:.2f} "
            f"at p99, {max(lateness) / minute:.2f} at most"
        )
    ours_25: list[float] = []
    theirs_25: list[float] = []
    for name, run in sorted(pools.items()):
        assert run.finished is not None
        took = (run.finished - run.began) / minute
        print(f"\npool {name}: {run.machines} machines, finished after {took:.0f} simulated min")
        wholes = agent.wholes(name)
        if len(wholes) > 1:
            cuts = statistics.quantiles([w for w, _ in wholes], n=10)
            longest, host = wholes[-1]
            steps = agent.phases[host]
            spent = ", ".join(
                f"{phase} {(end - start) / minute:.0f}"
                for (phase, start), (_, end) in itertools.pairwise(steps)
            )
            print(
                f"  the agent's updates took {cuts[4] / minute:.0f} simulated min at the "
                f"median, {cuts[8] / minute:.0f} at p90; the longest, {host}, "
                f"{longest / minute:.0f}: {spent}"
            )
        print(
            "  at     left (min)   ours: error   within late bound   at once   newest: error"
            "   constants: error"
        )
        for checkpoint in CHECKPOINTS:
            if checkpoint not in run.seen:
                continue
            seen = run.seen[checkpoint]
            at, ours, late, newest, theirs = seen.at, seen.ours, seen.late, seen.newest, seen.theirs
            left = run.finished - at
            if left <= 0:  # reached in the same reading as the finish: nothing was left
                continue
            mine = "none" if ours is None else f"{100 * (ours - run.finished) / left:+.0f} %"
            held = "-" if late is None else ("yes" if run.finished <= late else "no")
            new = "none" if newest is None else f"{100 * (newest - run.finished) / left:+.0f} %"
            them = 100 * (theirs - run.finished) / left
            print(
                f"  {checkpoint:>4.0%}   {left / minute:8.0f}   {mine:>12}   {held:>17}"
                f"   {seen.at_once or '-':>7}   {new:>13}   {them:+14.0f} %"
            )
            if checkpoint == 0.25:
                if ours is not None:
                    ours_25.append(abs(ours - run.finished) / left)
                theirs_25.append(abs(theirs - run.finished) / left)
    if ours_25:
        print(
            f"\nat 25 % of the way: |error| ours {100 * statistics.mean(ours_25):.0f} %, "
            f"constants {100 * statistics.mean(theirs_25):.0f} % (mean over pools)"
        )


if __name__ == "__main__":
    main()
