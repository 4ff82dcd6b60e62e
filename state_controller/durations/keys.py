"""What a learned duration is of: the kind of step, the step, the pool and the hardware
class of the machine that took it.

The kind says which vocabulary the step is in (a provisioning state, a node update step or
a servicing step); it is read off the record's chapter in one table, :data:`TIMED`, which
also says which of a vocabulary's steps are learned: a step the machine works through, not a
resting state or a wait for its turn, and an update's ``update degraded``: no step of its
own to expect an end of, but the time a failed apply held its machine, which a rollout's
finish must allow for as often as it happened.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..api.servicing import SERVICE_ACTIVE
from ..api.states import TRANSIENT_STATES
from ..api.updates import IN_PROGRESS, UpdateStep
from ..books.chapters import SERVICING_CHAPTER, UPDATE_CHAPTER

PROVISIONING, UPDATE, SERVICING = "provisioning", "update", "servicing"
ANY = "*"  # a key's pool or class when the estimate rests on every pool or class
CLASS_LIMIT = 64  # characters of a hardware class: a label value, bounded
UNKNOWN_CLASS = ""  # no inventory (yet), or a Node with no machine behind it

# an update's pending is timed: a Node's update is pending from the moment its turn is given
# (its desired config set) until its agent begins; a servicing run's pending is a wait for
# a slot, which says nothing of the machine
UPDATE_TIMED = frozenset(s.value for s in IN_PROGRESS)
UPDATE_LEARNED = UPDATE_TIMED | {UpdateStep.DEGRADED.value}
SERVICE_TIMED = frozenset(s.value for s in SERVICE_ACTIVE)
PROVISIONING_TIMED = frozenset(s.value for s in TRANSIENT_STATES)

# the kind of step a record's chapter times, and the steps of it that are learned
TIMED: Mapping[str, tuple[str, frozenset[str]]] = {
    UPDATE_CHAPTER: (UPDATE, UPDATE_LEARNED),
    SERVICING_CHAPTER: (SERVICING, SERVICE_TIMED),
}
PROVISIONING_STEPS = (PROVISIONING, PROVISIONING_TIMED)


def timed(chapter: str) -> tuple[str, frozenset[str]]:
    """The kind of step a record of ``chapter`` is about, and its learned steps."""
    return TIMED.get(chapter, PROVISIONING_STEPS)


@dataclass(frozen=True, slots=True, order=True)
class StepKey:
    kind: str
    step: str
    pool: str = ANY
    hardware: str = ANY

    def wider(self) -> tuple[StepKey, ...]:
        """The keys an estimate for this one may rest on, narrowest first: this one, the
        same class in any pool, the same pool on any class, then the whole fleet (the
        machine decides most of a step's time; the pool's workloads decide a drain's)."""
        kind, step = self.kind, self.step
        return (
            self,
            StepKey(kind, step, ANY, self.hardware),
            StepKey(kind, step, self.pool, ANY),
            StepKey(kind, step, ANY, ANY),
        )


def hardware_class(inventory: Mapping[str, Any] | None) -> str:
    """``Dell Inc. PowerEdge R750``: the vendor and model the inventory reports, bounded;
    "" when there is no inventory."""
    vendor = (inventory or {}).get("systemVendor") or {}
    if not isinstance(vendor, Mapping):
        return UNKNOWN_CLASS
    words = [str(vendor.get(k) or "").strip() for k in ("manufacturer", "productName")]
    return " ".join(w for w in words if w)[:CLASS_LIMIT]
