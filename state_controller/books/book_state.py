"""What a book knows of its host at this instant, and the conditions derived from it.

The three cursors (provisioning, a node update, servicing), the facts learned about the
machine and the observations made are the book's present; its conditions are derived from
them, once per instant, each stamped with the instant its status changed. That timing is a
concern of its own, so it lives here, apart from :class:`~.book.Book`, which extends this
class with the history and the one way to move the cursors: every reader keeps one object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack

from ..api.hardware import CONDITION
from ..api.hoststate import ConditionType
from . import conditions, host_conditions, update_conditions
from .records import (
    Cursor,
    FactChanges,
    Facts,
    HardwareHealth,
    Observations,
    SeenChanges,
    ServiceCursor,
    UpdateCursor,
)

SOURCES_AGREE = ConditionType.SOURCES_AGREE.value
HARDWARE_HEALTHY = ConditionType.HARDWARE_HEALTHY.value


class BookState:
    """A host's cursors, facts and observations, and the conditions they derive."""

    def __init__(self, key: str, *, now: float, node_only: bool = False) -> None:
        self.key = key
        self.node_only = node_only  # a Node with no Host: no provisioning, only updates
        self.cursor = Cursor(entered_at=now)
        self.update = UpdateCursor(entered_at=now)
        self.service = ServiceCursor(entered_at=now)
        self.facts = Facts()
        self.seen = Observations()
        self.stamps: dict[str, tuple[str, float]] = {}
        self.conditions: dict[str, conditions.Cond] = {}
        self.host_stamps: dict[str, tuple[str, float]] = {}  # the Host's own conditions
        self._changed_at: float | None = now  # the instant of changes not yet stamped

    # -- facts and observations ---------------------------------------------------------

    def note(self, *, now: float, **changes: Unpack[FactChanges]) -> bool:
        """Record facts learned about the machine; True when anything changed."""
        return self._set(self.facts, now, changes)

    def note_seen(self, *, now: float, **changes: Unpack[SeenChanges]) -> bool:
        """Record what was noticed (input problems, outages, what was told); True when
        anything changed."""
        return self._set(self.seen, now, changes)

    def _set(self, target: Facts | Observations, now: float, changes: Mapping[str, Any]) -> bool:
        changed = {name: value for name, value in changes.items() if getattr(target, name) != value}
        if not changed:
            return False
        self._changing(now)
        for name, value in changed.items():
            setattr(target, name, value)
        return True

    def follows_node(self) -> bool:
        """Whether a Node runs on this host (or the book is a Node's own)."""
        return self.node_only or bool(self.facts.node)

    def node_update(self) -> UpdateCursor | None:
        """The update cursor, for a book that follows a Node; None for a host without one."""
        return self.update if self.follows_node() else None

    # -- derived -----------------------------------------------------------------------

    def _changing(self, now: float) -> None:
        """Called before every change: conditions are derived when the clock moves on.

        A step makes several changes at one instant (the machine passes one
        ``now`` through a whole reconcile). Deriving the conditions once per
        instant, when the first change of a later instant arrives, instead of
        after every change, halves the cost of a step; each changed condition
        is stamped with the instant it changed at. Reading never stamps: a
        projection derives what is pending without storing it, so how often
        the book is read changes nothing it later says.
        """
        if self._changed_at != now:
            self._settle()  # the earlier instant's changes, before this one's begin
            self._changed_at = now

    def _settle(self) -> None:
        """Derive the conditions and stamp those whose status changed at ``_changed_at``."""
        at = self._changed_at
        if at is None:
            return
        self._changed_at = None
        self.conditions = self._derive()
        conditions.stamp(self.stamps, self.conditions, at)
        if not self.node_only:
            conditions.stamp(self.host_stamps, self._derive_host(), at)

    def _derive(self) -> dict[str, conditions.Cond]:
        if self.node_only:
            derived = {
                **conditions.derive_node_only(self.update),
                **update_conditions.derive(self.update),
            }
        elif not self.facts.node:
            derived = conditions.derive(self.cursor, self.facts, self.seen, service=self.service)
        else:
            derived = {
                **conditions.derive(self.cursor, self.facts, self.seen, self.update, self.service),
                **update_conditions.derive(self.update),
            }
        if self.facts.health is not None:
            derived[HARDWARE_HEALTHY] = _hardware_healthy(self.facts.health)
        apart = self.seen.sources_disagree
        if apart is not None:
            derived[SOURCES_AGREE] = (
                conditions.Cond("False", "SourcesDisagree", apart)
                if apart
                else conditions.Cond("True", "SourcesAgree")
            )
        return derived

    def _derive_host(self) -> dict[str, conditions.Cond]:
        return host_conditions.derive_host(self.cursor, self.facts, self.seen)

    def stamped_conditions(self) -> dict[str, tuple[conditions.Cond, float]]:
        """Every condition but Stuck, with when its status last changed. Changes nothing."""
        at = self._changed_at
        current = self.conditions if at is None else self._derive()
        return conditions.stamped(current, self.stamps, at, self.cursor.entered_at)

    def stamped_host_conditions(self) -> dict[str, tuple[conditions.Cond, float]]:
        """The Host's summary conditions, with when each status last changed."""
        current = self._derive_host()
        return conditions.stamped(
            current, self.host_stamps, self._changed_at, self.cursor.entered_at
        )


def _hardware_healthy(health: HardwareHealth) -> conditions.Cond:
    """``HardwareHealthy``: the BMC's health rollup, in the reporter's words."""
    status, reason = CONDITION[health.health]
    said = f": {health.message}" if health.message else ""
    rollup = f"the BMC's health rollup is {health.health.value}, as the {health.source} says"
    return conditions.Cond(status, reason, rollup + said)
