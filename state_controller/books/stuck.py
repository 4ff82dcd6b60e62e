"""When is a host stuck? When it has been in a state longer than that state allows.

Thresholds are per state and configurable. Stuck is a pure function of the
cursor and the clock, so it needs no sweep: the controller arms one timer per
host at :meth:`StuckPolicy.deadline` and re-projects when it fires.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..api.states import ProvisioningState as S
from ..api.updates import DEFAULT_STEP_THRESHOLDS, ORDER, UpdateStep
from .records import Cursor, UpdateCursor

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
    """``90`` -> ``1m30s``, as Go's time.Duration prints (what Kubernetes users read)."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    out = f"{hours}h" if hours else ""
    if hours or minutes:
        out += f"{minutes}m"
    return out + f"{secs}s"


@dataclass(frozen=True)
class StuckPolicy:
    thresholds: Mapping[S, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    step_thresholds: Mapping[UpdateStep, float] = field(
        default_factory=lambda: dict(DEFAULT_STEP_THRESHOLDS)
    )

    def deadline(self, cursor: Cursor, update: UpdateCursor | None = None) -> float | None:
        """When the host is stuck: in its update step while a node update is in
        progress (``update`` given for a host that runs a Node), else in its state."""
        if update is not None and update.step in ORDER:
            step_limit = self.step_thresholds.get(update.step)
            return None if step_limit is None else update.entered_at + step_limit
        limit = self.thresholds.get(cursor.state)
        return None if limit is None else cursor.entered_at + limit

    def is_stuck(self, cursor: Cursor, now: float, update: UpdateCursor | None = None) -> bool:
        deadline = self.deadline(cursor, update)
        return deadline is not None and now >= deadline

    def scaled(self, factor: float) -> StuckPolicy:
        return StuckPolicy(
            {s: t * factor for s, t in self.thresholds.items()},
            {s: t * factor for s, t in self.step_thresholds.items()},
        )
