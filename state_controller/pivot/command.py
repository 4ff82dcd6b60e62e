"""The command line's side of a pivot: open the two places, hold the state dir, tell."""

from __future__ import annotations

import sqlite3
import statistics
import sys
from dataclasses import dataclass

import yaml
from kubernetes.config.config_exception import ConfigException
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from ..bootstrap.state_dir import StateDir, StateDirError
from ..cluster.embedded import EmbeddedCluster
from ..cluster.interface import ApiError, unreachable
from ..cluster.kube import KubeCluster
from ..cluster.schema import validators
from .mover import PivotReport, pivot
from .moves import Interrupted, Refused
from .target import TargetError


@dataclass
class PivotOptions:
    target: str  # kubeconfig of the cluster the hosts move into
    state_dir: str | None = None  # the source: a bootstrap's state directory
    source: str | None = None  # or another cluster's kubeconfig
    source_context: str | None = None
    target_context: str | None = None
    namespace: str | None = None
    workers: int = 8


class PivotError(Exception):
    """A pivot cannot go on; the message says why and what to do."""


def run_pivot(opts: PivotOptions) -> int:
    lock: StateDir | None = None
    told = Told()
    clusters: list[EmbeddedCluster | KubeCluster] = []
    try:
        if opts.state_dir is not None:
            lock = StateDir(opts.state_dir)
            if not lock.exists:
                raise PivotError(f"--state-dir {opts.state_dir} holds no bootstrap")
            lock.lock("pivot")
            source: EmbeddedCluster | KubeCluster = EmbeddedCluster(
                path=lock.store, validators=validators()
            )
        else:
            assert opts.source is not None
            source = _kube(opts.source, opts.source_context, "--from")
        clusters.append(source)
        target = _kube(opts.target, opts.target_context, "--to")
        clusters.append(target)
        held = lock
        report = pivot(
            source,
            target,
            namespace=opts.namespace,
            workers=opts.workers,
            progress=told,
            before_moving=(lambda: held.mark_pivot(target.host)) if held else None,
        )
    except Refused as refused:
        if refused.before_any_write:
            print(f"pivot refused, nothing was moved:\n{refused}", file=sys.stderr)
        else:
            print(f"pivot stopped: {refused}", file=sys.stderr)
        return 2
    except (PivotError, StateDirError, TargetError) as err:
        print(err, file=sys.stderr)
        return 2
    except Interrupted as err:
        print(f"{err}; run pivot again to carry on", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\npivot interrupted; run it again to carry on", file=sys.stderr)
        return 130
    except sqlite3.Error as err:
        print(f"--state-dir {opts.state_dir}: cluster.db cannot be read ({err})", file=sys.stderr)
        return 2
    except Exception as err:
        if not isinstance(err, ApiError) and not unreachable(err):
            raise
        where = "an API server did not answer" if unreachable(err) else "an API call failed"
        print(
            f"pivot stopped, {where}: {_first_line(err)}; run it again to carry on", file=sys.stderr
        )
        return 1
    finally:
        told.close()
        for cluster in clusters:
            cluster.close()
        if lock is not None:
            lock.unlock()
    print(summary(report), file=sys.stderr)
    return 0


def _kube(kubeconfig: str, context: str | None, flag: str) -> KubeCluster:
    try:
        return KubeCluster.from_kubeconfig(kubeconfig, context)
    except (ConfigException, OSError, yaml.YAMLError, ValueError, TypeError) as err:
        raise PivotError(
            f"{flag} {kubeconfig}: not a usable kubeconfig ({_first_line(err)})"
        ) from None


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


class Told:
    """Each host's line on stdout as it is moved; on a terminal, below them, a bar with
    the hosts moved and the time left (rich's, on stderr: the host lines print above it);
    elsewhere, a count every hundred hosts and at the end."""

    def __init__(self) -> None:
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, line: str, done: int, total: int) -> None:
        if self._bar is None and sys.stderr.isatty():
            self._bar = Progress(
                TextColumn("moving hosts"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(compact=True, elapsed_when_finished=True),
                console=Console(stderr=True),
                # the host lines print above the bar only when they share its terminal;
                # redirected (pivot > moved.log), they go where they were sent
                redirect_stdout=sys.stdout.isatty(),
            )
            self._bar.start()
            self._task = self._bar.add_task("moving", total=total)
        print(line, flush=True)  # above the bar while it is live
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=done, total=total)
            if done == total:
                self.close()
        elif done == total or done % 100 == 0:
            print(f"moved {done}/{total}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def summary(report: PivotReport) -> str:
    if not report.changed:
        return "nothing to move: every host is in the target already (nothing was written)"
    paused = report.paused_seconds()
    hosts = sum(1 for m in report.moved if m.writes)
    line = f"{hosts} hosts moved in {report.seconds:.1f}s, {report.writes} writes"
    if paused:
        line += f"; paused {statistics.median(paused):.2f}s median, {max(paused):.2f}s at most"
    if report.crds_created:
        line += f"; CRDs created: {', '.join(report.crds_created)}"
    if report.namespaces_created:
        line += f"; namespaces created: {', '.join(report.namespaces_created)}"
    return line
