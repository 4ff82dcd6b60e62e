"""The demo's live table on a real terminal (a pseudo-terminal of 24 by 80): every frame
fits, keeps its header and the metrics line, and a fleet taller than the screen is
summarised, the rows that need attention first."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
ROWS, COLUMNS = 24, 80


def test_every_frame_fits_the_terminal_and_keeps_the_metrics_line() -> None:
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    env = {**os.environ, "COLUMNS": str(COLUMNS), "LINES": str(ROWS)}
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "state_controller.cli", "demo", "--hosts", "40",
            "--no-upgrade", "--speed", "10", "--faults", "--exit-when-settled",
            "--timeout", "90",
        ],
        stdin=subprocess.DEVNULL, stdout=follower, stderr=subprocess.DEVNULL, cwd=ROOT, env=env,
    )  # fmt: skip
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
    frames = [f for f in output.decode(errors="replace").split("\x1b[H\x1b[2J") if f.strip()]
    assert len(frames) >= 3
    for frame in frames:
        lines = ANSI.sub("", frame).replace("\r", "").rstrip("\n").split("\n")
        assert len(lines) < ROWS, lines
        assert max(len(line) for line in lines) <= COLUMNS
        assert lines[0].startswith("NAME") and lines[-1].startswith("metrics: http://127.0.0.1:")
    last = ANSI.sub("", frames[-1])
    assert "more not shown" in last  # 40 hosts do not fit in 24 lines


def test_console_traces_are_not_wiped_by_the_table() -> None:
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "state_controller.cli", "demo", "--hosts", "2",
            "--no-upgrade", "--speed", "10", "--exit-when-settled", "--timeout", "60",
            "--trace", "console",
        ],
        stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, cwd=ROOT,
    )  # fmt: skip
    os.close(follower)
    output = b""
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        os.close(leader)
    text = output.decode(errors="replace")
    assert "\x1b[2J" not in text  # no screen cleared over the spans
    assert '"name": "reconcile"' in text and "2/2 hosts provisioned" in text
