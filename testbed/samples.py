"""The output samples the docs include (``docs/samples/``, through pymdownx.snippets), each
made by a real run of ``state-controller`` (or of kubectl), so that none is typed by hand.

``scripts/docs-samples`` (``python -m testbed.samples``) writes them all. The fast
ones (a demo, ``get`` on its store, a bootstrap and ``get`` on its state dir) are run
again by tests/unit/test_docs.py; the pivot and the real ``kubectl get`` need a control
plane, so tests/cluster/test_docs_samples.py runs those again. Both compare with
:func:`differences`: the cells that depend on time are masked, nothing else.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from testbed.processes import CLI

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "docs" / "samples"
HOSTS_FILE = "hosts.yaml"  # the bootstrap's input, docs/samples/hosts.yaml, written by hand


@dataclass(frozen=True)
class Run:
    """One command; its output (stdout and stderr as a terminal interleaves them) is the
    sample ``docs/samples/<name>.txt``, headed by the command line."""

    name: str
    args: tuple[str, ...]
    codes: tuple[int, ...] = (0,)  # the exit codes this run is expected to end with
    program: str = "state-controller"


# Eight hosts at 20 times the demo's speed; faults that never clear: a step that hangs
# for a while and a drain a PodDisruptionBudget holds until --timeout (20 s: the rest
# settle in about 5, with room for a busy machine), which therefore ends the run (exit
# code 1: not every node reached its new configuration).
DEMO = Run(
    "demo",
    ("demo", "--hosts", "8", "--speed", "20", "--faults", "--fault-kinds", "hang,drain-blocked",
     "--fault-attempts", "0", "--timeout", "20", "--exit-when-settled", "--store", "demo.db"),
    codes=(1,),
)  # fmt: skip
AFTER_DEMO = tuple(
    Run(f"get-{kind}{'-wide' if wide else ''}", ("get", kind, "--store", "demo.db", *wide))
    for kind in ("hoststates", "hosts", "nodepools")
    for wide in ((), ("-o", "wide"))
)
BOOTSTRAP = Run(
    "bootstrap",
    ("bootstrap", "--hosts", HOSTS_FILE, "--state-dir", "boot", "--no-table",
     "--exit-when-settled", "--metrics-bind-address", "127.0.0.1:0"),
)  # fmt: skip
AFTER_BOOTSTRAP = (Run("bootstrap-get-hoststates", ("get", "hoststates", "--state-dir", "boot")),)
FAST = (DEMO, *AFTER_DEMO, BOOTSTRAP, *AFTER_BOOTSTRAP)

# After the bootstrap: into a bare control plane (no CRDs, no namespaces); the cluster's
# controller takes the hosts over, on the machines the bootstrap drove; then kubectl.
KUBECONFIG = "cluster.kubeconfig"
PIVOT = Run("pivot", ("pivot", "--state-dir", "boot", "--kubeconfig", KUBECONFIG))
TAKEOVER = (
    "run", "--kubeconfig", KUBECONFIG, "--namespace", "metal", "--simulated-hardware",
    "boot/cluster.db", "--no-nodes", "--metrics-bind-address", "0",
    "--health-probe-bind-address", "0",
)  # fmt: skip
KUBECTL = tuple(
    Run(f"kubectl-get-{kind}{'-wide' if wide else ''}", ("get", kind, "-n", "metal", *wide),
        program="kubectl")
    for kind in ("hoststates", "hosts")
    for wide in ((), ("-o", "wide"))
) + tuple(
    Run(f"kubectl-get-hoststatecontrollers{'-wide' if wide else ''}",
        ("get", "hoststatecontrollers", *wide), program="kubectl")
    for wide in ((), ("-o", "wide"))
)  # fmt: skip
# The Host's conditions, and kubectl waiting on one (docs/hosts.md)
CONDITIONS = '{range .status.conditions[*]}{.type}={.status} {.reason}{"\\n"}{end}'
KUBECTL_WAIT = (
    Run("kubectl-wait-provisioned",
        ("wait", "-n", "metal", "--for=condition=Provisioned", "host/rack1-node-01",
         "--timeout=60s"),
        program="kubectl"),
    Run("kubectl-host-conditions",
        ("get", "host", "rack1-node-01", "-n", "metal", "-o", f"jsonpath={CONDITIONS}"),
        program="kubectl"),
)  # fmt: skip
SLOW = (PIVOT, *KUBECTL, *KUBECTL_WAIT)

# Made by the test that builds what they need (BMO's CRDs, Ironic nodes as BMO leaves
# them): it compares what it printed with the sample, or writes the sample when
# HOSTSTATE_WRITE_SAMPLES=1 (scripts/docs-samples --from-tests runs those tests so).
BY_TESTS = {
    "adopt-dry-run": "tests/ironic/test_adopt_on_ironic.py",
    "adopt": "tests/ironic/test_adopt_on_ironic.py",
    "adopt-retire": "tests/ironic/test_retire_on_ironic.py",
    "kubectl-wait-failed": "tests/cluster/test_kubectl_wait.py",
    "convert-demo-hosts": "tests/unit/test_convert_metal3_samples.py",
}
WRITE_FROM_TESTS = "HOSTSTATE_WRITE_SAMPLES"


def made_by_a_test(name: str, text: str) -> list[str]:
    """What sample ``name`` shows that ``text`` (the test's run of it) does not; or, asked
    to, the sample written from ``text``."""
    path = SAMPLES / f"{name}.txt"
    if os.environ.get(WRITE_FROM_TESTS) == "1":
        path.write_text(text)
        return []
    return differences(path.read_text(), text)


def run(one: Run, workdir: Path, kubectl: Path | None = None) -> str:
    """The sample ``one`` makes when run in ``workdir``."""
    if one.program == "kubectl":
        assert kubectl is not None
        argv = [str(kubectl), "--kubeconfig", KUBECONFIG, *one.args]
    else:
        argv = [*CLI, *one.args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        argv,
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=180,
    )
    if done.returncode not in one.codes:
        raise RuntimeError(f"{shlex.join(argv)} exited {done.returncode}:\n{done.stdout}")
    return f"$ {one.program} {shlex.join(one.args)}\n{done.stdout}"


def _chain(runs: Sequence[Run], workdir: Path) -> dict[str, str]:
    return {one.name: run(one, workdir) for one in runs}


def fast_samples(workdir: Path) -> dict[str, str]:
    """The demo and the bootstrap side by side (each mostly waits), then their ``get``s."""
    shutil.copy(SAMPLES / HOSTS_FILE, workdir / HOSTS_FILE)
    with ThreadPoolExecutor(max_workers=2) as pool:
        demo = pool.submit(_chain, (DEMO, *AFTER_DEMO), workdir)
        boot = pool.submit(_chain, (BOOTSTRAP, *AFTER_BOOTSTRAP), workdir)
        return {**demo.result(), **boot.result()}


def slow_samples(workdir: Path) -> dict[str, str]:
    """The pivot of ``fast_samples``' bootstrap (in ``workdir``) into a bare control plane
    started for it, and what kubectl prints once that cluster's controller took the
    hosts over."""
    from testbed.control_plane import ControlPlane
    from testbed.kube import k8s_bin_dir

    with ControlPlane(k8s_bin_dir(), workdir / "plane", controller_manager=False) as plane:
        shutil.copy(plane.kubeconfig, workdir / KUBECONFIG)
        out = {PIVOT.name: run(PIVOT, workdir)}
        with (workdir / "run.log").open("w") as log:
            controller = subprocess.Popen(
                [*CLI, *TAKEOVER], cwd=workdir, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        try:
            _wait_taken_over(plane.kubectl, workdir, controller)
            for one in (*KUBECTL, *KUBECTL_WAIT):
                out[one.name] = run(one, workdir, kubectl=plane.kubectl)
        finally:
            controller.terminate()
            try:
                controller.wait(timeout=30)
            except subprocess.TimeoutExpired:
                controller.kill()
                controller.wait(timeout=30)
        return out


def _wait_taken_over(kubectl: Path, workdir: Path, controller: subprocess.Popen[bytes]) -> None:
    """Until every HostState says its book is kept in the cluster and its Host is ready,
    and the controller's own status counts them all."""
    query = '{range .items[*]}{.status.mode}/{.status.conditions[?(@.type=="Ready")].status} '
    deadline = time.monotonic() + 60
    seen: list[str] = []
    while time.monotonic() < deadline and controller.poll() is None:
        seen = subprocess.run(
            [str(kubectl), "--kubeconfig", KUBECONFIG, "get", "hoststates", "-n", "metal",
             "-o", f"jsonpath={query}{{end}}"],
            cwd=workdir, capture_output=True, text=True, timeout=30,
        ).stdout.split()  # fmt: skip
        if (
            seen
            and all(one == "Cluster/True" for one in seen)
            and _counted(kubectl, workdir, len(seen))
        ):
            return
        time.sleep(0.5)
    log = (workdir / "run.log").read_text()[-2000:]
    raise RuntimeError(f"the cluster's controller did not take the hosts over ({seen}):\n{log}")


def _counted(kubectl: Path, workdir: Path, hosts: int) -> bool:
    """Whether the controller's own status counts every host, available."""
    query = '{.status.hosts}/{.status.conditions[?(@.type=="Available")].status}'
    shown = subprocess.run(
        [str(kubectl), "--kubeconfig", KUBECONFIG, "get", "hoststatecontrollers",
         "hoststate-system", "-o", f"jsonpath={query}"],
        cwd=workdir, capture_output=True, text=True, timeout=30,
    ).stdout  # fmt: skip
    return shown == f"{hosts}/True"


# -- comparing ------------------------------------------------------------------------

_TIMES = (  # in this order: a UUID's group may look like a duration (8d1d)
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "<time>"),  # timestamps
    (re.compile(r"\b(\d+(\.\d+)?(ms|[smhd]))+\b"), "<t>"),  # 3s, 2m10s, 0.12s, 1d4h
    (re.compile(r"<unknown>"), "<t>"),  # kubectl's age of an unset date
    (re.compile(r"(?<![\d:])\d\d:\d\d(?![\d:])"), "<hh:mm>"),  # an estimate's end (ENDS)
    (re.compile(r"\[\s*<t>\]"), "[<t>]"),  # the elapsed time heading a progress line
    (re.compile(r"(127\.0\.0\.1|localhost):\d+"), r"\1:<port>"),
)
_PROGRESS = re.compile(r"^(\[<t>\]|<time> [A-Z]+ )")  # a progress or a log line
_COUNTS = re.compile(r"[\w -]+=\d+(, [\w -]+=\d+)*")  # provisioning=3, draining=1


