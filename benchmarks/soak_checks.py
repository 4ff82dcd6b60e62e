"""What ``benchmarks.soak`` checks: every HostState read while it exists and its
history gathered by sequence number, then held against what the host went through (no
transition lost or doubled, none left unreconciled); stuck reports explained by the
faults active when they came; the faults' schedule; RSS and thread slopes."""

from __future__ import annotations

import argparse
import itertools
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.soak_world import NS, World
from state_controller.api.timefmt import parse_rfc3339
from state_controller.api.updates import UPDATE_COMPLETE, UPDATE_STARTED, UpdateStep
from state_controller.cluster.interface import (
    HOSTS,
    HOSTSTATES,
)
from state_controller.cluster.kube import KubeCluster
from state_controller.simulation.rollout import config_name

PROVISIONING_PATH = (
    "registering",
    "inspecting",
    "preparing",
    "available",
    "provisioning",
    "provisioned",
)
# the steps of the update chapter the agent here walks a node through, each seen by the
# controller (the agent cordons as it drains: no step of its own for the cordon)
UPDATE_WALK = tuple(
    s.value
    for s in (
        UpdateStep.PENDING,
        UpdateStep.PREPARING,
        UpdateStep.DRAINING,
        UpdateStep.APPLYING,
        UpdateStep.REBOOTING,
        UpdateStep.RESUMING,
    )
)
STUCK_NAMES = (
    "registering",
    "inspecting",
    "preparing",
    "provisioning",
    "deprovisioning",
    "powering off before delete",
    "deleting",
    "preparing update",
    "cordoning",
    "draining",
    "applying update",
    "rebooting",
    "resuming",
)
FAULT_KINDS = ("kill", "apiserver", "outage")
FAULT_LABELS = {"kill": "kill -9", "apiserver": "API server restart", "outage": "backend outage"}


