"""What a state's handler answers: go on, or stop here and when to look again.

Every handler returns one of these instead of leaving the call by an exception, so the
way out of a step is in each handler's ``return``, and the loop of
:class:`~.machine.HostMachine` alone turns it into the reconciler's
:class:`~.steps.Decision`. The helpers a handler is built from (:mod:`.steps`) answer
``None`` when the handler may go on and one of the stops below when it may not; a handler
hands that stop back as it is (``if stop := ...: return stop``).

Five answers, each meaning one thing (after baremetal-operator's ``actionResult``):

* :class:`GoOn` — the handler did what it could; if the host moved, the next state's
  handler runs in the same call;
* :class:`Wait` — work goes on (or the backend asked for time): look again after ``after``
  seconds;
* :class:`Rest` — nothing to do until something changes (a spec, an annotation, a Secret);
* :class:`Refused` — the backend could not take the work now (an outage, a host it holds):
  nothing moved, and the work queue retries at its rate limit;
* :class:`Failed` — the work failed and the failure is recorded in the book: look again
  once its backoff has passed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GoOn:
    """Go on with the next state's handler if the host moved; stop if it did not.

    ``stepped_over``: a stop the handler went past (a registration failure that deletion
    no longer waits for) still counts for when to look again and how (its wait, its rate
    limit), whatever comes next.
    """

    stepped_over: Stopped | None = None


@dataclass(frozen=True, slots=True)
class Wait:
    """Stop here and look again after ``after`` seconds."""

    after: float


@dataclass(frozen=True, slots=True)
class Rest:
    """Stop here: nothing to do until something about the host changes."""


@dataclass(frozen=True, slots=True)
class Refused:
    """Stop here: the backend did not take the work; retried at the work queue's rate limit."""


@dataclass(frozen=True, slots=True)
class Failed:
    """Stop here: the failure is in the book; look again after its backoff (``after`` s)."""

    after: float


GO_ON = GoOn()
REST = Rest()
REFUSED = Refused()

Stopped = Wait | Rest | Refused | Failed
"""A handler's answer that ends the step."""

Verdict = GoOn | Stopped
"""Every answer a handler may give."""