def masked(line: str) -> str:
    """``line`` without what changes from run to run: times, ages, ports; and with one
    space for each run of blanks (column widths follow the masked values)."""
    for pattern, mask in _TIMES:
        line = pattern.sub(mask, line)
    return " ".join(line.split())


# log lines a run prints or not as its timing falls: whether the demo's small rollout
# runs later than its first late bound (a pool's OnSchedule turning False) is chance
_BY_CHANCE = re.compile(r"the rollout runs late")
_STUCK_DETAIL = re.compile(r" allowed: .*? host=")  # what was known the moment it stuck


def _loose(line: str) -> str:
    """A progress or log line, whose counts depend on when it was printed; of a progress
    line, only what it is about (its fields after the first ``|`` come and go with the
    moment: no host counted yet in any state, or nothing stuck); of a Stuck warning, the
    detail that follows the threshold (a drain still being counted, or already blocked
    by a budget, depending on which informer spoke first)."""
    if line.startswith("[<t>]"):
        line = line.split(" |", 1)[0]
    return re.sub(r"\d+", "N", _COUNTS.sub("…", _STUCK_DETAIL.sub(" allowed: … host=", line)))


def differences(sample: str, fresh: str) -> list[str]:
    """What ``sample`` shows that ``fresh`` (the same command run now) does not.

    Progress and log lines are compared by their wording, without their counts, and
    each sample line needs only to appear among the fresh ones (a run may print more or
    fewer of them); every other line (tables, summaries) must be the same, in any order
    (threads finish in any order), its times masked.
    """
    kept: dict[bool, list[list[str]]] = {True: [[], []], False: [[], []]}
    for side, text in enumerate((sample, fresh)):
        for line in map(masked, text.splitlines()):
            if line:
                progress = bool(_PROGRESS.match(line))
                kept[progress][side].append(_loose(line) if progress else line)
    (was, now), (was_loose, now_loose) = kept[False], kept[True]
    by_chance = {line for line in was_loose if _BY_CHANCE.search(line)}
    missing = [f"- {line}" for line in sorted(set(was_loose) - set(now_loose) - by_chance)]
    if sorted(was) != sorted(now):
        missing += [f"- {line}" for line in was if line not in now]
        missing += [f"+ {line}" for line in now if line not in was]
    return missing


