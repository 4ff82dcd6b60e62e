"""A host's book: the single record that both state changes and reports read.

Every change of provisioning state or operational status goes through
:meth:`Book.transition`, which records it once: in the bounded history, in the
current chapter, and in the list of transitions not yet handed to the
reporting sinks. Facts learned about the machine (its ID in the backend, its
hardware, its power) and observations (an invalid spec, an unreachable
backend) go through :meth:`Book.note`. Both re-stamp the conditions whose
status changed, so every projection reads one consistent story.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from ..api.states import ErrorType, OperationalStatus, ProvisioningState
from . import conditions
from .chapters import CHAPTER_OF
from .records import Chapter, Cursor, Facts, Observations, Transition

DEFAULT_HISTORY_LIMIT = 50
DEFAULT_CHAPTER_LIMIT = 20


@dataclass(frozen=True, slots=True)
class Limits:
    history: int = DEFAULT_HISTORY_LIMIT
    chapters: int = DEFAULT_CHAPTER_LIMIT


class Book:
    """Everything the controller knows and has done for one host."""

    def __init__(self, key: str, *, now: float, limits: Limits = Limits()) -> None:
        self.key = key
        self.limits = limits
        self.cursor = Cursor(entered_at=now)
        self.facts = Facts()
        self.seen = Observations()
        self.history: deque[Transition] = deque(maxlen=limits.history)
        self.history_dropped = 0
        self.chapters: deque[Chapter] = deque(maxlen=limits.chapters)
        self.last_seq = 0
        self.hoststate_seq = 0  # highest seq confirmed written to HostState history
        self.pending: list[Transition] = []  # for sinks (metrics, events, traces)
        self.stamps: dict[str, tuple[str, float]] = {}
        self.conditions: dict[str, conditions.Cond] = {}
        self._changed_at: float | None = None  # first change not yet stamped
        self.stuck_reported = False
        # When the last failure may be retried, and what the host's inputs were then.
        # Only the machine reads it; no status shows it (after a restart the first
        # reconcile retries at once, which is what a restart should do).
        self.retry: tuple[float, Hashable] | None = None
        self._restamp(now)

    # -- the one way to change state ------------------------------------------------

    def transition(
        self,
        to: ProvisioningState | None = None,
        *,
        now: float,
        reason: str,
        message: str = "",
        status: OperationalStatus | None = None,
        error: ErrorType | None = None,
        always_record: bool = False,
    ) -> Transition:
        """Change state and/or operational status, and record it.

        ``to`` moves the provisioning state (which resets errors); ``error``
        records a failed attempt (``message`` says why) without moving;
        ``status`` sets the operational status explicitly. A repeat of the
        same error only counts in the cursor; everything else is recorded in
        the history exactly once. ``always_record`` records an event in the
        host's life that changes neither (a power change, an adoption).
        """
        cur = self.cursor
        before_state, before_status, before_error = (
            cur.state,
            cur.operational_status,
            cur.error_type,
        )
        before_message = cur.error_message
        time_in_previous: float | None = None
        if to is not None and to != cur.state:
            time_in_previous = now - cur.entered_at
            cur.state = to
            cur.entered_at = now
            self.stuck_reported = False
        if error is not None:
            cur.operational_status = OperationalStatus.ERROR
            cur.error_type = error
            cur.error_message = message
            cur.error_count += 1
        elif to is not None or status is not None:
            cur.operational_status = status or OperationalStatus.OK
            if cur.operational_status != OperationalStatus.ERROR:
                cur.error_type, cur.error_message, cur.error_count = None, "", 0
        notable = (
            always_record
            or cur.state != before_state
            or cur.operational_status != before_status
            or cur.error_type != before_error
            or (error is not None and message != before_message)
        )
        record = Transition(
            seq=0,
            chapter=CHAPTER_OF[cur.state],
            from_state=before_state.value,
            to_state=cur.state.value,
            at=now,
            reason=reason,
            message=message,
            recorded=notable,
            time_in_previous_state=time_in_previous,
            error_type=error,
        )
        if notable:
            self.last_seq += 1
            record.seq = self.last_seq
            self._file(record, left_in_error=before_status == OperationalStatus.ERROR)
        self.pending.append(record)
        self.facts.last_updated = now
        self._restamp(now)
        return record

    # convenience spellings of transition()

    def move(self, to: ProvisioningState, *, now: float, reason: str, message: str = "") -> None:
        self.transition(to, now=now, reason=reason, message=message)

    def fail(self, error: ErrorType, message: str, *, now: float, reason: str) -> None:
        self.transition(now=now, reason=reason, message=message, error=error)

    def recover(self, *, now: float, reason: str, message: str = "") -> None:
        """Clear an error after the failed action succeeded, without moving."""
        if self.cursor.operational_status == OperationalStatus.ERROR:
            self.transition(now=now, reason=reason, message=message, status=OperationalStatus.OK)

    # -- facts and observations ---------------------------------------------------------

    def note(self, *, now: float, **changes: Any) -> bool:
        """Record facts or observations (by attribute name); True when anything changed."""
        changed = False
        for name, value in changes.items():
            target: Any = self.facts if hasattr(self.facts, name) else self.seen
            if getattr(target, name) != value:
                setattr(target, name, value)
                changed = True
        if changed:
            self._restamp(now)
        return changed

    def drain(self) -> list[Transition]:
        """Transitions not yet handed to the reporting sinks."""
        out, self.pending = self.pending, []
        return out

    # -- derived -----------------------------------------------------------------------

    def unconfirmed(self) -> list[Transition]:
        """Recorded transitions not yet confirmed in the HostState history."""
        return [t for t in self.history if t.seq > self.hoststate_seq]

    def _file(self, record: Transition, *, left_in_error: bool) -> None:
        if len(self.history) == self.history.maxlen:
            self.history_dropped += 1
        self.history.append(record)
        chapter = self.chapters[-1] if self.chapters else None
        if chapter is None or chapter.name != record.chapter:
            if chapter is not None and chapter.ended_at is None:
                chapter.ended_at = record.at
                chapter.outcome = _outcome(record.from_state, left_in_error=left_in_error)
            chapter = Chapter(name=record.chapter, started_at=record.at)
            self.chapters.append(chapter)
        chapter.transitions += 1

    def _restamp(self, now: float) -> None:
        """Note that conditions may have changed; they are derived when next read.

        A step makes several changes at the same instant; deriving once when
        the projection reads them (instead of after every change) halves the
        cost of a step, and stamps each changed condition with the time of
        the first change since the last read.
        """
        if self._changed_at is None:
            self._changed_at = now

    def current_conditions(self) -> dict[str, conditions.Cond]:
        """Every condition but Stuck, with stamps brought up to date."""
        at = self._changed_at
        if at is not None:
            self._changed_at = None
            self.conditions = conditions.derive(self.cursor, self.facts, self.seen)
            for ctype, cond in self.conditions.items():
                stamp = self.stamps.get(ctype)
                if stamp is None or stamp[0] != cond.status:
                    self.stamps[ctype] = (cond.status, at)
        return self.conditions


def _outcome(last_state: str, *, left_in_error: bool) -> str:
    """How a chapter ended: given up after errors, cut short, or done."""
    if left_in_error:
        return "failed"
    if last_state == ProvisioningState.PROVISIONING.value:
        return "interrupted"  # left provisioning without reaching provisioned
    return "completed"
