"""The journal reader that teaches :class:`~.learned.Learned`: each recorded transition
that leaves a timed step is one duration of that step, for the book's pool and class. It
also keeps, on each book it writes, what to expect of the step under way
(:meth:`DurationReader.expect`).

A book is read whole the first time (its history, :func:`~..books.book.replayed`): after a
restart, or when a shard takes it over, the durations its HostState kept are learned again.
After that only its journal's new records. :class:`ReadUpTo` (kept by the runtime beside
the book's other delivery marks) holds the last record learned, so each is learned once
however often the book is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..books.book import Book, replayed
from ..books.journal import Entry
from ..books.records import Transition
from .expected import expect, timed_step
from .keys import StepKey, hardware_class, timed
from .learned import Learned

SAME_ENTRY = 1.0  # seconds: a step's entry read back from a status is rounded to them


@dataclass(slots=True)
class ReadUpTo:
    seq: int = -1  # the last record learned; -1: the book's history is not read yet


class DurationReader:
    def __init__(self, learned: Learned, pool_of: Callable[[Book], str]) -> None:
        self.learned = learned
        self.pool_of = pool_of

    def key_of(self, book: Book, kind: str, step: str) -> StepKey:
        """The key of ``step`` for this book's machine: its pool and hardware class."""
        return StepKey(kind, step, self.pool_of(book), hardware_class(book.facts.hardware))

    def read(self, book: Book, entries: Sequence[Entry], up_to: ReadUpTo) -> None:
        """Learn the records of ``entries`` (of the whole history, on the first read)."""
        first = up_to.seq < 0
        records: Iterable[Transition] = (
            replayed(book.history)
            if first
            else (e for e in entries if isinstance(e, Transition) and e.recorded)
        )
        for record in records:
            if record.seq <= up_to.seq:
                continue
            up_to.seq = record.seq
            spent = record.time_in_previous_state
            kind, steps = timed(record.chapter)
            if spent is not None and record.from_state in steps:
                self.learned.learn(self.key_of(book, kind, record.from_state), spent)
        if first:
            up_to.seq = max(up_to.seq, book.last_seq)

    def expect(self, book: Book, now: float) -> None:
        """Keep the book's :class:`~..books.records.Expected` for the step it is in: made
        once the step has an estimate, kept until the step changes, gone at rest."""
        current, where = book.seen.expected, timed_step(book)
        if where is None:
            if current is not None:
                book.note_seen(now=now, expected=None)
            return
        kind, step, entered = where
        if (
            current is not None
            and (current.kind, current.step) == (kind, step)
            and abs(current.entered_at - entered) < SAME_ENTRY  # as a status rounds it
        ):
            return
        book.note_seen(now=now, expected=expect(book, self.learned, self.key_of))
