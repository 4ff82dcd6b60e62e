"""The one :class:`Metrics` the controller registers: its own families and the borrowed
ones (client-go's, controller-runtime's, the process's) in one registry, in the order the
catalogue (docs/metrics.md) lists them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)

from ...api.hoststate import Mode
from ...books.book import Book
from ...books.journal import Notice
from ...books.records import Transition
from ...books.stuck import StuckPolicy
from ...durations.learned import Learned
from ..collectors import BooksCollector, ControllerCollector
from ..durations import LearnedCollector
from ..inventory import InventoryCollector
from ..pool_collector import PoolsCollector
from .children import Children
from .client_go import ClientGoMetrics
from .controller_runtime import ControllerRuntimeMetrics
from .hosts import HostMetrics


class Metrics:
    """Every metric of the controller, in one registry: :attr:`hosts` (``hoststate_*``),
    :attr:`client_go` and :attr:`controller_runtime`; what the books, pools and the
    controller's status say now is read at scrape time by the collectors of
    ``collectors.py``, once watched."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        # No ``*_created`` series beside every counter and histogram: client-go and
        # controller-runtime expose none, and they would double the series of each.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = registry or CollectorRegistry()
        self.child = Children()
        self.hosts = HostMetrics(self.registry, self.child)
        ProcessCollector(registry=self.registry)  # process_cpu_seconds_total, process_resident…
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.client_go = ClientGoMetrics(self.registry)
        self.controller_runtime = ControllerRuntimeMetrics(self.registry, self.child)
        self.zero_error_series()

    def zero_error_series(self) -> None:
        """Every error and outcome series that can occur starts at 0, so an alert on its
        rate sees 0 (not "no data") before the first failure."""
        self.controller_runtime.zero_error_series()
        self.hosts.zero_error_series()

    # -- wiring -------------------------------------------------------------------------

    def watch_books(self, books: Callable[[], Mapping[str, Book]], stuck: StuckPolicy) -> None:
        self.registry.register(BooksCollector(books, stuck))
        self.registry.register(InventoryCollector(books))

    def watch_pools(self, pools: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        self.registry.register(PoolsCollector(pools))

    def watch_durations(self, learned: Learned) -> None:
        self.registry.register(LearnedCollector(learned))

    def watch_controller(self, status: Callable[[], Mapping[str, Any]]) -> None:
        self.registry.register(ControllerCollector(status))

    def watch_workers(
        self,
        workers: int,
        active: Callable[[str], float],
        unfinished: Callable[[str], float],
        longest: Callable[[str], float],
    ) -> None:
        self.controller_runtime.watch_workers(workers, active, unfinished, longest)

    def running_in(self, mode: Mode, since: float) -> None:
        self.hosts.running_in(mode, since)

    def leading(self, lease: str, leads: bool) -> None:
        self.client_go.leading(lease, leads)

    # -- observations -------------------------------------------------------------------

    def transition(self, record: Transition, created: str | None = None) -> None:
        self.hosts.transition(record, created)

    def notice(self, notice: Notice) -> None:
        self.hosts.notice(notice)

    def reconciled(
        self, kind: str, result: str, seconds: float, exemplar: dict[str, str] | None = None
    ) -> None:
        self.controller_runtime.reconciled(kind, result, seconds, exemplar)
