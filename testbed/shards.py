"""``state-controller run --shard NAME`` in a process of its own: the replica that the
sharded process tests, ``benchmarks/shard_scale.py`` and ``benchmarks/soak.py`` start.

One command line for all three (:func:`shard_argv`), each replica a
:class:`~testbed.processes.ServerProcess` (its own process group, its output in a
log, stopped with SIGTERM then SIGKILL, killed with SIGKILL as a crash), what
``/proc`` says of it (:func:`proc_sample`), and what the replicas say through the API
server: who holds a Lease (:func:`lease_holder`), how many hosts each has
(:func:`shard_members`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from state_controller.cluster.interface import CONTROLLERS, LEASES, Cluster, NotFound

from .processes import ServerProcess

ROOT = Path(__file__).resolve().parents[1]
SHARD_NS = "hoststate-system"  # the replicas' Leases, and the name of their status object


def election_periods(lease: int) -> tuple[int, int]:
    """--renew-deadline and --retry-period for a Lease duration (15: the defaults 10, 2;
    4: 3 and 1)."""
    renew = max(2, min(lease - 1, round(lease * 2 / 3)))
    retry = max(1, round(lease / 7.5))
    if renew <= 1.2 * retry:
        retry = 1
    return renew, retry


TEST_SHARDS = "a,b,c,d,e"  # the shards the process tests run (--shards)


def shard_argv(
    name: str,
    *,
    shards: str = TEST_SHARDS,
    kubeconfig: Path,
    namespace: str,
    lease_namespace: str,
    lease_duration: int,
    timings: str = "zero",
    hardware: Path | None = None,
    nodes: bool = False,
    node_state_namespace: str | None = None,
    workers: int | None = None,
    metrics: str = "0",
    extra: tuple[str, ...] = (),
) -> list[str]:
    """The replica's command line: ``hardware`` is one simulated backend shared with the
    replicas given the same file; ``nodes`` follows Nodes (else ``--no-nodes``), their
    node-only HostStates in ``node_state_namespace`` if given; ``shards`` is ``--shards``
    (every replica's shard: a Lease of another is no shard); ``metrics`` is the metrics
    address (``0``: none); ``extra`` goes at the end."""
    renew, retry = election_periods(lease_duration)
    argv = [
        sys.executable, "-m", "state_controller.cli", "run",
        "--kubeconfig", str(kubeconfig), "--namespace", namespace,
        "--simulated-timings", timings,
        "--shard", name, "--shards", shards, "--leader-election-namespace", lease_namespace,
        "--lease-duration", str(lease_duration), "--renew-deadline", str(renew),
        "--retry-period", str(retry),
        "--metrics-bind-address", metrics, "--health-probe-bind-address", "0",
    ]  # fmt: skip
    if hardware is not None:
        argv += ["--simulated-hardware", str(hardware)]
    if not nodes:
        argv += ["--no-nodes"]
    elif node_state_namespace is not None:
        argv += ["--node-state-namespace", node_state_namespace]
    if workers is not None:
        argv += ["--workers", str(workers)]
    return [*argv, *extra]


class ShardProcess(ServerProcess):
    """One replica: :meth:`launch` starts it (again, after it has ended), :meth:`stop`
    stops it as Kubernetes stops a pod, :meth:`kill` as a crash."""

    def __init__(self, name: str, argv: list[str], log_path: Path) -> None:
        super().__init__(f"shard {name}", log_path, stop_timeout=20)
        self.shard, self.argv = name, argv

    def launch(self, *, die_with_parent: bool = False) -> None:
        """Start it; with ``die_with_parent`` it is killed should this process die
        without stopping it (from a long-lived thread only: see ``ServerProcess.start``)."""
        self.start(self.argv, ROOT, die_with_parent=die_with_parent)

    def kill(self) -> None:
        """SIGKILL to its group, reaped."""
        self.stop(grace=0)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


@dataclass(frozen=True)
class ProcSample:
    rss_mb: float
    peak_rss_mb: float  # VmHWM
    threads: int
    cpu_s: float  # user and system


def proc_sample(pid: int | None) -> ProcSample | None:
    """What ``/proc`` says of a process now; None once it is gone."""
    if pid is None:
        return None
    with contextlib.suppress(OSError, ValueError, IndexError, KeyError):
        status = Path(f"/proc/{pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        stat = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return ProcSample(
            rss_mb=int(fields["VmRSS"].split()[0]) / 1024,
            peak_rss_mb=int(fields["VmHWM"].split()[0]) / 1024,
            threads=int(fields["Threads"]),
            cpu_s=(int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK"),
        )
    return None


def lease_holder(admin: Cluster, lease: str, namespace: str = SHARD_NS) -> str:
    """Who holds ``lease`` ("" when no one, or no such Lease)."""
    try:
        spec = admin.get(LEASES, namespace, lease).get("spec") or {}
    except NotFound:
        return ""
    return str(spec.get("holderIdentity") or "")


def shard_members(admin: Cluster, namespace: str = SHARD_NS) -> dict[str, int]:
    """Each replica's hosts, as the controller's own status lists them."""
    try:
        status = admin.get(CONTROLLERS, None, namespace).get("status") or {}
    except NotFound:
        return {}
    return {m["name"]: int(m.get("hosts") or 0) for m in status.get("members") or []}
