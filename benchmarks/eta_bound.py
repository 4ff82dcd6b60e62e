"""How near any estimate can come to a rollout's finish, and how near the controller's
comes, over hundreds of rollouts: the bound :mod:`benchmarks.eta_accuracy`'s few real runs
are read against.

The demo's update agent (:class:`~state_controller.simulation.rollout.RollingUpdate`)
draws each action's time at random, and a fault falls on a machine no estimate can name in
advance. So even an estimator that knew the agent's timing model exactly, and how often
faults come, would miss the finish by chance: by more on a small pool, where the last two
or three machines decide the end. This plays the agent's model, many rollouts of the
demo's fleet (its pools and models:
:func:`~state_controller.simulation.rollout.pool_for`,
:func:`~state_controller.provisioning.simulated_machines.model_of`), both pools at once,
and at 10, 25, 50 and 75 % of each pool's way asks two estimators:

- **the oracle** knows the timing model and the fault rate, and each machine's steps so
  far: its end is the median of plays from there (a machine's rest drawn among the
  machines whose steps went as its did and whose current step lasts longer than it has
  run), its late bound their 90th percentile. Its error is what chance alone costs.
- **ours** is the controller's (:func:`~state_controller.durations.rollout.per_machine`,
  :func:`~state_controller.durations.rollout.rollout_expected`), taught every step that
  ended by then in either pool, as the controller records them, and told the machines in
  a step: it knows only what it learned.

The model, from :class:`~state_controller.simulation.rollout.AgentTimings` (read as
minutes) as the agent times it, in the controller's steps: pending (half ``prepare``),
preparing (``prepare``), draining (the first eviction, ``evict_every``, then one more
without spread), applying (the empty check, ``evict_every`` without spread, then
``apply``), rebooting (``reboot``, times ``slow_reboot`` on the slow model), resuming
(``resume``). A fault (``--faults``: the benchmark's share of hosts, the kinds in turn)
holds a drain (``--hold``, then the budget's pod is evicted), degrades an apply (degraded
for the hold, then applied again) or loses a reboot (back after the hold).

    .venv/bin/python -m benchmarks.eta_bound [--hosts 100] [--max-unavailable 5]
        [--faults] [--rollouts 200] [--plays 200] [--hold 30] [--without-oracle]

``--without-oracle`` plays only the controller's estimator (seconds, where the oracle's
conditional draws take minutes): for trying a change to the estimator.
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import statistics
from dataclasses import dataclass, field

from state_controller.api.updates import UpdateStep as U
from state_controller.books.records import UpdateCursor
from state_controller.durations.keys import UPDATE, StepKey
from state_controller.durations.learned import Learned
from state_controller.durations.rollout import per_machine, rollout_expected, running_of
from state_controller.provisioning.simulated_machines import SLOW_MODEL, model_of
from state_controller.simulation.rollout import AgentTimings, pool_for

CHECKPOINTS = (0.10, 0.25, 0.50, 0.75)
FAULT_SHARE = 0.2 / 3  # of hosts with a fault: eta_accuracy's choose_faults(rate 0.2)
DRAIN, DEGRADE, LOSE = "drain", "degrade", "lose"
TABLE = 4096  # whole updates drawn once per model, for the oracle's machines not started
TRIES = 20_000  # machines drawn for one conditional draw before the step is taken as ending
OLD, NEW = "rendered-1", "rendered-2"


@dataclass(frozen=True)
class Model:
    """One kind of machine's update as the agent times it, in the controller's steps."""

    timings: AgentTimings
    slow: bool
    fault: float  # the chance a machine has a fault, of any kind
    hold: float

    def draw(self, rng: random.Random) -> list[tuple[str, float]]:
        """One machine's update: each step the controller records, and how long it took."""
        t, sigma = self.timings, self.timings.spread

        def spread(seconds: float) -> float:
            return seconds * rng.lognormvariate(0.0, sigma)

        fault = rng.choice((DRAIN, DEGRADE, LOSE)) if rng.random() < self.fault else ""
        drain = spread(t.evict_every) + t.evict_every
        if fault == DRAIN:
            drain += self.hold + t.evict_every
        reboot = spread(t.reboot * (t.slow_reboot if self.slow else 1.0))
        if fault == LOSE:
            reboot += spread(self.hold)
        applying = [(U.APPLYING.value, t.evict_every + spread(t.apply))]
        if fault == DEGRADE:
            applying += [(U.DEGRADED.value, spread(self.hold)), (U.APPLYING.value, spread(t.apply))]
        return [
            (U.PENDING.value, spread(t.prepare / 2)),
            (U.PREPARING.value, spread(t.prepare)),
            (U.DRAINING.value, drain),
            *applying,
            (U.REBOOTING.value, reboot),
            (U.RESUMING.value, spread(t.resume)),
        ]


