"""Servers the tests start on loopback: a free port, a process in its own group, readiness.

Shared by the Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager)
and the standalone Ironic. Each server runs in its own session/process group with its
output appended to a log file; stopping it signals the whole group (SIGTERM, then
SIGKILL), because servers such as Ironic's cotyledon workers outlive their master or
ignore SIGTERM while starting.

Stdlib only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from ssl import SSLContext
from types import TracebackType
from typing import Any, Self

__all__ = [
    "CLI",
    "LoopbackServer",
    "ServerProcess",
    "Servers",
    "cli",
    "free_port",
    "http_probe",
    "installed",
    "log_tail",
    "stop_session",
]

CLI = [sys.executable, "-m", "state_controller.cli"]
"""``state-controller`` as a user runs it, from the interpreter running the tests."""


TOOLS = Path(__file__).resolve().parents[1] / "tools"


def installed(tool: str, *, timeout: float = 1800) -> Path:
    """Where ``tools/<tool>/install.sh`` put its cached install (the script's last line on
    stdout; the first run installs, every later one finds the cache)."""
    done = subprocess.run(
        [str(TOOLS / tool / "install.sh")],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
        timeout=timeout,
    )
    return Path(done.stdout.strip().splitlines()[-1])


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """One ``state-controller`` command to its end: its exit code, stdout and stderr."""
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


# What a readiness probe says: None once the server is ready, else what it saw.
Probe = Callable[[], str | None]


PORT_IN_USE = "Address already in use"


def start_retrying_taken_port(
    start: Callable[[], None],
    new_port: Callable[[], None] | None,
    error: type[Exception],
    attempts: int = 3,
) -> None:
    """``start()`` a server on its port; free_port() is racy (another process may take the
    port before the server binds it), so a start that fails with ``error`` saying the
    port is in use is tried again on another one, ``new_port()`` — only for a port this
    process picked (``new_port`` None: the port was given, never changed)."""
    for attempt in range(1, attempts + 1):
        try:
            start()
            return
        except error as e:
            if new_port is None or PORT_IN_USE not in str(e) or attempt == attempts:
                raise
            new_port()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (racy, good enough for tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def log_tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log file, for an error message."""
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return "(no log file)"
    return "\n".join(text.splitlines()[-lines:])


def http_probe(
    url: str,
    *,
    timeout: float,
    context: SSLContext | None = None,
    ready: Callable[[bytes], bool] = lambda body: True,
) -> Probe:
    """A probe that GETs ``url``: ready on a 200 whose body ``ready`` accepts.

    An error status reports the failed checks a Kubernetes ``/readyz`` lists (``[-]…``);
    a connection error or a body ``ready`` cannot parse (ValueError) reports itself.
    """

    def probe() -> str | None:
        try:
            with urllib.request.urlopen(url, timeout=timeout, context=context) as resp:
                body = resp.read()
                if resp.status == 200 and ready(body):
                    return None
                return f"HTTP {resp.status}: {body.decode(errors='replace')[-300:]}"
        except urllib.error.HTTPError as e:  # 500 + list of failed checks while starting
            text = e.read().decode(errors="replace")
            failed = [ln for ln in text.splitlines() if ln.startswith("[-]")]
            return f"HTTP {e.code}: {' '.join(failed) or text[-300:]}"
        except (OSError, ValueError) as e:  # refused, timed out, bad JSON
            return str(e)

    return probe


class Servers:
    """What a test starts and must stop: ``with`` starts it and stops it again."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class LoopbackServer(Servers):
    """A server a test runs on loopback from its own config files, in one
    :class:`ServerProcess`: the port is picked once and kept across ``stop()``/``start()``
    (a port taken by another process meanwhile is picked again, the config rewritten).

    A subclass sets ``host``, ``port``, ``workdir``, ``_process`` and ``error`` in its
    ``__init__`` (then calls :meth:`_port_not_picked`), and gives :meth:`_write_config`
    (what depends on the port), :meth:`_prepare` (what is made once before a start:
    directories, a schema, a password file) and :meth:`_start_once`.
    """

    host: str
    port: int | None
    workdir: Path
    _process: ServerProcess
    error: type[Exception] = RuntimeError

    def _port_not_picked(self) -> None:
        self._port_was_picked = False

    @property
    def url(self) -> str:
        """``http://HOST:PORT``: the server's root."""
        if self.port is None:
            raise self.error(f"{type(self).__name__} has not been started")
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._process.running

    @property
    def pid(self) -> int | None:
        """PID of the server's process (also its process group id)."""
        return self._process.pid

    def start(self) -> None:
        """Pick the port (once), write the config, prepare, start, wait until it answers."""
        if self._process.popen is not None:
            raise self.error(f"{self._process.name} is already running; stop() it first")
        self.workdir.mkdir(parents=True, exist_ok=True)
        pick_port = self.port is None or self._port_was_picked
        if self.port is None:
            self.port = free_port(self.host)
            self._port_was_picked = True
        self._write_config()
        self._prepare()
        start_retrying_taken_port(
            self._start_once, self._new_port if pick_port else None, self.error
        )

    def _new_port(self) -> None:
        self.port = free_port(self.host)
        self._write_config()

    def stop(self, grace: float | None = None) -> None:
        """SIGTERM the process group, SIGKILL whatever is left after ``grace`` seconds.

        ``grace`` defaults to the stop timeout; ``grace=0`` kills at once (a crash)."""
        self._process.stop(grace)

    def log_tail(self, lines: int = 40) -> str:
        return self._process.log_tail(lines)

    def _write_config(self) -> None:
        raise NotImplementedError

    def _prepare(self) -> None:
        raise NotImplementedError

    def _start_once(self) -> None:
        raise NotImplementedError