def write(samples: dict[str, str]) -> list[Path]:
    written = []
    for name, text in samples.items():
        path = SAMPLES / f"{name}.txt"
        path.write_text(text)
        written.append(path)
    return written


PICTURE = ROOT / "docs" / "images" / "demo.svg"


def picture() -> Path:
    """The docs' picture of the live screen: a real demo of 50 hosts with faults, the
    rollout's frame with the most nodes held (``demo --screenshot``; about 75 s)."""
    subprocess.run(
        [*CLI, "demo", "--hosts", "50", "--faults", "--exit-when-settled", "--no-table",
         "--screenshot", str(PICTURE)],
        check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, cwd=ROOT,
    )  # fmt: skip
    return PICTURE


def main(argv: Sequence[str]) -> int:
    """``scripts/docs-samples [--fast]``: every sample and the picture, or only the
    samples that need no control plane; ``--from-tests``: the samples tests make."""
    import tempfile

    if "--from-tests" in argv:
        tests = sorted(set(BY_TESTS.values()))
        env = {**os.environ, WRITE_FROM_TESTS: "1"}
        return subprocess.run([sys.executable, "-m", "pytest", "-q", *tests], env=env).returncode

    with tempfile.TemporaryDirectory(prefix="hoststate-samples-") as tmp:
        workdir = Path(tmp)
        samples = fast_samples(workdir)
        if "--fast" not in argv:
            samples |= slow_samples(workdir)
        for path in write(samples):
            print(path.relative_to(ROOT))
        if "--fast" not in argv:
            print(picture().relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
