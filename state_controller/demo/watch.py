"""The demo's loop: follow the fleet until it settled, drive its kubelets and rollout,
and show it — the live screen on a terminal, progress lines elsewhere, a picture for the
docs when asked (``--screenshot``)."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import RenderableType

from ..api.states import ProvisioningState
from ..api.updates import UpdateStep
from ..books.records import POWER_CYCLED
from ..cluster.interface import HOSTSTATES, NODEPOOLS, Cluster
from ..runtime.controller import HostController
from ..screens.live import Bars, cluster_frame, hoststates_settled, hoststates_table, pools_table
from ..screens.picture import SIZE, save_svg
from ..screens.progress import provisioning_line, summarize, update_line
from ..screens.rows import sort_rows
from ..screens.terminal import LiveScreen
from ..simulation.firmware_rollout import FirmwareRollout
from ..simulation.rollout import RollingUpdate, config_name, pool_for
from .options import DemoOptions


def summarize_update(controller: HostController, keys: list[str]) -> dict[str, Any]:
    """The rollout as the controller's books tell it: steps, updated, stuck, degraded."""
    books = controller.books
    by_step: Counter[str] = Counter()
    updated, stuck, degraded, nodes = 0, [], [], 0
    power_cycled: list[str] = []
    now = time.time()
    for index, key in enumerate(keys):
        book = books.get(key)
        update = book.node_update() if book else None
        if book is None or update is None:
            continue
        nodes += 1
        name = key.rpartition("/")[2]
        by_step[update.step.value] += 1
        target = config_name(pool_for(index), 2)
        updated += update.step == UpdateStep.UPDATED and update.current == target
        if update.step == UpdateStep.DEGRADED:
            degraded.append(name)
        elif controller.config.stuck.stuck_now(book, now):
            stuck.append(f"{name} ({update.step.value})")
        if any(record.reason == POWER_CYCLED for record in book.history):
            power_cycled.append(name)
    return {
        "nodes": nodes,
        "updated": updated,
        "by_step": dict(sorted(by_step.items())),
        "stuck": stuck,
        "degraded": degraded,
        "power_cycled": power_cycled,  # remediated: power-cycled through the BMC
    }


def watch(
    controller: HostController,
    cluster: Cluster,
    keys: list[str],
    opts: DemoOptions,
    started: float,
    rollout: RollingUpdate | None,
    metrics: str,
    firmware: FirmwareRollout | None = None,
    *,
    notes: Callable[[], str] | None = None,
) -> float | None:
    """Show progress until every host is at its target and, with an update, every node
    at its new configuration (and, with a firmware rollout, every host serviced), or until
    the timeout; then, unless told to exit when settled, until the timeout. When it
    settled (None: it did not). ``notes``: a few more words for each progress line and
    the screen's footer (the observe-mode demo's hardware health)."""
    # a live screen redraws the terminal: with traces on the console it would wipe them
    live = opts.table and sys.stdout.isatty() and not opts.json and opts.trace != "console"
    screen = LiveScreen() if live else None
    with screen or contextlib.nullcontext():
        return _follow(
            controller, cluster, keys, opts, started, rollout, metrics, screen, firmware, notes
        )


