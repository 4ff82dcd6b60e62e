"""Soak run: sharded replicas on a real control plane for hours, with churn and faults:
that over hours nothing grows without bound and no transition is lost or doubled.

On a real etcd + kube-apiserver (+ kube-controller-manager) on this machine, N replicas
run as ``state-controller run --shard soak-I`` processes sharing one simulated backend
(``--simulated-hardware`` on one file, as replicas share one Ironic), with the demo's
timings. For ``--duration``:

- a steady fleet of ``--hosts`` Hosts churns: every ``--churn-every`` the oldest host
  whose Node is at rest is deleted (its Node, pods and Secret after it) and a new one
  created;
- each provisioned Host gets a Node (linked by ``spec.providerID``, two pods on it,
  heartbeats every 10 s), and every ``--wave-every`` an update agent walks every Node to
  the next configuration through the ``hoststate.io/`` annotations, ``--max-unavailable``
  at a time per pool: target, working, cordon, evict, apply, reboot, uncordon, done;
- ``--faults`` faults at random moments (seeded by ``--seed``), their kinds taken in
  turn: a replica killed with SIGKILL and started again ``--restart-after`` later, as a
  StatefulSet would (by default once its Lease has died, so that its hosts move to the
  others, mid-flight too, and its share comes back to it), kube-apiserver restarted, the
  shared backend refusing every call for ``--outage``
  (:meth:`~state_controller.provisioning.hardware_file.HardwareFile.refuse`).

Every ``--sample-every`` it reads each replica's RSS and thread count from /proc and
prints a line. At the end (churn and waves stopped, the fleet given ``--settle`` to come
to rest) it prints:

- each replica's RSS and thread slope per hour, by least squares over the samples of its
  longest-lived process (a process started again begins a new series), its first
  ``--warmup`` left out;
- transitions lost or doubled: every HostState is read every 3 s while it exists and its
  history gathered by sequence number, then checked against what the host went through:
  each provisioning state once, each update step once per update the agent made, no
  sequence number missing, each record's ``from`` the ``to`` before it, none rewritten;
  the update steps a Node passed while its host had no live owner (from a replica's kill
  until its hosts moved) are counted apart, as unseen: the new owner records one jump;
- the hosts left unreconciled at the end (0 expected);
- stuck reports (``--stuck-after`` is every state's and step's threshold), and those with
  no fault to explain them (0 expected): a report is explained by a fault active
  between the host's entering its state and its being reported stuck;
- the faults injected, with their times, and the replicas that exited by themselves
  (started again, as a StatefulSet would), each with the fault that explains it if any.

The samples, faults, stuck reports and results go to ``--out`` (JSON); ``--svg`` draws
each replica's RSS over time with the faults marked (matplotlib, from the ``bench``
extra: ``.venv/bin/pip install -e '.[bench]'``; the tests need none of it).

    .venv/bin/python -m benchmarks.soak [--replicas 3] [--duration 2h] [--hosts 30]
        [--churn-every 20s] [--wave-every 3m] [--faults N] [--outage 2m] [--seed 1]
        [--out soak.json] [--svg soak-rss.svg]

Every process it starts (the control plane, the replicas) is stopped when it ends, also
on Ctrl-C, SIGTERM or an error. The world it plays is in ``benchmarks.soak_world``, the
checks it makes of it in ``benchmarks.soak_checks``; this module runs them, with the
replicas and the faults, and reports.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import control_plane
from benchmarks.soak_checks import (
    FAULT_LABELS,
    STUCK_NAMES,
    Fault,
    Recorder,
    check_histories,
    clock_text,
    explain,
    longest_series,
    schedule,
    slope,
    unreconciled,
)
from benchmarks.soak_world import NS, SERVICE_ACCOUNTS, STATE_NS, World
from state_controller.cluster.kube import KubeCluster
from state_controller.commands.flags import duration
from state_controller.provisioning.hardware_file import HardwareFile
from testbed.shards import ShardProcess, proc_sample, shard_argv

# -- replicas ------------------------------------------------------------------------------


@dataclass
class Exit:
    """A replica that exited by itself (not killed by the run), started again after."""

    replica: str
    at: float
    code: int | None
    cause: str = ""  # the fault under way, if any


class Replica(ShardProcess):
    """One ``run --shard`` process, started again whenever it is gone (a StatefulSet)."""

    def __init__(self, name: str, argv: list[str], log: Path) -> None:
        super().__init__(name, argv, log)
        self.down_until = 0.0  # killed on purpose: not started again before then
        self.killed = False
        self.starts = 0
        self.started_at = 0.0  # monotonic, of the process running now

    def again(self) -> None:
        """Start it (again, once the one before has been reaped)."""
        self.stop(grace=0)  # reaps one that exited by itself
        self.launch()
        self.started_at = time.monotonic()
        self.starts += 1

    @property
    def live_pid(self) -> int | None:
        return self.pid if self.running else None

    def kill9(self, restart_after: float) -> None:
        self.killed, self.down_until = True, time.monotonic() + restart_after
        if self.running:
            self.kill()


def plot(
    path: Path, samples: list[dict[str, Any]], faults: list[Fault], names: list[str], title: str
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "hoststate-soak"  # the same run, the same file
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.6))
    for name in names:
        for pid in dict.fromkeys(s["pid"] for s in samples if s["replica"] == name):
            mine = [s for s in samples if s["replica"] == name and s["pid"] == pid]
            first = pid == next(s["pid"] for s in samples if s["replica"] == name)
            ax.plot(
                [s["t"] / 60 for s in mine],
                [s["rss_mb"] for s in mine],
                marker=".",
                color=f"C{names.index(name)}",
                label=name if first else None,
            )
    for fault in faults:
        ax.axvline(fault.at / 60, color="grey", linestyle=":", linewidth=1)
        if fault.ended > fault.at:  # until its effect is over (a killed replica's hosts moved)
            ax.axvspan(fault.at / 60, fault.ended / 60, color="grey", alpha=0.12, linewidth=0)
        ax.annotate(
            FAULT_LABELS[fault.kind],
            (fault.at / 60, 0.03),
            xycoords=("data", "axes fraction"),
            rotation=90,
            va="bottom",
            ha="right",
            fontsize=8,
            color="grey",
        )
    ax.set_xlabel("minutes")
    ax.set_ylabel("RSS (MB)")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    svg = path.suffix == ".svg"  # without its date, the same run draws the same file
    fig.savefig(path, metadata={"Date": None} if svg else None)
    plt.close(fig)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--duration", type=duration, default=7200.0, help="e.g. 20m, 2h")
    p.add_argument("--hosts", type=int, default=30, help="the steady fleet")
    p.add_argument("--churn-every", type=duration, default=20.0)
    p.add_argument("--wave-every", type=duration, default=180.0)
    p.add_argument("--max-unavailable", type=int, default=4, help="per pool, in a wave")
    p.add_argument("--faults", type=int, default=None, help="default: one per 20 min, >= 3")
    p.add_argument("--outage", type=duration, default=120.0, help="the backend refusing")
    p.add_argument(
        "--restart-after",
        type=duration,
        default=None,
        help="after a kill -9 (default: twice --lease-duration and 10 s: its hosts move)",
    )
    p.add_argument("--stuck-after", type=duration, default=90.0)
    p.add_argument("--lease-duration", type=int, default=15)
    p.add_argument("--sample-every", type=duration, default=60.0)
    p.add_argument(
        "--warmup", type=duration, default=120.0, help="of a process, left out of slopes"
    )
    p.add_argument("--settle", type=duration, default=180.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path("soak.json"))
    p.add_argument("--svg", type=Path, default=None)
    args = p.parse_args()
    if args.restart_after is None:
        args.restart_after = 2.0 * args.lease_duration + 10.0

    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    workdir = Path(tempfile.mkdtemp(prefix="soak-"))
    try:
        return run(args, workdir)
    except KeyboardInterrupt:
        print("interrupted: everything started is stopped", file=sys.stderr)
        return 130
    finally:  # the logs and the backend's file are kept; etcd's data (100 MB a run) not
        shutil.rmtree(workdir / "plane" / "etcd-data", ignore_errors=True)


def run(args: argparse.Namespace, workdir: Path) -> int:
    rng = random.Random(args.seed)
    names = [f"soak-{i}" for i in range(args.replicas)]
    faults = schedule(args, rng, names)
    hardware_path = workdir / "hardware.db"
    replicas: list[Replica] = []
    samples: list[dict[str, Any]] = []
    exits: list[Exit] = []
    stop = threading.Event()  # the threads that watch and sample
    end = threading.Event()  # the faults' thread, once the replicas are stopped
    threads: list[threading.Thread] = []
    injector: threading.Thread | None = None
    with control_plane("soak", workdir / "plane") as plane:
        kubeconfig = str(plane.kubeconfig)
        stuck = [f"{name}={int(args.stuck_after)}s" for name in STUCK_NAMES]
        lease = args.lease_duration
        for name in names:
            argv = shard_argv(
                name,
                shards=",".join(names),
                kubeconfig=plane.kubeconfig,
                namespace=NS,
                lease_namespace=STATE_NS,
                lease_duration=lease,
                timings="demo",
                hardware=hardware_path,
                nodes=True,
                extra=tuple(f"--stuck-after={s}" for s in stuck),
            )
            replicas.append(Replica(name, argv, workdir / f"{name}.log"))
        try:
            for replica in replicas:
                replica.again()
            started_wall, t0 = time.time(), time.monotonic()
            print(
                f"soak: {args.replicas} replicas sharing {hardware_path}, "
                f"{clock_text(args.duration)}, {args.hosts} hosts churning every "
                f"{args.churn_every:.0f}s, waves every {clock_text(args.wave_every)}, seed "
                f"{args.seed}; logs in {workdir}",
                flush=True,
            )
            print(
                "faults planned: " + ", ".join(f"{f.kind} at {clock_text(f.at)}" for f in faults),
                flush=True,
            )

            world = World(KubeCluster.from_kubeconfig(kubeconfig), args, rng)
            account = {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "default", "namespace": NS},
            }
            world.kube.create(SERVICE_ACCOUNTS, account)  # no controller makes it here
            recorder = Recorder(KubeCluster.from_kubeconfig(kubeconfig), started_wall)

            def loop(every: float, body: Any, what: str) -> None:
                failing = False  # told once per streak of failures
                while not stop.is_set():
                    try:
                        body()
                        failing = False
                    except Exception as err:
                        if not failing:
                            print(f"  ({what}: {type(err).__name__}: {str(err)[:100]})")
                        failing = True
                    stop.wait(every)

            def supervise() -> None:
                now = time.monotonic()
                for replica in replicas:
                    code = replica.exited()
                    if (replica.popen is not None and code is None) or now < replica.down_until:
                        continue
                    if not replica.killed:
                        exits.append(Exit(replica.shard, now - t0, code))
                        print(
                            f"  [{clock_text(now - t0)}] {replica.shard} exited ({code}); "
                            "started again",
                            flush=True,
                        )
                    replica.killed = False
                    replica.again()

            def sample() -> None:
                now = time.monotonic() - t0
                parts = []
                for replica in replicas:
                    pid = replica.live_pid
                    got = proc_sample(pid)
                    if pid is None or got is None:
                        parts.append(f"{replica.shard} (down)")
                        continue
                    rss, nthreads = got.rss_mb, got.threads
                    samples.append(
                        {
                            "t": round(now, 1),
                            "replica": replica.shard,
                            "pid": pid,
                            "age": round(time.monotonic() - replica.started_at, 1),
                            "rss_mb": round(rss, 1),
                            "threads": nthreads,
                        }
                    )
                    parts.append(f"{replica.shard} {rss:.0f} MB {nthreads} thr")
                print(
                    f"[{clock_text(now)}] "
                    + " | ".join(parts)
                    + f" | hosts {len(world.hosts)} (deleted {world.deleted_hosts}), "
                    f"nodes {len(world.nodes)}, waves {world.waves}",
                    flush=True,
                )

            threads = [
                threading.Thread(target=loop, args=(1.0, supervise, "supervisor"), daemon=True),
                threading.Thread(target=loop, args=(3.0, recorder.read, "recorder"), daemon=True),
            ]
            for thread in threads:
                thread.start()

            def inject(fault: Fault) -> None:
                began = time.monotonic()
                if fault.kind == "kill":
                    victim = next(r for r in replicas if r.shard == fault.target)
                    victim.kill9(args.restart_after)
                    fault.what = (
                        f"kill -9 {victim.shard}, started again {args.restart_after:.0f}s later"
                    )
                    fault.ended = time.monotonic() - t0 + args.restart_after + 2 * lease
                elif fault.kind == "apiserver":
                    plane.restart_apiserver()
                    took = time.monotonic() - began
                    fault.what = f"kube-apiserver restarted (down {took:.1f}s)"
                    fault.ended = time.monotonic() - t0
                else:
                    backend = HardwareFile(hardware_path)
                    backend.refuse(args.outage, "switched off by the soak run")
                    backend.close()
                    fault.what = f"provisioner refusing every call for {args.outage:.0f}s"
                    fault.ended = fault.at + args.outage
                print(f"  [{clock_text(fault.at)}] fault: {fault.what}", flush=True)

            def inject_all() -> None:
                """Each fault at its moment. kube-apiserver, once restarted here, lives as
                long as this thread (the control plane's processes get SIGKILL when the
                thread that started them ends): it waits for the very end."""
                for fault in faults:
                    if end.wait(max(0.0, fault.at - (time.monotonic() - t0))):
                        return
                    fault.at = time.monotonic() - t0
                    try:
                        inject(fault)
                    except Exception as err:
                        fault.what = f"{fault.kind} failed: {type(err).__name__}: {err}"
                        print(f"  [{clock_text(fault.at)}] {fault.what}", flush=True)
                end.wait()

            injector = threading.Thread(target=inject_all, daemon=True)
            injector.start()
            next_sample = args.sample_every
            while time.monotonic() - t0 < args.duration:
                if time.monotonic() - t0 >= next_sample:
                    sample()
                    next_sample += args.sample_every
                world.tick(time.monotonic())
                time.sleep(0.2)

            # the end: no more churn nor waves; the update under way finishes, all settles
            world.churning = False
            settle_end = time.monotonic() + args.settle
            left: list[str] = ["(not checked)"]
            while time.monotonic() < settle_end:
                world.tick(time.monotonic())
                if world.all_done():
                    with contextlib.suppress(Exception):
                        left = unreconciled(world.kube, world, names)
                        if not left:
                            break
                if time.monotonic() - t0 >= next_sample:
                    sample()
                    next_sample += args.sample_every
                time.sleep(0.5)
            settled = time.monotonic() - t0 - args.duration
            time.sleep(4.0)  # a last read of every HostState
            stop.set()
            for thread in threads:
                thread.join(timeout=30)
            recorder.read()
            report(args, names, samples, faults, exits, recorder, world, left, settled)
            return 0
        finally:
            stop.set()
            for replica in replicas:
                replica.stop()
            end.set()
            if injector is not None:
                injector.join(timeout=30)


def report(
    args: argparse.Namespace,
    names: list[str],
    samples: list[dict[str, Any]],
    faults: list[Fault],
    exits: list[Exit],
    recorder: Recorder,
    world: World,
    left: list[str],
    settled: float,
) -> None:
    print(
        f"\nsoak over: {clock_text(args.duration)}, {len(names)} replicas, "
        f"{world.deleted_hosts + len(world.hosts)} hosts in all "
        f"({world.deleted_hosts} deleted on the way), {world.waves} update waves, "
        f"settled {settled:.0f}s after the end"
    )
    slopes = {}
    print(
        "RSS and threads per hour, least squares over each replica's longest-lived process "
        f"(its first {clock_text(args.warmup)} left out):"
    )
    for name in names:
        series = longest_series(samples, name, args.warmup)
        if not series:
            continue
        span = series[-1]["t"] - series[0]["t"]
        rss = slope([(s["t"], s["rss_mb"]) for s in series])
        thr = slope([(s["t"], s["threads"]) for s in series])
        slopes[name] = {
            "rss_mb_per_hour": round(rss, 2),
            "threads_per_hour": round(thr, 2),
            "minutes": round(span / 60, 1),
            "samples": len(series),
            "rss_mb_first": series[0]["rss_mb"],
            "rss_mb_last": series[-1]["rss_mb"],
            "threads_first": series[0]["threads"],
            "threads_last": series[-1]["threads"],
        }
        print(
            f"  {name}: RSS {rss:+.1f} MB/h ({series[0]['rss_mb']:.0f} -> "
            f"{series[-1]['rss_mb']:.0f} MB), threads {thr:+.1f}/h ({series[0]['threads']} -> "
            f"{series[-1]['threads']}), over {span / 60:.0f} min, {len(series)} samples"
        )
    # a killed replica's hosts have no live owner from the kill until they have moved
    ownerless = [
        (f.at, f.ended + 2 * args.lease_duration) for f in faults if f.kind == "kill" and f.ended
    ]
    checked = check_histories(recorder, world.updates_started, world.updates_done, ownerless)
    print(
        f"transitions: {checked['transitions']} over {checked['hosts']} hosts; "
        f"lost {len(checked['lost'])}, doubled {len(checked['doubled'])}"
    )
    for line in (checked["lost"] + checked["doubled"])[:20]:
        print(f"  {line}")
    if checked["unseen"]:
        print(
            f"update steps a Node passed while its host had no live owner (a replica killed): "
            f"{len(checked['unseen'])}"
        )
        for line in checked["unseen"][:20]:
            print(f"  {line}")
    print(f"hosts unreconciled at the end: {len(left)}")
    for line in left[:20]:
        print(f"  {line}")
    for report_ in recorder.stuck:
        report_.cause = explain(report_, faults, grace=2 * args.lease_duration + 30)
    unexplained = [s for s in recorder.stuck if not s.cause]
    print(
        f"stuck reports: {len(recorder.stuck)}, with no fault to explain them: {len(unexplained)}"
    )
    for s in recorder.stuck[:20]:
        print(
            f"  {clock_text(s.at)} {s.host} {s.what} (entered {clock_text(s.entered)}): "
            f"{s.cause or 'NO CAUSE'}"
        )
    print("faults injected:")
    for fault in faults:
        print(f"  {clock_text(fault.at)} {fault.what or fault.kind + ' (not reached)'}")
    for e in exits:
        e.cause = next(
            (
                f"{f.kind} at {clock_text(f.at)}"
                for f in faults
                if f.ended and f.at <= e.at <= f.ended + 2 * args.lease_duration
            ),
            "",
        )
    print(
        f"replicas that exited by themselves: {len(exits)}, with no fault to explain it: "
        f"{sum(1 for e in exits if not e.cause)}"
        + "".join(
            f"\n  {clock_text(e.at)} {e.replica} exit code {e.code}: {e.cause or 'NO CAUSE'}"
            for e in exits
        )
    )
    out = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "samples": samples,
        "slopes": slopes,
        "faults": [asdict(f) for f in faults],
        "exits": [asdict(e) for e in exits],
        "stuck": [asdict(s) for s in recorder.stuck],
        "transitions": checked,
        "histories": {
            name: [
                [r["seq"], r.get("chapter", ""), r.get("from", ""), r["to"], r.get("reason", "")]
                for _, r in sorted(records.items())
            ]
            for name, records in sorted(recorder.records.items())
        },
        "unreconciled": left,
        "hosts": world.deleted_hosts + len(world.hosts),
        "deleted": world.deleted_hosts,
        "waves": world.waves,
        "updates": sum(world.updates_done.values()),
    }
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"samples and results in {args.out}")
    if args.svg is not None:
        title = (
            f"{len(names)} replicas, {args.hosts} hosts churning, "
            f"{world.waves} update waves, {len(faults)} faults"
        )
        plot(args.svg, samples, faults, names, title)
        print(f"RSS over time drawn in {args.svg}")


if __name__ == "__main__":
    sys.exit(main())
