"""When is a host stuck? When it has been in a state longer than that state allows.

Thresholds are per state and step, configurable, and can differ per node pool (a pool
of machines whose restarts always take twenty minutes gets its own ``rebooting``
threshold, and is not told stuck for being itself). Stuck is a pure function of the
cursor, the pool and the clock, so it needs no sweep: the controller arms one timer per
host at :meth:`StuckPolicy.deadline` and re-projects when it fires.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from ..api.servicing import DEFAULT_SERVICE_THRESHOLDS, SERVICE_IN_PROGRESS, ServiceStep
from ..api.states import ProvisioningState as S
from ..api.updates import DEFAULT_STEP_THRESHOLDS, ORDER, UpdateStep
from .records import Cursor, ServiceCursor, UpdateCursor

if TYPE_CHECKING:
    from .book import Book

DEFAULT_THRESHOLDS: dict[S, float] = {
    S.REGISTERING: 10 * 60,
    S.INSPECTING: 30 * 60,
    S.PREPARING: 30 * 60,
    S.PROVISIONING: 60 * 60,
    S.DEPROVISIONING: 60 * 60,
    S.POWERING_OFF_BEFORE_DELETE: 10 * 60,
    S.DELETING: 10 * 60,
}


def human_duration(seconds: float) -> str:
    """``90`` -> ``1m30s``, ``60`` -> ``1m0s``, as Go's time.Duration prints (what
    Kubernetes users read). Not the kubernetes client's ``format_duration``: it drops
    the zero units (``1m``, ``1h``), which Go and kubectl never do."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    out = f"{hours}h" if hours else ""
    if hours or minutes:
        out += f"{minutes}m"
    return out + f"{secs}s"


class Clock(NamedTuple):
    """What a host is timed in now: an update step, or its provisioning state."""

    entered_at: float
    limit: float | None  # seconds allowed; None: never stuck
    step: UpdateStep | ServiceStep | None  # the step timed; None: the provisioning state

    @property
    def deadline(self) -> float | None:
        return None if self.limit is None else self.entered_at + self.limit


@dataclass(frozen=True)
class StuckPolicy:
    thresholds: Mapping[S, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    step_thresholds: Mapping[UpdateStep, float] = field(
        default_factory=lambda: dict(DEFAULT_STEP_THRESHOLDS)
    )
    service_thresholds: Mapping[ServiceStep, float] = field(
        default_factory=lambda: dict(DEFAULT_SERVICE_THRESHOLDS)
    )
    # a node pool's own thresholds, whole (the fleet's with the pool's overrides on top)
    pools: Mapping[str, StuckPolicy] = field(default_factory=dict)

    def clock(
        self,
        cursor: Cursor,
        update: UpdateCursor | None = None,
        service: ServiceCursor | None = None,
        pool: str = "",
    ) -> Clock:
        """The clock that runs: the servicing step's while a servicing run is under way,
        the update step's while a node update is in progress (``update`` given for a host
        that runs a Node), else the provisioning state's; timed by the thresholds of the
        machine's ``pool`` where it has its own."""
        if pool in self.pools:
            return self.pools[pool].clock(cursor, update, service)
        if service is not None and service.step in SERVICE_IN_PROGRESS:
            limit = self.service_thresholds.get(service.step)
            return Clock(service.entered_at, limit, service.step)
        if update is not None and update.step in ORDER:
            return Clock(update.entered_at, self.step_thresholds.get(update.step), update.step)
        return Clock(cursor.entered_at, self.thresholds.get(cursor.state), None)

    def clock_of(self, book: Book) -> Clock:
        """The clock a host runs on, as its book tells it: the one door every count of
        stuck hosts (status, metrics, screens) goes through, so they agree."""
        return self.clock(book.cursor, book.node_update(), book.service, book.facts.pool)

    def stuck_now(self, book: Book, now: float) -> bool:
        """Whether the host is stuck at ``now`` (:meth:`clock_of`)."""
        deadline = self.clock_of(book).deadline
        return deadline is not None and now >= deadline

    def of_pool(self, pool: str) -> StuckPolicy:
        """The thresholds a machine of ``pool`` is timed by: the pool's own, or the fleet's."""
        return self.pools.get(pool, self)

    def deadline(
        self,
        cursor: Cursor,
        update: UpdateCursor | None = None,
        service: ServiceCursor | None = None,
        pool: str = "",
    ) -> float | None:
        """When the host is stuck (None: never)."""
        return self.clock(cursor, update, service, pool).deadline

    def is_stuck(
        self,
        cursor: Cursor,
        now: float,
        update: UpdateCursor | None = None,
        service: ServiceCursor | None = None,
        pool: str = "",
    ) -> bool:
        deadline = self.deadline(cursor, update, service, pool)
        return deadline is not None and now >= deadline

    def scaled(self, factor: float) -> StuckPolicy:
        return StuckPolicy(
            {s: t * factor for s, t in self.thresholds.items()},
            {s: t * factor for s, t in self.step_thresholds.items()},
            {s: t * factor for s, t in self.service_thresholds.items()},
            {name: own.scaled(factor) for name, own in self.pools.items()},
        )

    def limit_words(self, clock: Clock, pool: str) -> str:
        """``the 45m0s allowed``, or ``the 30m0s allowed in pool worker`` where the pool
        has thresholds of its own."""
        where = f" in pool {pool}" if pool and pool in self.pools else ""
        return f"the {human_duration(clock.limit or 0)} allowed{where}"


_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str) -> float:
    """``45m``, ``1h30m``, ``1.5h``, ``90s`` or plain seconds, as Go and kubectl write
    durations. Not the kubernetes client's ``parse_duration``: it refuses fractions
    (``1.5h``), which Go's time.ParseDuration takes."""
    rest, total, found = text.strip(), 0.0, False
    if rest.replace(".", "", 1).isdigit():
        return float(rest)
    while rest:
        number = ""
        while rest and (rest[0].isdigit() or rest[0] == "."):
            number, rest = number + rest[0], rest[1:]
        if not number or not rest or rest[0] not in _UNITS:
            raise ValueError(f"{text!r} is not a duration; write e.g. 45m, 1h30m or 90s")
        total, rest, found = total + float(number) * _UNITS[rest[0]], rest[1:], True
    if not found:
        raise ValueError(f"{text!r} is not a duration; write e.g. 45m, 1h30m or 90s")
    return total


