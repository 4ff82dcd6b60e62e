"""What the runtime tells the outside world; implemented by ``observability``.

The runtime depends only on this protocol, so metrics, events and traces are
plugged in at the top (the CLI) and a test can plug in nothing at all.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

from ..books.book import Book
from ..books.records import Transition

Obj = dict[str, Any]


class Reporter(Protocol):
    def reconcile_span(self, key: str) -> AbstractContextManager[Any]:
        """Wraps one reconcile (a trace span)."""
        ...

    def transitions(self, host: Obj, book: Book, records: list[Transition]) -> None:
        """New transitions of a host: metrics, Events, span events."""
        ...

    def stuck(self, host: Obj, book: Book, message: str) -> None:
        """A host was just found stuck."""
        ...

    def event(self, host: Obj, type_: str, reason: str, message: str) -> None:
        """Something worth telling the host's user that is not a transition."""
        ...

    def status_write(self, resource: str, outcome: str) -> None:
        """``written``, ``conflict`` or ``unchanged``."""
        ...

    def reconciled(self, result: str, seconds: float) -> None:
        """``success``, ``error``, ``requeue`` or ``requeue_after``."""
        ...


class NoReporter:
    """Reports nothing (tests of the runtime alone, benchmarks of the core)."""

    def reconcile_span(self, key: str) -> AbstractContextManager[Any]:
        return nullcontext()

    def transitions(self, host: Obj, book: Book, records: list[Transition]) -> None:
        pass

    def stuck(self, host: Obj, book: Book, message: str) -> None:
        pass

    def event(self, host: Obj, type_: str, reason: str, message: str) -> None:
        pass

    def status_write(self, resource: str, outcome: str) -> None:
        pass

    def reconciled(self, result: str, seconds: float) -> None:
        pass
