"""A host's book: the single record that both state changes and reports read.

Every change of provisioning state or operational status goes through
:meth:`Book.transition`, which records it once: in the bounded history, in the
current chapter, and in the journal that reporters read. Everything else a
user is told (a refused annotation, a stuck host, a warning) goes through
:meth:`Book.notice`, into the same journal. Facts learned about the machine
(its ID in the backend, its hardware, its power) and observations (an invalid
spec, an unreachable backend) go through :meth:`~.book_state.BookState.note`.
All of them re-stamp the conditions whose status changed, so every projection
reads one consistent story.

One module on purpose: the one way to change state has three cursors (provisioning,
a node update, servicing), whose transitions share the numbering, filing and chapter rules
read here together. What the cursors are at this instant, the facts and observations, and
the conditions derived from them (when they are derived, how each is stamped) are the
book's present, in :mod:`.book_state`; the conditions themselves in :mod:`.conditions`
and its siblings.

The book holds the host's story only. What has been written or sent where
(the HostState's confirmed history, the journal position reported, whether a
stuck host was already announced, when a failure may be retried) is delivery
bookkeeping, and belongs to the runtime.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from ..api.servicing import SERVICE_ACTIVE, ServiceStep, servicing
from ..api.states import ErrorType, OperationalStatus, ProvisioningState
from ..api.updates import UpdateStep, in_progress
from .book_state import BookState
from .bounded import Bounded
from .chapters import CHAPTER_OF, SERVICING_CHAPTER, UPDATE_CHAPTER
from .journal import Journal, Notice
from .records import Chapter, Cursor, ServiceCursor, Transition, UpdateCursor

UPDATE_STEPS = frozenset(step.value for step in UpdateStep if in_progress(step))

DEFAULT_HISTORY_LIMIT = 50
DEFAULT_CHAPTER_LIMIT = 20


@dataclass(frozen=True, slots=True)
class Limits:
    history: int = DEFAULT_HISTORY_LIMIT
    chapters: int = DEFAULT_CHAPTER_LIMIT


class Book(BookState):
    """Everything the controller knows and has done for one host."""

    def __init__(
        self, key: str, *, now: float, limits: Limits = Limits(), node_only: bool = False
    ) -> None:
        super().__init__(key, now=now, node_only=node_only)
        self.limits = limits
        self.history: Bounded[Transition] = Bounded(limits.history)
        self.history_dropped = 0
        self.chapters: Bounded[Chapter] = Bounded(limits.chapters)
        self.last_seq = 0
        self.journal = Journal()

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
        chapter: str | None = None,
        error_count: int | None = None,
    ) -> Transition:
        """Change state and/or operational status, and record it.

        ``to`` moves the provisioning state (which resets errors); ``error``
        records a failed attempt (``message`` says why) without moving;
        ``status`` sets the operational status explicitly. A repeat of the
        same error only counts in the cursor; everything else is recorded in
        the history exactly once. ``always_record`` records an event in the
        host's life that changes neither (a power change, an adoption).

        The node's update and a servicing run have cursors of their own, moved by
        :meth:`update_to` and :meth:`service_to`; all three are recorded in one history.

        ``chapter`` files the record in a chapter other than its state's
        (:data:`~.chapters.BOOTSTRAP_CHAPTER`, which opens a host's life before
        the cluster exists).

        ``error_count``: with ``error``, the count another controller keeps (an observed
        host's), taken as it is instead of counting this attempt.
        """
        self._changing(now)
        position = self.position()
        before = self.cursor
        state, entered_at = before.state, before.entered_at
        time_in_previous: float | None = None
        if to is not None and to != state:
            time_in_previous = now - entered_at
            state, entered_at = to, now
        operational, kind = before.operational_status, before.error_type
        why, count = before.error_message, before.error_count
        if error is not None:
            count = count + 1 if error_count is None else error_count
            operational, kind, why = OperationalStatus.ERROR, error, message
        elif to is not None or status is not None:
            operational = status or OperationalStatus.OK
            if operational != OperationalStatus.ERROR:
                kind, why, count = None, "", 0
        # One assignment: a reader on another thread sees the old cursor or the new one.
        cur = self.cursor = Cursor(state, entered_at, operational, kind, why, count)
        notable = (
            always_record
            or cur.state != before.state
            or cur.operational_status != before.operational_status
            or cur.error_type != before.error_type
            or (error is not None and message != before.error_message)
        )
        record = Transition(
            seq=0,
            chapter=chapter or CHAPTER_OF[cur.state],
            from_state=position,
            to_state=self.position(),
            at=now,
            reason=reason,
            message=message,
            recorded=notable,
            time_in_previous_state=time_in_previous,
            error_type=error,
        )
        self._record(record, left_in_error=before.operational_status == OperationalStatus.ERROR)
        self.facts.last_updated = now
        return record

    def update_to(
        self, shown: UpdateCursor, *, now: float, reason: str, message: str = ""
    ) -> Transition:
        """Move the node's update cursor to what the node shows (step, configurations,
        message), and nothing else. A change of step is recorded in the same history, in
        a chapter of its own for each update. History records read where the host *is*:
        its update step while an update is in progress, else its provisioning state, so
        each record's ``from`` is the previous record's ``to``.

        The book keeps the update's own bookkeeping: when the step was entered,
        when the update began, the steps it showed, and the step a degraded
        update failed in.
        """
        self._changing(now)
        before, position = self.update, self.position()
        moved = shown.step != before.step
        starting = moved and not in_progress(before.step) and in_progress(shown.step)
        if starting:
            visited: frozenset[UpdateStep] = frozenset({shown.step})
        elif in_progress(shown.step):
            visited = before.visited | {shown.step}
        else:
            visited = before.visited  # a finished update's conditions still say what it did
        failed: UpdateStep | None = None
        if shown.step == UpdateStep.DEGRADED:
            failed = before.failed_step if before.step == UpdateStep.DEGRADED else before.step
        self.update = replace(
            shown,
            entered_at=now if moved else before.entered_at,
            started_at=now if starting else before.started_at,
            visited=visited,
            failed_step=failed,
        )
        record = self._step_record(
            UPDATE_CHAPTER,
            position,
            before.entered_at,
            moved,
            now=now,
            reason=reason,
            message=message,
        )
        self._record(record, left_in_error=before.step == UpdateStep.DEGRADED, opens=starting)
        if moved and not in_progress(shown.step):
            self._close_chapter(UPDATE_CHAPTER, now)
        return record

    def service_to(
        self, shown: ServiceCursor, *, now: float, reason: str, message: str = ""
    ) -> Transition:
        """Move the servicing cursor, with the operational status that goes with it:
        ``servicing`` while a run is under way (as baremetal-operator shows it; not while it
        waits for its turn), an error of type ``servicing error`` when it failed, OK again
        once it is done. Each run is a chapter of its own; its steps are recorded as a node
        update's are."""
        self._changing(now)
        before, position = self.service, self.position()
        moved = shown.step != before.step
        starting = moved and not servicing(before.step) and servicing(shown.step)
        failed: ServiceStep | None = None
        if shown.step == ServiceStep.FAILED:
            failed = before.failed_step if before.step == ServiceStep.FAILED else before.step
        self.service = replace(
            shown,
            entered_at=now if moved else before.entered_at,
            started_at=now if starting else before.started_at,
            failed_step=failed,
        )
        cur = self.cursor
        if shown.step == ServiceStep.FAILED:
            count = (
                cur.error_count + 1 if moved or message != cur.error_message else cur.error_count
            )
            self.cursor = Cursor(
                cur.state, cur.entered_at, OperationalStatus.ERROR, ErrorType.SERVICING,
                message, count,
            )  # fmt: skip
        elif shown.step in SERVICE_ACTIVE:
            self.cursor = Cursor(cur.state, cur.entered_at, OperationalStatus.SERVICING)
        elif cur.operational_status == OperationalStatus.SERVICING or (
            cur.error_type == ErrorType.SERVICING
        ):  # done, or waiting again (a new run after a failed one)
            self.cursor = Cursor(cur.state, cur.entered_at, OperationalStatus.OK)
        failing = ErrorType.SERVICING if shown.step == ServiceStep.FAILED else None
        record = self._step_record(
            SERVICING_CHAPTER,
            position,
            before.entered_at,
            moved,
            now=now,
            reason=reason,
            message=message,
            error=failing,
        )
        self._record(
            record, left_in_error=before.step == ServiceStep.FAILED and not moved, opens=starting
        )
        if moved and not servicing(shown.step):
            self._close_chapter(SERVICING_CHAPTER, now)
        self.facts.last_updated = now
        return record

    def _step_record(
        self,
        chapter: str,
        position: str,
        entered_at: float,
        moved: bool,
        *,
        now: float,
        reason: str,
        message: str,
        error: ErrorType | None = None,
    ) -> Transition:
        """The record of a step cursor's change (an update's, a servicing run's): from
        ``position`` to where the book is now; recorded only when the step moved."""
        return Transition(
            seq=0,
            chapter=chapter,
            from_state=position,
            to_state=self.position(),
            at=now,
            reason=reason,
            message=message,
            recorded=moved,
            time_in_previous_state=now - entered_at if moved else None,
            error_type=error,
        )

    def _record(self, record: Transition, *, left_in_error: bool, opens: bool = False) -> None:
        """Number and file a notable record in history and chapter; journal every one."""
        if record.recorded:
            self.last_seq += 1
            record.seq = self.last_seq
            self._file(record, left_in_error=left_in_error, opens=opens)
        self.journal.append(record)

    def position(self) -> str:
        """Where the host is, as its history says it: a servicing step, an update step,
        else its state."""
        if servicing(self.service.step):
            return self.service.step.value
        if in_progress(self.update.step):
            return self.update.step.value
        if self.node_only:
            return self.update.step.value
        return self.cursor.state.value

    def current_chapter(self) -> str:
        """The chapter a record made now belongs to: a servicing run's or an update's while
        one is in progress, else the provisioning state's."""
        if servicing(self.service.step):
            return SERVICING_CHAPTER
        if in_progress(self.update.step):
            return UPDATE_CHAPTER
        return CHAPTER_OF[self.cursor.state]

    def moved_in(self, *, now: float, reason: str, message: str) -> Transition:
        """The host arrived with its past from another store (a pivot), and is kept here now.

        Its past is journaled again, marked ``replayed``, for the reporters of this place
        whose counters start here (the time-in-state histograms include the bootstrap
        phase); the history holds it already and is not touched. Then the arrival itself is
        recorded, once.
        """
        for record in replayed(self.history):
            self.journal.append(record)
        return self.transition(now=now, reason=reason, message=message, always_record=True)

    # convenience spellings of transition()

    def move(self, to: ProvisioningState, *, now: float, reason: str, message: str = "") -> None:
        self.transition(to, now=now, reason=reason, message=message)

    def fail(self, error: ErrorType, message: str, *, now: float, reason: str) -> None:
        self.transition(now=now, reason=reason, message=message, error=error)

    def recover(self, *, now: float, reason: str, message: str = "") -> None:
        """Clear an error after the failed action succeeded, without moving."""
        if self.cursor.operational_status == OperationalStatus.ERROR:
            self.transition(now=now, reason=reason, message=message, status=OperationalStatus.OK)

    # -- what a user is told besides transitions -----------------------------------------

    def notice(
        self, type_: str, reason: str, message: str, *, now: float, state: str | None = None
    ) -> Notice:
        """Tell the host's user something that changes no state (becomes an Event).

        ``state``: what it is about when not the provisioning state (an update step)."""
        entry = Notice(
            type_, reason, message, now, self.cursor.state.value if state is None else state
        )
        self.journal.append(entry)
        return entry

    # -- history and chapters ----------------------------------------------------------

    def recorded_since(self, seq: int) -> list[Transition]:
        """Recorded transitions after ``seq`` (those a HostState that confirmed ``seq`` lacks)."""
        return [t for t in self.history if t.seq > seq]

    def _file(self, record: Transition, *, left_in_error: bool, opens: bool = False) -> None:
        """Keep a numbered record in the history and its chapter, opening a new chapter
        (and ending the last) when the record's differs or ``opens`` says it starts one."""
        if len(self.history) == self.history.maxlen:
            self.history_dropped += 1
        self.history.append(record)
        chapter = self.chapters[-1] if self.chapters else None
        if chapter is None or chapter.name != record.chapter or opens:
            if chapter is not None and chapter.ended_at is None:
                chapter.ended_at = record.at
                chapter.outcome = _outcome(record.from_state, left_in_error=left_in_error)
            chapter = Chapter(name=record.chapter, started_at=record.at)
            self.chapters.append(chapter)
        chapter.transitions += 1

    def _close_chapter(self, name: str, now: float) -> None:
        chapter = self.chapters[-1] if self.chapters else None
        if chapter is not None and chapter.name == name and chapter.ended_at is None:
            chapter.ended_at = now
            chapter.outcome = "completed"


def replayed(history: Iterable[Transition]) -> Iterator[Transition]:
    """Copies of recorded transitions, each with the time spent in the state it left."""
    entered: float | None = None
    for record in history:
        moved = record.from_state != record.to_state
        spent = record.at - entered if moved and entered is not None else None
        if moved:
            entered = record.at
        yield replace(record, time_in_previous_state=spent, replayed=True)


def _outcome(last_state: str, *, left_in_error: bool) -> str:
    """How a chapter ended: given up after errors, cut short, or done."""
    if left_in_error:
        return "failed"
    if last_state == ProvisioningState.PROVISIONING.value or last_state in UPDATE_STEPS:
        return "interrupted"  # left provisioning or an update before it was done
    return "completed"
