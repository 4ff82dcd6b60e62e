"""What ``benchmarks.shard_scale`` reads while it runs: each replica's metrics and ``/proc``, the
Hosts' states and labels (a watch), the Leases and the controller's status, kube-apiserver's
own count of writes, and what the control plane and the machine spent.
"""

from __future__ import annotations

import argparse
import os
import re
import threading
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.harness import NS, Failed
from state_controller.cluster.interface import HOSTS
from state_controller.cluster.kube import KubeCluster
from state_controller.runtime.machinery.informer import Informer
from state_controller.sharding.leases import SHARD_LABEL
from testbed.control_plane import ControlPlane
from testbed.processes import free_port
from testbed.shards import (
    SHARD_NS,
    ProcSample,
    ShardProcess,
    proc_sample,
    shard_argv,
)

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
WRITES = ("POST", "PUT", "PATCH", "DELETE")
SERVER_WRITES = (*WRITES, "APPLY")
# seconds: the sharder's round when nothing changes (runtime/shards/sharder.py)
SHARDER_RESYNC = 2.0
AT_REST = 6.0  # seconds of requests at rest, measured before a kill
Counts = dict[str, float]  # requests by method, or by "VERB resource"
LABELS = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
ASSIGNED = re.compile(r"sharding \S+: assign")


# -- the replicas --------------------------------------------------------------------------


@dataclass
class Scrape:
    """What one scrape of a replica's /metrics says."""

    requests: Counts = field(default_factory=dict)  # by HTTP method
    books: set[str] = field(default_factory=set)  # "namespace/host" of each book it keeps


def parse_metrics(text: str) -> Scrape:
    scrape = Scrape()
    for line in text.splitlines():
        if line.startswith("rest_client_requests_total{"):
            labels, _, value = line[len("rest_client_requests_total{") :].rpartition("} ")
            method = dict(LABELS.findall(labels)).get("method", "?")
            add(scrape.requests, {method: float(value)})
        elif line.startswith("hoststate_host_state{"):
            book = dict(LABELS.findall(line[len("hoststate_host_state{") :].rpartition("} ")[0]))
            scrape.books.add(f"{book.get('namespace')}/{book.get('host')}")
    return scrape


class Replica(ShardProcess):
    """A replica with its metrics served on a port of its own, its peak RSS and CPU
    sampled while it runs."""

    def __init__(self, name: str, workdir: Path, kubeconfig: Path, args: argparse.Namespace):
        self.port = free_port()
        argv = shard_argv(
            name,
            shards=",".join(f"r{i}" for i in range(64)),  # the names shard_scale gives
            kubeconfig=kubeconfig,
            namespace=NS,
            lease_namespace=SHARD_NS,
            lease_duration=args.lease_duration,
            timings=args.timings,
            hardware=workdir / "hardware.db",
            workers=args.workers,
            metrics=f"127.0.0.1:{self.port}",
        )
        super().__init__(name, argv, workdir / f"replica-{name}.log")
        self.launch(die_with_parent=True)  # should this process die without cleaning up
        self.peak_kb = 0
        self.cpu = 0.0

    def alive(self) -> bool:
        return self.running

    def sample(self) -> None:
        """Its peak RSS (VmHWM) and CPU seconds so far; nothing once it has exited."""
        got = proc_sample(self.pid if self.running else None)
        if got is not None:
            self.peak_kb = max(self.peak_kb, int(got.peak_rss_mb * 1024))
            self.cpu = got.cpu_s

    def scrape(self) -> Scrape:
        url = f"http://127.0.0.1:{self.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as answer:
            return parse_metrics(answer.read().decode())

    def log_offset(self) -> int:
        return self.log_path.stat().st_size

    def assigned_since(self, offset: int) -> int:
        """The sharder's assignments this replica logged after ``offset``."""
        with self.log_path.open("rb") as log:
            log.seek(offset)
            return len(ASSIGNED.findall(log.read().decode(errors="replace")))

    def tail(self, lines: int = 30) -> str:
        return self.log_tail(lines)

    def kill(self) -> None:
        """SIGKILL to its process group, and reaped, its last figures taken first."""
        self.sample()
        super().kill()


# -- what the cluster says -----------------------------------------------------------------


class Fleet:
    """Each Host's provisioning state and shard label, followed by a watch."""

    def __init__(self, admin: KubeCluster) -> None:
        self.state: dict[str, str] = {}
        self.shard: dict[str, str] = {}
        self.lock = threading.Lock()
        self.informer = Informer(admin, HOSTS, NS, handlers=[self._on])

    def _on(self, key: str, host: dict[str, Any] | None) -> None:
        with self.lock:
            if host is None:
                self.state.pop(key, None)
                self.shard.pop(key, None)
                return
            self.state[key] = ((host.get("status") or {}).get("provisioning") or {}).get(
                "state", ""
            )
            self.shard[key] = (host["metadata"].get("labels") or {}).get(SHARD_LABEL, "")

    def provisioned(self) -> int:
        with self.lock:
            return sum(1 for state in self.state.values() if state == "provisioned")

    def owners(self) -> dict[str, str]:
        with self.lock:
            return dict(self.shard)


