"""The live screen of demo and bootstrap on a real terminal (a pseudo-terminal of the
size each test sets): every frame fits and keeps the metrics line; a fleet taller than
the screen is folded, what needs a person first and in full; during a rollout with
faults, every stuck or degraded node is shown with the reason it is held."""

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

import pytest

from state_controller.simulation.nodes import UpdateFault
from state_controller.simulation.rollout import choose_faults
from testbed.bootstrap import write_hosts_file
from testbed.processes import CLI

pytestmark = pytest.mark.slow  # each test runs a demo or a bootstrap on a terminal to its end

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
HOME = "\x1b[H"  # rich's full-screen Live starts every frame here


def on_terminal(
    *args: str,
    size: tuple[int, int] = (24, 80),
    stderr_too: bool = False,
    command: tuple[str, ...] = tuple(CLI),
    exit_code: int = 0,
) -> str:
    """What `state-controller ARGS` (or ``command`` ARGS) writes to a pseudo-terminal of
    ``size`` (lines, columns), until it exits (with ``exit_code``)."""
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
    # the size must come from the terminal itself, not from the variables that override it
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        [*command, *args],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower if stderr_too else subprocess.DEVNULL,
        cwd=ROOT,
        env=env,
    )
    os.close(follower)
    output = b""
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the command exited
                break
            if not chunk:
                break
            output += chunk
        assert proc.wait(timeout=30) == exit_code
    finally:
        proc.kill()
        os.close(leader)
    return output.decode(errors="replace")


def frames_of(output: str) -> tuple[list[list[str]], list[str]]:
    """The frames drawn on the alternate screen, each as its lines (trailing blank lines
    dropped), and what was printed on the normal screen after it closed."""
    assert "\x1b[?1049h" in output  # the alternate screen
    drawn, _, after = output.partition("\x1b[?1049l")
    frames = []
    for text in drawn.split(HOME)[1:]:
        lines = [line.rstrip() for line in ANSI.sub("", text).replace("\r", "").split("\n")]
        while lines and not lines[-1]:
            lines.pop()
        if lines:
            frames.append(lines)
    return frames, ANSI.sub("", after).replace("\r", "").split("\n")


def assert_fits(frames: list[list[str]], size: tuple[int, int]) -> None:
    rows, columns = size
    assert len(frames) >= 3
    for lines in frames:
        assert len(lines) <= rows, lines
        assert max(len(line) for line in lines) <= columns, lines
        assert lines[-1].startswith("metrics: http://127.0.0.1:"), lines


def reasons(frames: list[list[str]], name: str, trouble: str) -> list[str]:
    """The reasons a frame gives below ``name``'s attention row when it shows ``trouble``:
    the indented lines under the row, joined as one text."""
    found = []
    for lines in frames:
        for i, line in enumerate(lines):
            if line.startswith(f"{name} ") and re.search(rf"\s{trouble} \d", line):
                below = []
                for more in lines[i + 1 :]:
                    if not more.startswith("  "):
                        break
                    below.append(more.strip())
                found.append(" ".join(below))
    return found


def rows_of(frames: list[list[str]], name: str, last: int = 20) -> str:
    """``name``'s rows as the frames showed them, each change once (the last ``last``):
    what a failed assertion prints, so a rare miss can be read from its log."""
    seen: list[str] = []
    for lines in frames:
        row = " | ".join(line.strip() for line in lines if name in line) or "(not shown)"
        if not seen or seen[-1] != row:
            seen.append(row)
    return "\n".join(seen[-last:])


def test_every_frame_fits_the_terminal_and_keeps_the_metrics_line() -> None:
    size = (24, 80)
    output = on_terminal(
        "demo", "--hosts", "40", "--no-update", "--speed", "10", "--faults", "--exit-when-settled",
        "--timeout", "90", size=size,
    )  # fmt: skip
    frames, after = frames_of(output)
    assert_fits(frames, size)
    # 40 hosts do not fit in 24 lines: the settled are counted, the rest said to be more
    assert any(re.search(r"settled: \d+ provisioned", line) for f in frames for line in f)
    assert any("more in progress" in line for f in frames for line in f)
    assert "settled: 40 provisioned" in "\n".join(frames[-1])
    assert "settled: 40 provisioned" in "\n".join(after)  # the last frame stays on screen


def test_console_traces_are_not_wiped_by_the_screen() -> None:
    text = on_terminal(
        "demo", "--hosts", "2", "--no-update", "--speed", "10", "--exit-when-settled",
        "--timeout", "180", "--trace", "console", stderr_too=True,
    )  # fmt: skip
    assert "\x1b[?1049h" not in text and "\x1b[2J" not in text  # no screen over the spans
    assert '"name": "reconcile"' in text and "2/2 hosts provisioned" in text


