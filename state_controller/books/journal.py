"""The journal: everything a host's user is told, in the order it happened.

Two kinds of entry, both written only by the book:

* a :class:`~.records.Transition` — every change of state or status, and every
  failed attempt (a repeated error is not in the history, but it is in the
  journal, so each attempt reaches the error metric);
* a :class:`Notice` — something worth telling that changes no state: a refused
  annotation, a stuck host, a warning the state machine raises.

Reporters (metrics, Events, span events) read the journal and nothing else.
The journal does not know who has read what: a reader keeps its own position
(:attr:`Journal.end` after reading) and asks for :meth:`Journal.since` that
position. It holds only the last :data:`JOURNAL_LIMIT` entries; a reader that
falls further behind is told how many it missed. One reconcile writes a few
entries and the runtime reads them before the next, so the limit is never
reached in practice; it only keeps a forgotten reader from growing a book.
"""

from __future__ import annotations

from dataclasses import dataclass

from .records import Transition

JOURNAL_LIMIT = 64


@dataclass(frozen=True, slots=True)
class Notice:
    """Something a user is told that is not a change of state (an Event, a counter)."""

    type: str  # "Normal" or "Warning", as Kubernetes Events have it
    reason: str  # CamelCase, as an Event's reason
    message: str
    at: float
    state: str  # the provisioning state the host was in, or the update step it is about


STUCK = "Stuck"
SLOW = "Slow"  # a step past its usual late bound (durations/): told once per step
INVALID_ANNOTATION = "InvalidAnnotation"

Entry = Transition | Notice


class Journal:
    """A bounded, append-only list of entries, read by position."""

    __slots__ = ("_entries", "_first")

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._first = 0  # the position of _entries[0]

    def append(self, entry: Entry) -> None:
        self._entries.append(entry)
        if len(self._entries) > 2 * JOURNAL_LIMIT:  # trim in batches: amortised O(1)
            cut = len(self._entries) - JOURNAL_LIMIT
            del self._entries[:cut]
            self._first += cut

    @property
    def end(self) -> int:
        """The position after the last entry: what a reader that read everything holds."""
        return self._first + len(self._entries)

    def since(self, position: int) -> tuple[list[Entry], int]:
        """Entries from ``position`` on, and how many before them were already trimmed."""
        missed = max(self._first - position, 0)
        return self._entries[max(position - self._first, 0) :], missed