def clock_text(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


# -- what the HostStates show ---------------------------------------------------------------


@dataclass
class Stuck:
    host: str
    at: float  # seconds into the run it was first seen stuck
    entered: float  # seconds into the run it entered the state or step timed
    what: str
    message: str
    cause: str = ""


class Recorder:
    """Every HostState read every few seconds: its history gathered by sequence number
    (a record read twice must read the same), its stuck reports."""

    def __init__(self, kube: KubeCluster, started_wall: float) -> None:
        self.kube, self.started_wall = kube, started_wall
        self.records: dict[str, dict[int, dict[str, Any]]] = {}
        self.rewritten: list[tuple[str, int]] = []
        self.stuck: list[Stuck] = []
        self._stuck_now: set[str] = set()
        self.reads = 0

    def read(self) -> None:
        items, _ = self.kube.list(HOSTSTATES, NS)
        self.reads += 1
        for item in items:
            name = item["metadata"]["name"]
            status = item.get("status") or {}
            seen = self.records.setdefault(name, {})
            for record in status.get("history") or ():
                before = seen.setdefault(record["seq"], record)
                if before != record and (name, record["seq"]) not in self.rewritten:
                    self.rewritten.append((name, record["seq"]))
            self.look_for_stuck(name, status)

    def look_for_stuck(self, name: str, status: dict[str, Any]) -> None:
        if not status.get("stuck"):
            self._stuck_now.discard(name)
            return
        if name in self._stuck_now:
            return
        self._stuck_now.add(name)
        condition: dict[str, Any] = next(
            (c for c in status.get("conditions") or () if c["type"] == "Stuck"), {}
        )
        update = status.get("update") or {}
        prov = status.get("provisioning") or {}
        step = update.get("step", "")
        if step and step != UpdateStep.UPDATED.value:
            what, entered = f"update step {step}", update.get("enteredAt")
        else:
            what, entered = f"state {prov.get('state', '')}", prov.get("enteredAt")
        at = time.time() - self.started_wall
        entered_at = parse_rfc3339(entered)
        since = entered_at - self.started_wall if entered_at is not None else at
        self.stuck.append(Stuck(name, at, since, what, condition.get("message", "")))


def unseen_steps(
    history: list[dict[str, Any]], windows: Sequence[tuple[float, float]], started_wall: float
) -> Counter[str]:
    """The update steps a Node passed while its host had no live owner: those a record
    jumps over (its ``from`` is not the step before its ``to``) when that record was
    written within one of ``windows`` (a killed replica's, until its hosts moved and were
    reconciled). Nobody could see them: the new owner finds the Node where it is now and
    records one jump, from where the host's history left off."""
    unseen: Counter[str] = Counter()
    walk = [*UPDATE_WALK, "provisioned"]
    for record in history:
        if record.get("chapter") != "update" or record.get("to") not in walk:
            continue
        source = record.get("from", "")
        first = walk.index(source) + 1 if source in walk else 0
        skipped = walk[first : walk.index(record["to"])]
        written = parse_rfc3339(record.get("at"))
        if not skipped or written is None:
            continue
        if any(a <= written - started_wall <= b for a, b in windows):
            unseen.update(skipped)
    return unseen


def check_histories(
    recorder: Recorder,
    started: Counter[str],
    done: Counter[str],
    windows: Sequence[tuple[float, float]] = (),
) -> dict[str, Any]:
    """Each host's gathered history against what it went through (see the docstring);
    steps skipped within ``windows`` (seconds into the run when some hosts had no live
    owner) are counted apart, as unseen, not lost."""
    lost: list[str] = []
    doubled: list[str] = []
    unseen: list[str] = []
    transitions = 0
    for name, records in sorted(recorder.records.items()):
        seqs = sorted(records)
        transitions += len(seqs)
        missing = sorted(set(range(1, seqs[-1] + 1)) - set(seqs)) if seqs else []
        if missing:
            lost.append(f"{name}: sequence numbers {missing} never read")
        history = [records[s] for s in seqs]
        for before, after in itertools.pairwise(history):
            if after.get("from", "") != before["to"]:
                lost.append(f"{name}: {before['to']} then {after.get('from')}, at {after['seq']}")
        entered = Counter(r["to"] for r in history if r.get("chapter") != "update")
        for state in PROVISIONING_PATH:
            if entered[state] == 0:
                lost.append(f"{name}: never entered {state}")
            elif entered[state] > 1:
                doubled.append(f"{name}: entered {state} {entered[state]} times")
        for state in ("deprovisioning", "powering off before delete", "deleting"):
            if entered[state] > 1:
                doubled.append(f"{name}: entered {state} {entered[state]} times")
        reasons = Counter(r.get("reason", "") for r in history)
        steps = Counter(r["to"] for r in history if r.get("chapter") == "update")
        wanted = [
            (f"{r} records", reasons[r], n)
            for r, n in ((UPDATE_STARTED, started[name]), (UPDATE_COMPLETE, done[name]))
        ]
        missed = unseen_steps(history, windows, recorder.started_wall)
        unseen += [f"{name}: {n} {step!r} passed unseen" for step, n in sorted(missed.items())]
        wanted += [
            (f"steps {step!r}", steps[step] + missed[step], started[name]) for step in UPDATE_WALK
        ]
        for what, count, want in wanted:
            if count < want:
                lost.append(f"{name}: {count} {what} in {started[name]} updates")
            elif count > want:
                doubled.append(f"{name}: {count} {what} in {started[name]} updates")
    for name, seq in recorder.rewritten:
        doubled.append(f"{name}: record {seq} read twice with different contents")
    return {
        "hosts": len(recorder.records),
        "transitions": transitions,
        "lost": lost,
        "doubled": doubled,
        "unseen": unseen,
    }


def unreconciled(kube: KubeCluster, world: World, replicas: list[str]) -> list[str]:
    """Hosts whose HostState does not show them provisioned, at rest, at the last
    configuration, with a live replica's label."""
    states = {s["metadata"]["name"]: s for s in kube.list(HOSTSTATES, NS)[0]}
    out = []
    for host in kube.list(HOSTS, NS)[0]:
        name = host["metadata"]["name"]
        shard = (host["metadata"].get("labels") or {}).get("hoststate.io/shard", "")
        status = (states.get(name) or {}).get("status") or {}
        node = world.nodes.get(name)
        update = status.get("update") or {}
        why = ""
        if name in world.deleting:
            continue
        if shard not in replicas:
            why = f"shard label {shard!r}"
        elif (status.get("provisioning") or {}).get("state") != "provisioned":
            why = f"HostState shows {(status.get('provisioning') or {}).get('state')!r}"
        elif node is None:
            why = "no Node yet"
        elif update.get("step") != UpdateStep.UPDATED.value:
            why = f"update step {update.get('step')!r}"
        elif update.get("currentConfig") != config_name(node.pool, node.generation):
            why = f"at {update.get('currentConfig')!r}"
        if why:
            out.append(f"{name}: {why}")
    return out


# -- faults --------------------------------------------------------------------------------


@dataclass
class Fault:
    kind: str
    at: float  # seconds into the run
    target: str = ""  # the replica killed
    ended: float = 0.0  # seconds into the run its effect is over
    what: str = ""


def schedule(args: argparse.Namespace, rng: random.Random, names: list[str]) -> list[Fault]:
    """``--faults`` moments in the middle 80% of the run, kinds in a seeded order, no two
    closer than the run divided by twice their number."""
    n = args.faults if args.faults is not None else max(3, round(args.duration / 1200))
    kinds = list(FAULT_KINDS)
    rng.shuffle(kinds)
    span = args.duration * 0.75
    gap = args.duration / (2 * n) if n else 0.0
    for _ in range(1000):
        moments = sorted(args.duration * 0.1 + rng.random() * span for _ in range(n))
        if all(b - a >= gap for a, b in itertools.pairwise(moments)):
            break
    faults = [Fault(kinds[i % len(kinds)], at) for i, at in enumerate(moments)]
    for fault in faults:
        if fault.kind == "kill":
            fault.target = rng.choice(names)
    return faults


def explain(stuck: Stuck, faults: list[Fault], grace: float) -> str:
    """The fault active between the host's entering its state and its stuck report."""
    for fault in faults:
        if fault.ended and fault.at <= stuck.at and stuck.entered <= fault.ended + grace:
            return f"{fault.kind} at {clock_text(fault.at)}"
    return ""


# -- the run -------------------------------------------------------------------------------


def slope(points: list[tuple[float, float]]) -> float:
    """Least squares slope of (seconds, value), per hour."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return 0.0 if sxx == 0 else sum((x - mx) * (y - my) for x, y in points) / sxx * 3600


def longest_series(
    samples: list[dict[str, Any]], replica: str, warmup: float
) -> list[dict[str, Any]]:
    """The samples of the replica's process sampled most, but for its first ``warmup``
    seconds (the interpreter loading, the caches filling)."""
    by_pid: dict[int, list[dict[str, Any]]] = {}
    for sample in samples:
        if sample["replica"] == replica and sample["age"] >= warmup:
            by_pid.setdefault(sample["pid"], []).append(sample)
    return max(by_pid.values(), key=len, default=[])
