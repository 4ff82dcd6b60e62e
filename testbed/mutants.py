"""Named mutants of behaviours the tests must guard, and which of them the tests kill.

``scripts/mutants [NAME ...]`` copies the package and the tests into a temporary
directory, breaks one behaviour there (an exact text replaced, so a mutant that no longer
applies fails loudly instead of passing), runs the tests named for it and says
``killed by TEST`` or ``SURVIVED``. The working tree is never touched. Not part of
``scripts/test``: each mutant runs its tests again (minutes in all).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAST = ("tests/scenarios", "tests/unit", "-k", "not kube")  # the embedded tier
# the guard that every mutant's text applies (test_mutants_apply) fails in every mutated
# copy by design: it is left out, or it would be the first "killer" of every mutant
PYTEST = (sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
          "--deselect", "tests/unit/test_mutants_apply.py")  # fmt: skip


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # in the package
    old: str
    new: str
    tests: tuple[str, ...] = FAST


MUTANTS = (
    Mutant(
        "pause-ignored",
        "state_controller/runtime/hosts/reconciler.py",
        "        if ann.PAUSED in annotations:\n",
        "        if False:\n",
    ),
    Mutant(
        "write-only-on-difference-broken",
        "state_controller/runtime/writing/status_writer.py",
        '        if same(status, obj.get("status")):',
        "        if False:",
    ),
    Mutant(
        "conflict-retry-removed",
        "state_controller/runtime/writing/status_writer.py",
        "            except Conflict:\n                fresh",
        "            except ZeroDivisionError:\n                fresh",
    ),
    Mutant(
        "stuck-announced-every-reconcile",
        "state_controller/runtime/writing/book_writer.py",
        "        if delivery.stuck_announced == clock.entered_at:\n            return",
        "        if False:\n            return",
    ),
    Mutant(
        "refused-request-moves-the-host",
        "state_controller/provisioning/steps.py",
        "        if stop := self.settle(result, error):\n            return stop\n"
        "        self.move(to, reason)",
        "        self.move(to, reason)\n"
        "        if stop := self.settle(result, error):\n            return stop",
    ),
    Mutant(
        "backoff-ignored",
        "state_controller/provisioning/steps.py",
        "        retry = self.retry\n        if retry is None:\n            return None",
        "        retry = self.retry\n        if True:\n            return None",
    ),
    Mutant(
        "stuck-timer-never-armed",
        "state_controller/runtime/machinery/workers.py",
        "        if outcome.wake_after is not None:",
        "        if False:",
    ),
    Mutant(
        "nodepool-interval-ignored",
        "state_controller/runtime/pools/reconciler.py",
        '        if current.get("status") != status and wait > 0:',
        "        if False:",
    ),
    Mutant(
        "heartbeat-filter-removed",
        "state_controller/runtime/indexes/nodes.py",
        "            if signals == before:",
        "            if False:",
    ),
    Mutant(
        "informer-relist-broken",
        "state_controller/runtime/machinery/informer.py",
        "            if key not in fresh:\n                self._dispatch(key, None)",
        "            if False:\n                self._dispatch(key, None)",
    ),
    Mutant(
        "gone-not-handled",
        "state_controller/runtime/machinery/informer.py",
        '            except Gone:\n                log.info("watch of %s expired; listing again", '
        'self.resource)\n                version = ""',
        "            except Gone:\n                raise",
    ),
)


def run(mutant: Mutant, timeout: float) -> tuple[str, float]:
    """'killed by TEST' or 'SURVIVED', and the seconds it took."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"mutant-{mutant.name}-") as tmp:
        copy = Path(tmp)
        for part in (
            "state_controller",
            "testbed",
            "tests",
            "docs",
            "api",
            "manifests",
            "dashboards",
            "tools",
        ):
            shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
        for part in ("pyproject.toml", "mkdocs.yml", "README.md"):
            shutil.copy(ROOT / part, copy / part)
        target = copy / mutant.path
        text = target.read_text()
        if text.count(mutant.old) != 1:
            raise SystemExit(f"{mutant.name}: the text to break is not once in {mutant.path}")
        target.write_text(text.replace(mutant.old, mutant.new))
        # the copy comes first on sys.path (cwd), ahead of the editable install
        done = subprocess.run(
            [*PYTEST, *mutant.tests],
            cwd=copy,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    seconds = time.monotonic() - started
    if done.returncode == 0:
        return "SURVIVED", seconds
    failed = re.findall(r"^FAILED (\S+)", done.stdout, re.M)
    if not failed:  # no test failed on the mutant: the run itself broke (an import, a fixture)
        tail = done.stdout.strip().splitlines()[-1:] or ["(no output)"]
        return f"RUN BROKEN, not killed: {tail[0]}", seconds
    return f"killed by {failed[0]}", seconds


def main(argv: Sequence[str]) -> int:
    chosen = [m for m in MUTANTS if not argv or m.name in argv]
    unknown = set(argv) - {m.name for m in MUTANTS}
    if unknown:
        names = ", ".join(m.name for m in MUTANTS)
        print(f"unknown mutant(s): {', '.join(sorted(unknown))}; known: {names}", file=sys.stderr)
        return 2
    survived = 0
    for mutant in chosen:
        verdict, seconds = run(mutant, timeout=1800)
        survived += not verdict.startswith("killed")
        print(f"{mutant.name:36} {verdict}  ({seconds:.0f}s)", flush=True)
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