@pytest.mark.parametrize("size", [(40, 120), (24, 80)], ids=["120x40", "80x24"])
def test_a_rollout_shows_each_held_node_with_the_reason(size: tuple[int, int]) -> None:
    """With update faults only, every node the rollout holds is, in some frame, a row that
    needs attention, followed by why, whole: the PodDisruptionBudget that blocks its
    drain, the reboot it never came back from, the reason its update degraded."""
    hosts, seed, rate = 12, 3, 0.75
    kinds = tuple(UpdateFault)
    names = [f"host-{i:04d}" for i in range(hosts)]
    faults = choose_faults(names, rate, kinds, seed)
    assert set(faults.values()) == set(UpdateFault)  # one of each at least
    output = on_terminal(
        "demo", "--hosts", str(hosts), "--faults", "--fault-kinds", ",".join(kinds),
        "--fault-rate", str(rate), "--seed", str(seed), "--speed", "1", "--exit-when-settled",
        "--timeout", "150", size=size, stderr_too=True,
    )  # fmt: skip
    frames, after = frames_of(output)
    assert_fits(frames, size)  # the warnings logged meanwhile are not drawn into a frame
    assert any("WARNING" in line and "Stuck" in line for line in after)  # but shown after
    rollout = [f for f in frames if any(line.startswith("NAME    MACHINES") for line in f)]
    expected = {
        UpdateFault.DRAIN_BLOCKED: (
            "stuck",
            "draining: 1 pod left, eviction blocked by PodDisruptionBudget demo/{name}-db "
            "(it allows no disruption since ",
        ),
        UpdateFault.REBOOT_LOST: ("stuck", "the node is not Ready"),
        UpdateFault.APPLY_DEGRADED: (
            "degraded",
            "writing /etc/containers/registries.conf: no space left on device",
        ),
    }
    # 80x24 holds three or four attention blocks: on a busy machine nodes merely slow
    # are stuck too, and a held node may only be counted ("… N more need attention")
    folded = any("more need attention" in line for f in rollout for line in f)
    for name, fault in sorted(faults.items()):
        trouble, reason = expected[fault]
        shown = reasons(rollout, name, trouble)
        if not shown and size == (24, 80) and folded:
            continue
        assert shown, f"{name} ({fault}) never shown {trouble}:\n" + rows_of(rollout, name)
        assert any(reason.format(name=name) in text for text in shown), (name, shown)


def test_bootstrap_shows_the_live_screen(tmp_path: Path) -> None:
    """bootstrap's screen is the demo's: frames that fit, the hosts of every namespace in
    the store, the progress line and where /metrics is; once settled, the last frame and
    the line saying how to pivot stay on the terminal."""
    size = (24, 80)
    write_hosts_file(tmp_path / "hosts.yaml", "metal", 30)
    output = on_terminal(
        "bootstrap", "--hosts", str(tmp_path / "hosts.yaml"), "--state-dir",
        str(tmp_path / "state"), "--metrics-bind-address", "127.0.0.1:0",
        "--exit-when-settled", "--timeout", "90", size=size,
    )  # fmt: skip
    frames, after = frames_of(output)
    assert_fits(frames, size)
    for lines in frames:
        assert "at their goal" in lines[-2]
    assert any(line.startswith("host-0000 ") for f in frames for line in f)
    assert "settled: 30 provisioned" in "\n".join(frames[-1])
    assert any("30 hosts at their goal in" in line for line in after)


def test_pivot_shows_a_bar_with_the_time_left_below_the_host_lines() -> None:
    """On a terminal the pivot's hosts are counted by a bar with the time left, and each
    host's line is printed above it, whole."""
    script = (
        "import time\n"
        "from state_controller.pivot.command import Told\n"
        "told = Told()\n"
        "for i in range(1, 41):\n"
        "    time.sleep(0.02)\n"
        "    told(f'metal/host-{i:04d}: moved, paused 0.1{i}s', i, 40)\n"
    )
    output = on_terminal("-c", script, stderr_too=True, command=(sys.executable,))
    text = ANSI.sub("", output)
    lines = [line.strip() for line in re.split(r"[\r\n]+", text)]  # the bar returns with \r
    assert [line for line in lines if line.startswith("metal/")] == [
        f"metal/host-{i:04d}: moved, paused 0.1{i}s" for i in range(1, 41)
    ]
    assert re.search(r"moving hosts .*40/40", text)
    assert re.search(r"moving hosts .* \d+/40 +\d+:\d\d", text)  # the time left


def test_pivot_sends_its_host_lines_where_stdout_goes(tmp_path: Path) -> None:
    """With stderr on a terminal and stdout sent to a file, the bar is drawn on the
    terminal and every host's line lands in the file."""
    script = (
        "import sys\n"
        "from state_controller.pivot.command import Told\n"
        f"sys.stdout = open({str(tmp_path / 'moved.log')!r}, 'w')\n"
        "told = Told()\n"
        "for i in range(1, 4):\n"
        "    told(f'metal/host-{i:04d}: moved', i, 3)\n"
        "sys.stdout.close()\n"
    )
    output = on_terminal("-c", script, stderr_too=True, command=(sys.executable,))
    assert (tmp_path / "moved.log").read_text().splitlines() == [
        f"metal/host-{i:04d}: moved" for i in range(1, 4)
    ]
    assert "moving hosts" in ANSI.sub("", output) and "host-0001" not in output


def test_bootstrap_that_times_out_says_so_below_its_last_frame(tmp_path: Path) -> None:
    write_hosts_file(tmp_path / "hosts.yaml", "metal", 3)
    leader = on_terminal(
        "bootstrap", "--hosts", str(tmp_path / "hosts.yaml"), "--state-dir",
        str(tmp_path / "state"), "--metrics-bind-address", "0", "--timeout", "1",
        stderr_too=True, exit_code=1,
    )  # fmt: skip
    frames, after = frames_of(leader)
    assert frames and any("not settled after 1s" in line for line in after), after