@dataclass
class Machine:
    model: Model
    hardware: str
    pool: str
    start: float = 0.0
    steps: list[tuple[str, float, float]] = field(default_factory=list)  # step, start, end

    @property
    def end(self) -> float:
        return self.steps[-1][2]

    def at(self, when: float) -> int | None:
        """The index of the step it is in at ``when`` (None: not started, or done)."""
        return next((i for i, (_, a, b) in enumerate(self.steps) if a <= when < b), None)


def play(machines: list[Machine], at_once: int, rng: random.Random) -> None:
    """One rollout of a pool: each machine in the first slot free, its steps drawn."""
    slots = [0.0] * at_once
    for machine in machines:
        machine.start = t = heapq.heappop(slots)
        machine.steps = []
        for step, took in machine.model.draw(rng):
            machine.steps.append((step, t, t + took))
            t += took
        heapq.heappush(slots, t)


def rest_of(machine: Machine, when: float, rng: random.Random) -> float:
    """The oracle's draw of what is left of a machine under way: among machines of its
    model whose steps went as its did so far and whose current step outlasts its own."""
    i = machine.at(when)
    assert i is not None
    path = [s for s, _, _ in machine.steps[: i + 1]]
    ran = when - machine.steps[i][1]
    for _ in range(TRIES):
        drawn = machine.model.draw(rng)
        if [s for s, _ in drawn[: i + 1]] == path and drawn[i][1] > ran:
            return drawn[i][1] - ran + sum(took for _, took in drawn[i + 1 :])
    return sum(took for _, took in machine.model.draw(rng)[i + 1 :])


def oracle(
    pool: list[Machine],
    when: float,
    at_once: int,
    plays: int,
    tables: dict[Model, list[float]],
    rng: random.Random,
) -> tuple[float, float]:
    """Time left from ``when``: the median and 90th percentile of plays from then (a
    machine not started takes a whole update of its model's, from ``tables``)."""
    under_way = [m for m in pool if m.start <= when < m.end]
    waiting = [tables[m.model] for m in pool if m.start > when]
    ends = []
    for _ in range(plays):
        slots = [rest_of(m, when, rng) for m in under_way]
        slots += [0.0] * (at_once - len(slots))
        heapq.heapify(slots)
        for table in waiting:
            heapq.heapreplace(slots, slots[0] + table[rng.randrange(TABLE)])
        ends.append(max(slots))
    ends.sort()
    return statistics.median(ends), ends[int(0.9 * (len(ends) - 1))]


def ours(fleet: list[Machine], pool: str, when: float, at_once: int) -> tuple[float, float] | None:
    """The controller's estimate at ``when`` (time left: its end and late bound), taught
    every step that ended by then and told the machines in a step."""
    learned = Learned()
    for m in fleet:
        for step, a, b in m.steps:
            if b <= when:
                learned.learn(StepKey(UPDATE, step, m.pool, m.hardware), b - a)
    cursors = []
    for m in fleet:
        i = m.at(when)
        if m.end <= when:
            cursor = UpdateCursor(U.UPDATED, m.end, NEW, NEW)
        elif i is None:
            cursor = UpdateCursor(U.UPDATED, 0.0, OLD, OLD)
        else:
            cursor = UpdateCursor(U(m.steps[i][0]), m.steps[i][1], NEW, OLD, started_at=m.start)
        cursors.append((m, cursor))
    running = running_of(((m.pool, m.hardware, c) for m, c in cursors), when)
    mine = [(m, c) for m, c in cursors if m.pool == pool]
    own = {h: per_machine(learned, pool, h, running) for h in {m.hardware for m, _ in mine}}
    made = rollout_expected(
        [(c, own[m.hardware]) for m, c in mine],
        NEW,
        per_machine(learned, pool, "*", running),
        now=when,
        at_once_seen=at_once,
    )
    return None if made is None else (made.ends_at - when, made.late_at - when)


