"""A machine's remediation, read from its book and told in it.

:func:`situation` turns what the book says (the Node's update step, the machine's
provisioning state, power and errors) and the Node's readiness into the policy's
:class:`~.policy.HostSituation`. :func:`settle` keeps the verdict in the book
(``Facts.remediation``, shown in the HostState's status and restored from it after a
restart), tells the user when remediation stops for a reason of its own (too much of the
pool unhealthy, every attempt made), and records the Node's return after a power-cycle.

The power-cycle itself is the provisioning machine's to make (``HostInput.power_cycle``):
one door to the BMC, whose refusal is an error like any other power request's, and whose
success is a record ``PowerCycled`` that counts the attempt.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api.hardware import Health
from ..api.states import OperationalStatus
from ..api.states import ProvisioningState as S
from ..api.updates import UpdateStep
from ..books.book import Book
from ..books.records import REMEDIATED, Remediation
from ..books.stuck import StuckPolicy
from .policy import Action, HostSituation, Trouble, Verdict

RUNNING = frozenset({S.PROVISIONED, S.EXTERNALLY_PROVISIONED})
HELD = "RemediationHeld"  # Event: the pool has too many unhealthy machines
EXHAUSTED = "RemediationExhausted"  # Event: every attempt made, the Node still unhealthy


@dataclass(frozen=True, slots=True)
class Readiness:
    """The Node's Ready condition: its status, and since when (None: not said)."""

    ready: str
    since: float | None = None
    boot_id: str = ""  # the Node's boot now ("" when not said)


def trouble_of(
    book: Book, readiness: Readiness, stuck: StuckPolicy, now: float
) -> tuple[Trouble | None, float]:
    """Why the Node counts as unhealthy (None: it does not), and since when.

    A Node in its update's ``rebooting`` step is expected to be down: it is in trouble only
    once the step is stuck (past its threshold), and never once it is Ready on a new boot
    (whatever step the book still shows). Any other NotReady Node is in trouble from
    the moment it went NotReady; the policy waits ``not_ready_after`` before acting.
    A host powered off on purpose (``spec.online: false``, a hold-off) has a Node that is
    meant to be down: no trouble.
    """
    if not book.facts.powered_on:
        return None, 0.0
    update = book.update
    if update.step == UpdateStep.REBOOTING:
        if readiness.ready == "True" and readiness.boot_id not in ("", update.boot_id):
            # back on a new boot: the book's step is behind the Node (it is read after
            # the machine's step, and this may be asked before), not a lost reboot
            return None, 0.0
        deadline = stuck.deadline(book.cursor, update, pool=book.facts.pool)
        if deadline is not None and now >= deadline:
            return Trouble.REBOOT_LOST, update.entered_at
        return None, 0.0
    if readiness.ready != "True":
        known = book.facts.remediation
        since = readiness.since or (known.since if known is not None else now)
        return Trouble.NOT_READY, since
    return None, 0.0


def blocked_by(book: Book, *, deleting: bool) -> str:
    """What holds the host so that it must not be power-cycled ("" when nothing does)."""
    cursor = book.cursor
    if deleting:
        return "being deleted"
    if cursor.operational_status == OperationalStatus.DETACHED:
        return "detached"
    if cursor.operational_status == OperationalStatus.SERVICING:
        return "being serviced"
    if cursor.state not in RUNNING:
        return f"not provisioned ({cursor.state.value or 'new'})"
    if cursor.operational_status == OperationalStatus.ERROR and cursor.error_type is not None:
        return f"in error ({cursor.error_type.value}: its BMC or backend is failing)"
    health = book.facts.health
    if health is not None and health.health == Health.CRITICAL:
        return (
            f"failed, by its BMC's health rollup (Critical, as the {health.source} says): "
            "a power-cycle mends no failed part"
        )
    return ""


def situation(book: Book, trouble: Trouble | None, since: float, *, blocked: str) -> HostSituation:
    """The policy's view of the host: its trouble and the attempts its book records."""
    known = book.facts.remediation
    attempts = known.attempts if known is not None else 0
    last = known.last_attempt_at if known is not None else None
    return HostSituation(trouble, since, blocked, attempts, last)


def settle(book: Book, verdict: Verdict, trouble: Trouble | None, since: float, now: float) -> None:
    """Keep the verdict in the book; tell what the user must know of it."""
    known = book.facts.remediation
    if verdict.action is Action.HEALTHY:
        if known is None:
            return
        if known.attempts:
            times = "once" if known.attempts == 1 else f"{known.attempts} times"
            book.transition(
                now=now,
                reason=REMEDIATED,
                message=f"the Node is Ready again after being power-cycled {times} "
                f"({known.trouble})",
                always_record=True,
                chapter=book.current_chapter(),
            )
        book.note(now=now, remediation=None)
        return
    assert trouble is not None  # only a healthy Node has none
    shown = Remediation(
        trouble=trouble.value,
        since=since,
        attempts=known.attempts if known is not None else 0,
        last_attempt_at=known.last_attempt_at if known is not None else None,
        action=verdict.action.value,
        message=verdict.why,
    )
    if shown == known:
        return
    told = known.action if known is not None else ""
    if verdict.action is Action.HELD and told != Action.HELD.value:
        book.notice("Warning", HELD, verdict.why, now=now, state=book.position())
    if verdict.action is Action.EXHAUSTED and told != Action.EXHAUSTED.value:
        book.notice("Warning", EXHAUSTED, verdict.why, now=now, state=book.position())
    book.note(now=now, remediation=shown)