class ServerProcess:
    """One server process in its own session, logging to ``log_path``.

    Problems raise ``error`` (the caller's exception type, so its tests see one kind).
    """

    def __init__(
        self,
        name: str,
        log_path: Path,
        *,
        stop_timeout: float,
        error: type[Exception] = RuntimeError,
    ) -> None:
        self.name = name
        self.log_path = log_path
        self.stop_timeout = stop_timeout
        self.error = error
        self.popen: subprocess.Popen[bytes] | None = None
        self.last_exit: int | None = None  # the exit status of the one stopped last

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    @property
    def pid(self) -> int | None:
        """PID of the process (also its process group id)."""
        return self.popen.pid if self.popen is not None else None

    def exited(self) -> int | None:
        """Exit status if the process has ended, else None."""
        return None if self.popen is None else self.popen.poll()

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.log_path, lines)

    def start(
        self,
        argv: Sequence[str],
        cwd: Path,
        *,
        die_with_parent: bool = False,
        banner: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """Start ``argv``; ``banner`` (default: the command) marks the start in the log;
        ``env`` replaces the environment (default: this process's).

        With ``die_with_parent`` the process also gets SIGKILL if the Python process dies
        without cleaning up (``setpriv --pdeathsig``; Linux sends it when the *thread*
        that started it exits, so start it from a long-lived thread).
        """
        if self.popen is not None:
            raise self.error(f"{self.name} is already running; stop() it first")
        cmd = list(argv)
        setpriv = shutil.which("setpriv") if die_with_parent else None
        if setpriv is not None:
            cmd = [setpriv, "--pdeathsig", "KILL", "--", *cmd]
        with self.log_path.open("ab") as log:
            log.write(f"\n===== hoststate: {banner or ' '.join(argv)} =====\n".encode())
            log.flush()
            self.popen = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )

    def wait_ready(
        self,
        probe: Probe,
        *,
        timeout: float,
        not_ready: str,
        interval: float = 0.1,
        fatal: Probe = lambda: None,
    ) -> None:
        """Until ``probe`` says ready: raise if the process exits, ``fatal`` reports
        something (a dead dependency, a fatal log line), or ``timeout`` passes; the
        message then says ``{name} {not_ready} within …`` and ends with the log's tail."""
        deadline = time.monotonic() + timeout
        while True:
            rc = self.exited()
            if rc is not None:
                raise self.error(
                    f"{self.name} exited with status {rc} during startup; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            last = probe()
            if last is None:
                return
            problem = fatal()
            if problem is not None:
                raise self.error(problem)
            if time.monotonic() > deadline:
                raise self.error(
                    f"{self.name} {not_ready} within {timeout:.0f}s (last: {last}); "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(interval)

    def stop(self, grace: float | None = None) -> None:
        """SIGTERM the process group, SIGKILL whatever is left after ``grace`` seconds.

        ``grace`` defaults to ``stop_timeout``; ``grace=0`` kills at once (a crash).

        The leader is reaped only once its whole group is gone: until then it is a zombie
        whose pid, the group's id, no other process can be given. A signal to the group
        can so never reach a process that merely got the same number (pids wrap at 32,768
        here), such as the next test's freshly started process.
        """
        proc, self.popen = self.popen, None
        if proc is None:
            return
        pgid = proc.pid  # start_new_session=True: the process leads its group
        if grace is None:
            grace = self.stop_timeout
        if grace > 0:
            _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _group_running(pgid):
            time.sleep(0.05)
        if _group_running(pgid):
            _signal_group(pgid, signal.SIGKILL)
        deadline = time.monotonic() + self.stop_timeout
        while time.monotonic() < deadline and _group_running(pgid):
            time.sleep(0.05)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.last_exit = proc.wait(timeout=self.stop_timeout)  # the leader, reaped last
        if proc.poll() is None or _group_running(pgid):
            raise self.error(f"{self.name} (pid {pgid}) did not exit after SIGKILL")


def stop_session(proc: subprocess.Popen[Any], timeout: float = 15.0) -> None:
    """Stop a command started with ``start_new_session=True`` (``state-controller run``
    in a test): SIGTERM to its group, SIGKILL if it has not exited within ``timeout``."""
    if proc.poll() is None:
        _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_running(pgid: int) -> bool:
    """Whether a process of the group runs (a zombie does not: it only waits to be reaped)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        # after "pid (comm)": state, ppid, pgrp, ...
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False
