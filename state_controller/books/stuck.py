"""When is a host stuck? When it has been in a state longer than that state allows.

Thresholds are per state and configurable. Stuck is a pure function of the
cursor and the clock, so it needs no sweep: the controller arms one timer per
host at :meth:`StuckPolicy.deadline` and re-projects when it fires.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..api.servicing import DEFAULT_SERVICE_THRESHOLDS, SERVICE_IN_PROGRESS, ServiceStep
from ..api.states import ProvisioningState as S
from ..api.updates import DEFAULT_STEP_THRESHOLDS, ORDER, UpdateStep
from .records import Cursor, ServiceCursor, UpdateCursor

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

    def clock(
        self,
        cursor: Cursor,
        update: UpdateCursor | None = None,
        service: ServiceCursor | None = None,
    ) -> Clock:
        """The clock that runs: the servicing step's while a servicing run is under way,
        the update step's while a node update is in progress (``update`` given for a host
        that runs a Node), else the provisioning state's."""
        if service is not None and service.step in SERVICE_IN_PROGRESS:
            limit = self.service_thresholds.get(service.step)
            return Clock(service.entered_at, limit, service.step)
        if update is not None and update.step in ORDER:
            return Clock(update.entered_at, self.step_thresholds.get(update.step), update.step)
        return Clock(cursor.entered_at, self.thresholds.get(cursor.state), None)

    def deadline(
        self,
        cursor: Cursor,
        update: UpdateCursor | None = None,
        service: ServiceCursor | None = None,
    ) -> float | None:
        """When the host is stuck (None: never)."""
        return self.clock(cursor, update, service).deadline

    def is_stuck(
        self,
        cursor: Cursor,
        now: float,
        update: UpdateCursor | None = None,
        service: ServiceCursor | None = None,
    ) -> bool:
        deadline = self.deadline(cursor, update, service)
        return deadline is not None and now >= deadline

    def scaled(self, factor: float) -> StuckPolicy:
        return StuckPolicy(
            {s: t * factor for s, t in self.thresholds.items()},
            {s: t * factor for s, t in self.step_thresholds.items()},
            {s: t * factor for s, t in self.service_thresholds.items()},
        )


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
    """The default thresholds with ``NAME=DURATION`` overrides (``--stuck-after``): a
    provisioning state, an update step or a servicing step; ``none`` means never stuck."""
    base = base or StuckPolicy()
    states, steps = dict(base.thresholds), dict(base.step_thresholds)
    services = dict(base.service_thresholds)
    names = [s.value for s in S] + [s.value for s in UpdateStep] + [s.value for s in ServiceStep]
    for item in overrides:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(f"--stuck-after {item!r}: write NAME=DURATION, e.g. draining=45m")
        seconds = None if value.strip() == "none" else parse_duration(value)
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