@dataclass
class Tally:
    errors: list[float] = field(default_factory=list)
    held: int = 0

    def add(self, left: float, true_left: float, late: float) -> None:
        self.errors.append((left - true_left) / true_left)
        self.held += true_left <= late

    def row(self) -> str:
        seen = [abs(e) for e in self.errors]
        if not seen:
            return f"{'none':>34}"
        mean, bias = statistics.mean(seen), statistics.mean(self.errors)
        beyond = sum(e > 0.2 for e in seen)
        return (
            f"{100 * mean:5.1f} % {100 * bias:+6.1f} % {beyond:4d}/{len(seen):<4d}"
            f" {100 * self.held / len(seen):4.0f} %"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--max-unavailable", type=int, default=5)
    parser.add_argument("--faults", action="store_true")
    parser.add_argument("--hold", type=float, default=30.0, help="minutes a fault holds a node")
    parser.add_argument("--rollouts", type=int, default=200)
    parser.add_argument("--plays", type=int, default=200)
    parser.add_argument(
        "--without-oracle", action="store_true", help="only the controller's estimator"
    )
    args = parser.parse_args()
    timings = AgentTimings(prepare=4, evict_every=3, apply=8, reboot=12, resume=4)  # minutes
    fault = FAULT_SHARE if args.faults else 0.0
    models = {slow: Model(timings, slow, fault, args.hold) for slow in (False, True)}
    whole = random.Random("tables")
    tables = {
        model: [sum(took for _, took in model.draw(whole)) for _ in range(TABLE)]
        for model in models.values()
    }
    print(
        f"eta bound: {args.hosts} hosts, {args.max_unavailable} at a time per pool, "
        f"faults on {100 * fault:.1f} % of machines ({args.hold:g} min), "
        f"{args.rollouts} rollouts, {args.plays} plays per oracle's estimate"
    )
    tallies: dict[tuple[str, float, str], Tally] = {}
    pools: set[str] = set()
    for seed in range(args.rollouts):
        rng = random.Random(seed)
        fleet = []
        for index in range(args.hosts):
            slow = model_of(f"host-{index:04d}") == SLOW_MODEL
            fleet.append(Machine(models[slow], SLOW_MODEL if slow else "fast", pool_for(index)))
        by_pool: dict[str, list[Machine]] = {}
        for m in fleet:
            by_pool.setdefault(m.pool, []).append(m)
        for name, pool in by_pool.items():
            pools.add(name)
            at_once = min(args.max_unavailable, len(pool))
            play(pool, at_once, rng)
        for name, pool in by_pool.items():
            at_once = min(args.max_unavailable, len(pool))
            ends = sorted(m.end for m in pool)
            for checkpoint in CHECKPOINTS:
                when = ends[max(math.ceil(checkpoint * len(ends)), 1) - 1]
                true_left = ends[-1] - when
                if true_left <= 0:
                    continue
                if not args.without_oracle:
                    median, late = oracle(pool, when, at_once, args.plays, tables, rng)
                    tallies.setdefault((name, checkpoint, "oracle"), Tally()).add(
                        median, true_left, late
                    )
                made = ours(fleet, name, when, at_once)
                if made is not None:
                    tallies.setdefault((name, checkpoint, "ours"), Tally()).add(
                        made[0], true_left, made[1]
                    )
    for name in sorted(pools):
        print(f"\npool {name}: |error| mean, error mean, beyond 20 %, finished by the late bound")
        print(f"  at    {'oracle':^34}   {'ours':^34}")
        for checkpoint in CHECKPOINTS:
            rows = [
                tallies.get((name, checkpoint, who), Tally()).row() for who in ("oracle", "ours")
            ]
            print(f"  {checkpoint:>4.0%}  {rows[0]}   {rows[1]}")


if __name__ == "__main__":
    main()
