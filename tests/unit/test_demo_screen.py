"""The demo's live table on a real terminal (a pseudo-terminal of 24 by 80): every frame
fits, keeps its header and the metrics line, and a fleet taller than the screen is
summarised, the rows that need attention first."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import termios
import time
from pathlib import Path

from tests.support.bootstrap import write_hosts_file
from tests.support.processes import CLI

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
ROWS, COLUMNS = 24, 80


def on_terminal(*args: str, stderr_too: bool = False) -> str:
    """What `state-controller ARGS` writes to a pseudo-terminal of ROWS by COLUMNS, until
    it exits (successfully)."""
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    # the size must come from the terminal itself, not from the variables that override it
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        [*CLI, *args],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower if stderr_too else subprocess.DEVNULL,
        cwd=ROOT,
        env=env,
    )
    os.close(follower)
    output = b""
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the demo exited
                break
            if not chunk:
                break
            output += chunk
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        os.close(leader)
    return output.decode(errors="replace")


def test_every_frame_fits_the_terminal_and_keeps_the_metrics_line() -> None:
    output = on_terminal(
        "demo", "--hosts", "40", "--no-upgrade", "--speed", "10", "--faults", "--exit-when-settled",
        "--timeout", "90",
    )  # fmt: skip
    frames = [f for f in output.split("\x1b[H\x1b[2J") if f.strip()]
    assert len(frames) >= 3
    for frame in frames:
        lines = ANSI.sub("", frame).replace("\r", "").rstrip("\n").split("\n")
        assert len(lines) < ROWS, lines
        assert max(len(line) for line in lines) <= COLUMNS
        assert lines[0].startswith("NAME") and lines[-1].startswith("metrics: http://127.0.0.1:")
    last = ANSI.sub("", frames[-1])
    assert "more not shown" in last  # 40 hosts do not fit in 24 lines


def test_console_traces_are_not_wiped_by_the_table() -> None:
    text = on_terminal(
        "demo", "--hosts", "2", "--no-upgrade", "--speed", "10", "--exit-when-settled",
        "--timeout", "60", "--trace", "console", stderr_too=True,
    )  # fmt: skip
    assert "\x1b[2J" not in text  # no screen cleared over the spans
    assert '"name": "reconcile"' in text and "2/2 hosts provisioned" in text


def test_bootstrap_shows_the_demos_live_table(tmp_path: Path) -> None:
    """bootstrap's screen is the demo's: frames that fit, the HostStates of every
    namespace in the store, the progress line and where /metrics is."""
    write_hosts_file(tmp_path / "hosts.yaml", "metal", 30)
    output = on_terminal(
        "bootstrap", "--hosts", str(tmp_path / "hosts.yaml"), "--state-dir",
        str(tmp_path / "state"), "--metrics-bind-address", "127.0.0.1:0",
        "--exit-when-settled", "--timeout", "90",
    )  # fmt: skip
    frames = [f for f in output.split("\x1b[H\x1b[2J") if f.strip()]
    assert len(frames) >= 3
    for frame in frames:
        lines = ANSI.sub("", frame).replace("\r", "").rstrip("\n").split("\n")
        assert len(lines) < ROWS and max(len(line) for line in lines) <= COLUMNS, lines
        assert lines[0].startswith("NAME") and lines[-1].startswith("metrics: http://127.0.0.1:")
        assert "hosts at their goal" not in lines[0] and "at their goal" in lines[-2]
    assert "host-0000" in ANSI.sub("", frames[-1])
