"""When a host's step, and the operation it is in, are expected to end.

Made when the step begins (:func:`expect`), from the learned estimate of that step for the
machine's pool and class and of each step still to come:

- the step ends at its entry plus the median, and late at its entry plus the late bound;
- the operation ends at the sum of the medians of this step and those after it; its late
  bound adds the steps' spreads (late bound less median) as independent errors do, in
  quadrature, so one slow step is allowed for, not every step slow at once.

The steps to come are those of the operation's order after this one: the provisioning
states left to the goal, a node update's steps (a reboot or a CRI-O reload, not both), a
servicing run's tasks left, its restart and the read-back. A step to come with no learned
duration anywhere adds nothing (a step machines were not seen to take). With no estimate
of the step itself, nothing is said: no constant stands in.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..api.servicing import SERVICE_ACTIVE, ServiceStep
from ..api.states import TRANSIENT_STATES
from ..api.states import ProvisioningState as P
from ..api.updates import UpdateStep as U
from ..books.book import Book
from ..books.records import Expected
from ..servicing.plan import step_of_label
from .keys import ANY, PROVISIONING, SERVICING, UPDATE, UPDATE_TIMED, StepKey
from .learned import Estimate, Learned

# the order an operation's steps come in: each state or step is followed by the rest of
# its chain (provisioning stops at the goal: preparing ends in available)
PROVISIONING_CHAINS: tuple[tuple[P, ...], ...] = (
    (P.REGISTERING, P.INSPECTING, P.PREPARING, P.PROVISIONING),
    (P.DEPROVISIONING,),
    (P.POWERING_OFF_BEFORE_DELETE, P.DELETING),
)
UPDATE_ORDER = (
    U.PENDING, U.PREPARING, U.CORDONING, U.DRAINING, U.APPLYING, U.REBOOTING, U.RESUMING
)  # fmt: skip
AFTER_RELOAD = (U.RESUMING,)  # a rebootless update reloads CRI-O instead of rebooting


def timed_step(book: Book) -> tuple[str, str, float] | None:
    """(kind, step, entered at) of the timed step the host is in now; None when resting
    or waiting for its turn."""
    service = book.service
    if service.step in SERVICE_ACTIVE:
        return SERVICING, service.step.value, service.entered_at
    update = book.node_update()
    if update is not None and update.step.value in UPDATE_TIMED:
        return UPDATE, update.step.value, update.entered_at
    cursor = book.cursor
    if cursor.state in TRANSIENT_STATES:
        return PROVISIONING, cursor.state.value, cursor.entered_at
    return None


def update_steps_after(step: str) -> tuple[str, ...]:
    """The steps of a node update still to come after ``step`` (none after one outside
    the order, such as ``update degraded``)."""
    if step == U.RELOADING_CRIO.value:
        return tuple(s.value for s in AFTER_RELOAD)
    order = [s.value for s in UPDATE_ORDER]
    return tuple(order[order.index(step) + 1 :]) if step in order else ()


def steps_after(book: Book, kind: str, step: str) -> tuple[str, ...]:
    """The steps of the operation still to come after ``step``."""
    if kind == SERVICING:
        service = book.service
        tasks = (
            service.tasks[service.done + 1 :]
            if step != ServiceStep.DRAINING.value
            else service.tasks
        )
        rest = [s.value for s in map(step_of_label, tasks) if s is not None]
        end = (ServiceStep.REBOOTING.value, ServiceStep.VERIFYING.value)
        if step in end:
            return end[end.index(step) + 1 :]
        return (*rest, *end)
    if kind == UPDATE:
        return update_steps_after(step)
    for chain in PROVISIONING_CHAINS:
        names = [s.value for s in chain]
        if step in names:
            later = names[names.index(step) + 1 :]
            if book.seen.goal != P.PROVISIONED:
                later = [s for s in later if s != P.PROVISIONING.value]
            return tuple(later)
    return ()


def basis(estimate: Estimate) -> str:
    """Which machines an estimate's durations were taken on, in words."""
    key = estimate.key
    pool = "the fleet" if key.pool == ANY else f"pool {key.pool or '(none)'}"
    if key.hardware == ANY:
        return f"{pool}, any hardware" if key.pool != ANY else pool
    return f"{pool}, {key.hardware or 'unknown hardware'}"


def expect(
    book: Book, learned: Learned, key_of: Callable[[Book, str, str], StepKey]
) -> Expected | None:
    """What to expect of the host's step now (see the module's docstring); None without
    a timed step or an estimate of it."""
    where = timed_step(book)
    if where is None:
        return None
    kind, step, entered = where
    own = learned.estimate(key_of(book, kind, step))
    if own is None:
        return None
    total, spread = own.median, (own.late - own.median) ** 2
    for later in steps_after(book, kind, step):
        estimate = learned.estimate(key_of(book, kind, later))
        if estimate is not None:
            total += estimate.median
            spread += (estimate.late - estimate.median) ** 2
    return Expected(
        kind=kind,
        step=step,
        entered_at=entered,
        step_ends_at=entered + own.median,
        step_late_at=entered + own.late,
        ends_at=entered + total,
        late_at=entered + total + math.sqrt(spread),
        samples=own.samples,
        basis=basis(own),
    )