def _follow(
    controller: HostController,
    cluster: Cluster,
    keys: list[str],
    opts: DemoOptions,
    started: float,
    rollout: RollingUpdate | None,
    metrics: str,
    screen: LiveScreen | None,
    firmware: FirmwareRollout | None,
    notes: Callable[[], str] | None,
) -> float | None:
    deadline = started + opts.timeout
    linger = not opts.exit_when_settled  # keep serving /metrics until the timeout
    settled_at: float | None = None
    stop = threading.Event()
    last_line = last_screen = 0.0
    bars = Bars()
    picture = _Picture(opts.screenshot)
    while not stop.wait(0.1):
        summary = summarize(controller, dict.fromkeys(keys, opts.target), opts.target.value)
        provisioned = summary["at_target"] == len(keys)
        update = None
        if rollout is not None:
            _follow_the_fleet(controller, keys, rollout, opts.target)
            # once the first progress is out: every run's output begins with the hosts
            # provisioning, however late a busy machine first gets here
            shown = bool(last_line or last_screen)
            if not rollout.started and shown and _provisioning_settled(summary):
                rollout.start()
            rollout.tick(time.monotonic())
            if rollout.started:
                update = summarize_update(controller, keys)
        updated = provisioned and (
            update is None
            or (
                rollout is not None
                and rollout.done()
                and _all_updated(update)
                and _pools_show(cluster, update["nodes"])
            )
        )
        serviced = True
        if firmware is not None:
            if updated and not firmware.started:
                firmware.start(time.monotonic())
            firmware.tick(time.monotonic(), controller.books)
            serviced = firmware.done(controller.books)
        done = updated and serviced
        if done and settled_at is None:  # the HostStates, written after the books, say it too
            done = hoststates_settled(cluster, opts.namespace, keys)
        now = time.time()
        if done and settled_at is None:
            settled_at = now
            if linger and now < deadline and screen is None:
                print(
                    f"settled in {now - started:.1f}s; serving /metrics until --timeout "
                    f"({deadline - now:.0f}s more; Ctrl-C stops, --exit-when-settled exits now)",
                    file=sys.stderr,
                    flush=True,
                )
        finished = (done and not linger) or now >= deadline
        pace = 2.0 if settled_at is None else 10.0  # fewer lines once nothing moves
        if (screen or picture.wanted) and (now - last_screen >= 0.5 or finished):
            bars.set(opts.target.value, summary["at_target"], len(keys))
            if update is not None:
                bars.set("updated", update["updated"], max(update["nodes"], 1))
            footer = [_line(summary, update, started), metrics]
            if notes is not None:
                footer.insert(1, notes())
            if settled_at is not None and linger:
                footer[-1] += f" (settled in {settled_at - started:.1f}s; serving until --timeout)"
            if screen is not None:
                screen.show(
                    cluster_frame(
                        cluster, opts.namespace, screen.size, pools=update is not None,
                        bars=bars, footer=footer,
                    )
                )  # fmt: skip
            picture.offer(cluster, opts.namespace, update is not None, bars, footer)
            last_screen = time.time()
        if screen is None and (now - last_line >= pace or finished):
            line = _line(summary, update, started)
            if firmware is not None and firmware.started:
                told = firmware.summary(controller.books)
                line += f" | firmware {told['serviced']}/{told['hosts']} serviced"
            if notes is not None:
                line += f" | {notes()}"
            print(line, file=sys.stderr, flush=True)
            last_line = time.time()
        if finished:
            if opts.table and not opts.json and screen is None:
                print(hoststates_table(cluster, opts.namespace, updating=update is not None))
                if update is not None:
                    print(pools_table(cluster))
            saved = picture.save(f"demo --hosts {opts.hosts}" + " --faults" * opts.faults)
            if saved and screen is not None:
                screen.after(saved)
            elif saved:
                print(saved, file=sys.stderr)
            return settled_at
    return None


class _Picture:
    """The frame of a docs picture (``--screenshot``): of all frames drawn at the
    picture's size during the rollout, the one with most nodes held in their update,
    then most rows that need attention."""

    def __init__(self, path: str | None) -> None:
        self.wanted = path is not None
        self._path = path
        self._best: tuple[tuple[bool, int, int, int], RenderableType] | None = None

    def offer(
        self,
        cluster: Cluster,
        namespace: str | None,
        updating: bool,
        bars: Bars,
        footer: list[str],
    ) -> None:
        if not self.wanted:
            return
        items = cluster.list(HOSTSTATES, namespace)[0]
        attention, moving, _ = sort_rows(items)
        held = sum(row.updating for row in attention)  # nodes the rollout waits on
        score = (updating, held, len(attention), len(moving))
        if self._best is None or score >= self._best[0]:
            view = cluster_frame(cluster, namespace, SIZE, pools=updating, bars=bars, footer=footer)
            self._best = (score, view)

    def save(self, title: str) -> str:
        """Saves the picture, if one is wanted; what to tell the user."""
        if self._path is None or self._best is None:
            return ""
        save_svg(self._best[1], Path(self._path), title)
        return f"picture of the screen: {self._path}"


def _line(summary: dict[str, Any], update: dict[str, Any] | None, started: float) -> str:
    return update_line(update, started) if update else provisioning_line(summary, started)


def _provisioning_settled(summary: dict[str, Any]) -> bool:
    """Every host at its target, or stuck where it is: the rollout can begin."""
    return set(summary["not_at_target"]) <= set(summary["stuck"])


def _all_updated(update: dict[str, Any]) -> bool:
    return bool(update["nodes"]) and update["updated"] == update["nodes"]


def _pools_show(cluster: Cluster, nodes: int) -> bool:
    """The NodePools say it too (their status is written at most once a second)."""
    pools = [p.get("status") or {} for p in cluster.list(NODEPOOLS, None)[0]]
    counted = sum(p.get("machineCount", 0) for p in pools)
    return counted == nodes and all(
        p.get("updatedMachineCount") == p.get("machineCount") for p in pools
    )


def _follow_the_fleet(
    controller: HostController,
    keys: list[str],
    rollout: RollingUpdate,
    target: ProvisioningState,
) -> None:
    """A host at its target boots its image: its kubelet registers the Node."""
    books = controller.books
    for index, key in enumerate(keys):
        name = key.rpartition("/")[2]
        book = books.get(key)
        if name in rollout.kubelets.members or book is None or book.cursor.state != target:
            continue
        rollout.kubelets.register(name, index)
    rollout.kubelets.heartbeat(time.monotonic())