def stuck_policy(overrides: Iterable[str], base: StuckPolicy | None = None) -> StuckPolicy:
    """The default thresholds with ``[POOL:]NAME=DURATION`` overrides (``--stuck-after``):
    a provisioning state, an update step or a servicing step; ``none`` means never stuck.
    With ``POOL:`` the override holds for that node pool's machines only, on top of the
    fleet's (whatever order the flags come in)."""
    fleet: list[str] = []
    by_pool: dict[str, list[str]] = {}
    for item in overrides:
        name = item.partition("=")[0]
        pool, colon, _ = name.partition(":")
        if not colon:
            fleet.append(item)
            continue
        pool = pool.strip()
        if not _POOL_NAME.fullmatch(pool):
            raise ValueError(
                f"--stuck-after {item!r}: {pool!r} is not a node pool's name; write "
                "POOL:NAME=DURATION with the pool as its Nodes' role label or "
                "MachineConfigNode names it, e.g. worker:draining=30m"
            )
        by_pool.setdefault(pool, []).append(item.split(":", 1)[1])
    whole = _overridden(fleet, base or StuckPolicy())
    pools = {pool: _overridden(items, whole, pool) for pool, items in by_pool.items()}
    return StuckPolicy(whole.thresholds, whole.step_thresholds, whole.service_thresholds, pools)


# a node pool's name: a Kubernetes label value (the role label's suffix, or a
# MachineConfigPool's name)
_POOL_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?")


def _overridden(items: Iterable[str], base: StuckPolicy, pool: str = "") -> StuckPolicy:
    states, steps = dict(base.thresholds), dict(base.step_thresholds)
    services = dict(base.service_thresholds)
    names = [s.value for s in S] + [s.value for s in UpdateStep] + [s.value for s in ServiceStep]
    shown = f"{pool}:" if pool else ""
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(
                f"--stuck-after {shown}{item!r}: write [POOL:]NAME=DURATION, e.g. "
                "draining=45m or worker:draining=30m"
            )
        try:
            seconds = None if value.strip() == "none" else parse_duration(value)
        except ValueError as error:
            raise ValueError(f"--stuck-after {shown}{name}: {error}") from None
        if name in {s.value for s in UpdateStep}:
            _set(steps, UpdateStep(name), seconds)
        elif name in {s.value for s in ServiceStep}:
            _set(services, ServiceStep(name), seconds)
        elif name in {s.value for s in S}:
            _set(states, S(name), seconds)
        else:
            known = ", ".join(n for n in names if n)
            raise ValueError(f"--stuck-after: no state or step {name!r}; one of: {known}")
    return StuckPolicy(states, steps, services)


def _set(table: dict[Any, float], key: object, seconds: float | None) -> None:
    if seconds is None:
        table.pop(key, None)
    else:
        table[key] = seconds
