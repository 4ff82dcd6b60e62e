"""What the benchmarks share: the one wait for an outcome, the one percentile and the line
of figures they print from it, the readings of the controller they all take (its writes,
its counters, its peak memory, one phase's cost, the fleet's books) and the control plane
they start. Each benchmark keeps its own measurement; this is only what they would
otherwise each write again."""

from __future__ import annotations

import resource
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from state_controller.cluster.kube import KubeCluster
    from state_controller.runtime.controller import HostController
    from testbed.control_plane import ControlPlane

T = TypeVar("T")

WRITES = ("create", "update", "update_status", "patch", "delete")  # a client's writing verbs
NS = "fleet"  # the fleet's namespace, one control_plane() creates
WORKER = {"node-role.kubernetes.io/worker": ""}  # the labels of a Node in the worker pool
PROGRESS_EVERY = 10.0  # seconds between the lines saying what a wait still waits for


class Failed(RuntimeError):
    """The run cannot go on: what it waits for will not come."""


class TimedOut(Failed):
    """What the run waited for did not come within the wait's bound."""


def wait(
    done: Callable[[], T | None],
    what: str,
    *,
    timeout: float = 3600.0,
    poll: float = 0.1,
    since: float | None = None,
    progress: Callable[[], str] | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> T:
    """Look at ``done`` every ``poll`` seconds until it answers something true, and return
    that answer. ``meanwhile`` runs before each look (to sample, or to raise
    :class:`Failed` when the run cannot go on). Every ``PROGRESS_EVERY`` seconds a line
    says what is awaited (with ``progress()``, if given) and for how long, counted from
    ``since`` (by default the call). The bound is generous, a failure's and not a
    measurement's: after ``timeout`` seconds, :class:`TimedOut`."""
    began = last = time.monotonic()
    since = began if since is None else since
    while True:
        if meanwhile is not None:
            try:
                meanwhile()
            except Failed as err:
                raise Failed(f"{err} (while waiting for {what})") from err
        answer = done()
        if answer:
            return answer
        now = time.monotonic()
        if now - began > timeout:
            raise TimedOut(f"{what}: not after {timeout:g}s")
        if now - last >= PROGRESS_EVERY:
            told = f": {progress()}" if progress is not None else ""
            print(f"  … {what}{told} ({now - since:.0f}s)", flush=True)
            last = now
        time.sleep(poll)


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (1 to 99) of ``values``, interpolated between the two
    nearest (``statistics.quantiles``' inclusive method, numpy's default); a single value
    is every percentile of itself."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1]


def figures(label: str, seconds: Sequence[float]) -> str:
    """``label`` and the p50, p99 and max of ``seconds``, in milliseconds."""
    if not seconds:
        return f"{label}: none"
    ms = sorted(s * 1000 for s in seconds)
    return (
        f"{label} p50 {percentile(ms, 50):.0f} ms, p99 {percentile(ms, 99):.0f} ms, "
        f"max {ms[-1]:.0f} ms"
    )


# -- readings of the controller ------------------------------------------------------------


def writes(client: Any) -> int:
    """The writes a cluster client (``KubeCluster``, ``EmbeddedCluster``) made so far."""
    stats = client.stats
    return sum(stats[k] for k in WRITES)


def counted(counter: Any) -> float:
    """The sum of a Prometheus counter's ``_total`` samples, over all its labels."""
    samples = (s for family in counter.collect() for s in family.samples)
    return float(sum(s.value for s in samples if s.name.endswith("_total")))


def by_kind(registry: Any) -> dict[str, float]:
    """Status writes per resource, and Events, from the controller's own metrics."""
    out: dict[str, float] = {}
    for resource_ in ("hoststates", "nodepools"):
        labels = {"resource": resource_, "outcome": "written"}
        out[resource_] = registry.get_sample_value("hoststate_status_writes_total", labels) or 0
    out["events"] = sum(
        s.value
        for metric in registry.collect()
        if metric.name == "hoststate_events"
        for s in metric.samples
        if s.name.endswith("_total")
    )
    return out


def peak_rss_mb() -> float:
    """This process's peak resident memory so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Phase:
    """One phase's wall time, controller writes (by verb, and by kind) and CPU seconds,
    from its start to :meth:`told`."""

    def __init__(self, kube: KubeCluster, registry: Any) -> None:
        self.kube, self.registry = kube, registry
        self.began, self.cpu0 = time.monotonic(), time.process_time()
        self.verbs0, self.kinds0 = kube.stats, by_kind(registry)

    def written(self) -> int:
        stats = self.kube.stats
        return sum(stats[k] - self.verbs0[k] for k in WRITES)

    def told(self) -> str:
        stats = self.kube.stats
        verbs = {k: stats[k] - self.verbs0[k] for k in WRITES if stats[k] - self.verbs0[k]}
        kinds = {k: int(v - self.kinds0[k]) for k, v in by_kind(self.registry).items()}
        return (
            f"{time.monotonic() - self.began:.1f}s, controller writes {sum(verbs.values())} "
            f"{verbs} {kinds}, CPU {time.process_time() - self.cpu0:.1f}s"
        )


# -- the fleet -----------------------------------------------------------------------------


@contextmanager
def control_plane(name: str, workdir: Path | None = None) -> Iterator[ControlPlane]:
    """etcd and kube-apiserver on this machine, with the CRDs and the fleet's namespace,
    in ``workdir``, by default a new temporary folder named for the run (kept afterwards,
    with their logs)."""
    # imported here: a benchmark without a control plane does not load it (its peak RSS
    # is a figure)
    from testbed.kube import started_control_plane

    where = Path(tempfile.mkdtemp(prefix=f"{name}-")) if workdir is None else workdir
    with started_control_plane(where) as plane:
        yield plane


def host_name(index: int) -> str:
    """The name ``create_fleet`` gives its ``index``-th Host."""
    return f"host-{index:04d}"


def books_of(controller: HostController, indices: list[int]) -> list[Any]:
    """The controller's books of the fleet's hosts ``indices`` (None for a host it has
    none of)."""
    books = controller.books
    return [books.get(f"{NS}/{host_name(i)}") for i in indices]


def all_provisioned(controller: HostController, n: int) -> bool:
    """Every one of the fleet's N hosts provisioned in the books, and nothing queued."""
    books = books_of(controller, list(range(n)))
    provisioned = all(b is not None and b.cursor.state.value == "provisioned" for b in books)
    return provisioned and controller.idle()
