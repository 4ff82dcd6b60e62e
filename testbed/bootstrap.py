"""What the bootstrap and pivot tests share: a hosts file, the bootstrap process, reading
the state dir from outside, and the checks every moved history must pass."""

from __future__ import annotations

import itertools
import json
import os
import signal
import sqlite3
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, HOSTSTATES, Cluster
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.processes import CLI
from testbed.scenarios import states_in
from tests.conftest import wait_for


def write_hosts_file(path: Path, namespace: str, count: int) -> list[str]:
    """Hosts ``host-0000``… with their BMC Secrets, as a user writes them; their names."""
    docs: list[dict[str, Any]] = []
    names = []
    for index in range(count):
        host = host_manifest(namespace, index)
        name = host["metadata"]["name"]
        docs += [host, secret_manifest(namespace, f"{name}-bmc", "admin", f"pw-{index}")]
        names.append(name)
    path.write_text(yaml.safe_dump_all(docs))
    return names


def store_objects(state_dir: Path, resource: Any = HOSTSTATES) -> dict[str, dict[str, Any]]:
    """The objects a running (or stopped) bootstrap keeps, read as another process would."""
    if not (state_dir / "cluster.db").exists():
        return {}  # not started yet
    with EmbeddedCluster(path=state_dir / "cluster.db", read_only=True) as store:
        return {o["metadata"]["name"]: o for o in store.list(resource, None)[0]}


def store_states(state_dir: Path) -> dict[str, str]:
    return {
        name: ((h.get("status") or {}).get("provisioning") or {}).get("state", "")
        for name, h in store_objects(state_dir, HOSTS).items()
    }


def machines(state_dir: Path) -> dict[str, dict[str, Any]]:
    """The simulated machines as the state dir keeps them (operations started, by name)."""
    db = sqlite3.connect(f"file:{state_dir / 'cluster.db'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT address, body FROM simulated_machines").fetchall()
    finally:
        db.close()
    return {address: json.loads(body) for address, body in rows}


class Bootstrap:
    """``state-controller bootstrap`` as its own process, its output in a log file."""

    def __init__(self, state_dir: Path, log: Path, extra: Sequence[str] = ()) -> None:
        self.state_dir, self.log, self.extra = state_dir, log, list(extra)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        argv = [
            *CLI, "bootstrap",
            "--state-dir", str(self.state_dir), "--metrics-bind-address", "127.0.0.1:0",
            "--no-table", *self.extra, *args,
        ]  # fmt: skip
        with self.log.open("a") as log:
            self.proc = subprocess.Popen(
                argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
            )
        return self.proc

    def kill9(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill9()
            raise AssertionError(f"bootstrap did not exit in {timeout}s:\n{self.tail()}") from None

    def stacks(self) -> str:
        """Every thread's stack (SIGQUIT: the CLI's faulthandler), then the log's tail; for
        a process already gone, how it ended (a negative code: the signal that ended it)."""
        assert self.proc is not None
        ended = self.proc.poll()
        if ended is not None:
            return f"exited with code {ended}\n" + "\n".join(
                self.log.read_text().splitlines()[-200:]
            )
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            seen: list[str] = []

            def dumped() -> bool:  # the thread that took the signal is shown, and all is out
                seen.append(self.log.read_text())
                return "Current thread 0x" in seen[-1] and seen[-2:] == [seen[-1]] * 2

            wait_for(dumped, timeout=60, what="the threads' stacks in the log")
        return "\n".join(self.log.read_text().splitlines()[-200:])

    def tail(self) -> str:
        return "\n".join(self.log.read_text().splitlines()[-30:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill9()


@contextmanager
def bootstrap_process(state_dir: Path, log: Path, extra: Sequence[str] = ()) -> Iterator[Bootstrap]:
    boot = Bootstrap(state_dir, log, extra)
    try:
        yield boot
    finally:
        boot.stop()


def assert_continuous(hoststate: dict[str, Any], *, pivots: int) -> list[dict[str, Any]]:
    """One story with no gap: seq 1…n, each ``from`` the previous ``to``, the chapters in
    order from bootstrap, and the arrival recorded once per move. Its history."""
    status = hoststate["status"]
    name = hoststate["metadata"]["name"]
    history = status["history"]
    assert [h["seq"] for h in history] == list(range(1, len(history) + 1)), name
    for before, after in itertools.pairwise(history):
        assert after["from"] == before["to"], (name, before, after)
    chapters = [c["name"] for c in status["chapters"]]
    story = ["bootstrap", "registration", "inspection", "preparation", "provisioning"]
    assert chapters[:5] == story, (name, chapters)
    reasons = [h["reason"] for h in history]
    assert reasons[0] == "Bootstrap" and reasons.count("Pivoted") == pivots, (name, reasons)
    for once in ("Registering", "Registered", "InspectionComplete", "ProvisioningComplete"):
        assert reasons.count(once) == 1, (name, once, reasons)  # nothing done twice
    assert "Adopted" not in reasons, (name, reasons)
    return list(history)


def provisioned(cluster: Cluster, namespace: str, names: Sequence[str]) -> bool:
    """Every host named is provisioned, as its Host.status says."""
    now = states_in(cluster, namespace, names, reported=False)
    return all(state == "provisioned" for state in now.values())


def arrived(cluster: Cluster, namespace: str, names: Sequence[str], pivots: int) -> bool:
    """Every HostState records its arrival ``pivots`` times, and says it is in a cluster."""
    states = {s["metadata"]["name"]: s for s in cluster.list(HOSTSTATES, namespace)[0]}
    for name in names:
        status = states.get(name, {}).get("status") or {}
        reasons = [h["reason"] for h in status.get("history") or ()]
        if reasons.count("Pivoted") != pivots or status.get("mode") != "Cluster":
            return False
    return True


def wait_settled_in_store(state_dir: Path, names: Sequence[str], timeout: float) -> None:
    wait_for(
        lambda: all(store_states(state_dir).get(n) == "provisioned" for n in names),
        timeout=timeout,
        what="the bootstrap's hosts provisioned",
    )