def sampled(replicas: dict[str, Replica]) -> Callable[[], None]:
    """What to do while waiting with ``replicas`` running: sample each one's peak RSS and
    CPU, and fail if one of them has exited on its own."""

    def sample() -> None:
        for replica in replicas.values():
            replica.sample()
            if not replica.alive():
                raise Failed(
                    f"replica {replica.shard} exited ({replica.exited()}):\n{replica.tail()}"
                )

    return sample


def scrape_all(replicas: dict[str, Replica]) -> dict[str, Scrape]:
    return {name: replica.scrape() for name, replica in replicas.items()}


def add(into: Counts, counts: Counts) -> Counts:
    for key, value in counts.items():
        into[key] = into.get(key, 0.0) + value
    return into


def total(scrapes: dict[str, Scrape]) -> Counts:
    out: Counts = {}
    for scrape in scrapes.values():
        add(out, scrape.requests)
    return out


def minus(after: Counts, before: Counts) -> Counts:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0)}


def by_method(counts: Counts, per: float = 1.0, digits: int = 2) -> str:
    def shows(value: float) -> bool:
        return bool(round(value / per, digits))

    shown = [f"{m} {counts[m] / per:.{digits}f}" for m in METHODS if shows(counts.get(m, 0.0))]
    shown += [
        f"{m} {v / per:.{digits}f}" for m, v in counts.items() if m not in METHODS and shows(v)
    ]
    return ", ".join(shown) or "none"


def writes(counts: Counts) -> float:
    return sum(counts.get(m, 0.0) for m in WRITES)


def server_writes(plane: ControlPlane) -> Counts:
    """The writes kube-apiserver counted (``apiserver_request_total``), by "VERB
    resource[/subresource]": every client's, whichever client library made them."""
    url = f"{plane.url}/metrics"
    with urllib.request.urlopen(url, context=plane.ssl_context(), timeout=30) as answer:
        text = answer.read().decode()
    out: Counts = {}
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{"):
            labels, _, value = line[len("apiserver_request_total{") :].rpartition("} ")
            found = dict(LABELS.findall(labels))
            verb, resource = found.get("verb", ""), found.get("resource", "")
            if verb in SERVER_WRITES and resource:
                sub = found.get("subresource")
                add(out, {f"{verb} {resource}{'/' + sub if sub else ''}": float(value)})
    return out


def machine_cpu() -> tuple[float, float]:
    """The machine's busy and total CPU seconds so far, over every core (``/proc/stat``:
    idle and iowait are not busy)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(fields) - fields[3] - fields[4]) / tick, sum(fields) / tick


def etcd_db_mb(plane: ControlPlane) -> float:
    """The size of etcd's database file (``etcd_mvcc_db_total_size_in_bytes``)."""
    with urllib.request.urlopen(f"{plane.etcd_url}/metrics", timeout=30) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith("etcd_mvcc_db_total_size_in_bytes "):
                return float(line.split()[1]) / 2**20
    return 0.0


@dataclass
class PlaneUse:
    """What the control plane and the machine spent between two moments: each control
    plane process's CPU seconds and peak RSS, etcd's database, the machine's busy share
    of its cores. What sets the limit shows here: a busy share near 1 is CPU."""

    cpu: dict[str, float]
    peak_mb: dict[str, float]
    etcd_mb: float
    busy: float  # the machine's busy CPU seconds over all its CPU seconds

    @staticmethod
    def now(plane: ControlPlane) -> tuple[dict[str, ProcSample], tuple[float, float]]:
        samples = {name: proc_sample(pid) for name, pid in plane.pids().items()}
        return {k: v for k, v in samples.items() if v is not None}, machine_cpu()

    @classmethod
    def since(
        cls, plane: ControlPlane, before: tuple[dict[str, ProcSample], tuple[float, float]]
    ) -> PlaneUse:
        (was, (busy0, total0)), (now, (busy1, total1)) = before, cls.now(plane)
        return cls(
            cpu={k: v.cpu_s - was[k].cpu_s for k, v in now.items() if k in was},
            peak_mb={k: v.peak_rss_mb for k, v in now.items()},
            etcd_mb=etcd_db_mb(plane),
            busy=(busy1 - busy0) / max(total1 - total0, 1e-9),
        )

    def __str__(self) -> str:
        procs = "; ".join(
            f"{name} peak RSS {self.peak_mb[name]:.0f} MB, CPU {cpu:.0f}s"
            for name, cpu in self.cpu.items()
        )
        return f"{procs}; etcd's database {self.etcd_mb:.0f} MB; the machine busy {self.busy:.0%}"


def by_resource(counts: Counts, per: float = 1.0, digits: int = 2) -> str:
    shown = sorted(((v, k) for k, v in counts.items() if round(v / per, digits)), reverse=True)
    return ", ".join(f"{k} {v / per:.{digits}f}" for v, k in shown) or "none"
