"""What the runtime tells the outside world; implemented by ``observability``.

The runtime depends only on this protocol, so metrics, events and traces are
plugged in at the top (the CLI) and a test can plug in nothing at all.

Everything a host's user is told arrives through :meth:`Reporter.report`,
read from the book's journal: transitions, and notices (a refused
annotation, a stuck host, a warning from the state machine). The other
methods report on the controller's own machinery, not on hosts.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import NamedTuple, Protocol

from ...api.objects import Obj
from ...books.journal import Entry


class Where(NamedTuple):
    """Where a book stands, as a reconcile span tells it: its provisioning state and,
    for a followed Node, its update step ("" when there is none)."""

    state: str = ""
    step: str = ""


NOWHERE = Where()


class ReconcileSpan(Protocol):
    # False when nothing is recorded: the runtime then does not work out what it would say
    recording: bool

    def finish(self, result: str, before: Where, after: Where, error: BaseException | None) -> None:
        """Tell how the reconcile went, before the span ends."""
        ...


class Reporter(Protocol):
    def reconcile_span(self, key: str) -> AbstractContextManager[ReconcileSpan]:
        """Wraps one reconcile (a trace span); everything reported inside is its child."""
        ...

    def report(self, host: Obj, entries: Sequence[Entry]) -> None:
        """New journal entries of a host, in order: metrics, Events, span events."""
        ...

    def status_write(self, resource: str, outcome: str) -> None:
        """``written``, ``conflict`` or ``unchanged``."""
        ...

    def reconciled(self, kind: str, result: str, seconds: float) -> None:
        """A reconcile of a key of ``kind`` (:class:`.keys.Kind`): ``success``, ``error``,
        ``requeue`` or ``requeue_after``."""
        ...


class NoSpan:
    recording = False

    def finish(self, result: str, before: Where, after: Where, error: BaseException | None) -> None:
        pass


NO_SPAN = NoSpan()


class NoReporter:
    """Reports nothing (tests of the runtime alone, benchmarks of the core)."""

    def reconcile_span(self, key: str) -> AbstractContextManager[ReconcileSpan]:
        return nullcontext(NO_SPAN)

    def report(self, host: Obj, entries: Sequence[Entry]) -> None:
        pass

    def status_write(self, resource: str, outcome: str) -> None:
        pass

    def reconciled(self, kind: str, result: str, seconds: float) -> None:
        pass
