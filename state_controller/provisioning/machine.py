"""The provisioning state machine: one step of a host's life per call.

``HostMachine.step`` runs a fixed preamble, then the current state's handler
from one of two tables, and repeats while the host moves on:

1. **backoff** — a failed host waits until its backoff has passed, unless
   its user changed something since;
2. **deletion** — a Host being deleted is driven by :data:`DELETION`
   (:mod:`.deletion`), any other by :data:`LIFECYCLE` (:mod:`.lifecycle`);
3. **detached** — the ``detached`` annotation suspends everything once the host is
   at rest, or at once with ``"force": true`` (and lets deletion skip deprovisioning);
4. **registration** — valid spec, credentials, the backend knows the host:
   ensured before every state's action but the few that need no backend.

Each handler is given the step's :class:`~.steps.StepContext` and returns its verdict
(:mod:`.verdicts`): go on, or stop here and when to look again. This loop alone reads
the verdicts and turns them into the :class:`Decision` the reconciler gets.

It follows three rules learned the hard way by metal3 and Ironic:

* Registration is ensured before every state's action.
* A host enters a state that does work (inspecting, provisioning, …) only
  after the backend accepted that work. A refusal (503, 409, connection
  error) moves nothing and records nothing.
* Hosts nobody asked to change are left alone.

Every state's work is driven by one pair: the provisioner call (idempotent:
calling it again polls) and a continuation that runs when it completes. The
continuation is the same whether the work finished at once, right after it
was started, or on a later poll, so no work is ever started twice. With a
backend that finishes at once (the simulated one at zero latency) several
steps run in one call, and their transitions share one status write.
"""

from __future__ import annotations

from ..api import annotations as ann
from ..api.states import ErrorType, OperationalStatus
from ..api.states import ProvisioningState as S
from ..books.book import Book
from .backend_history import take_backend_history
from .backoff import Backoff
from .deletion import DELETION, registered_for_deletion
from .inputs import HostInput
from .lifecycle import LIFECYCLE
from .power_requests import delete_action, detach_asked
from .provisioner import HealthWatched, Provisioner
from .steps import Decision, RetryWindow, StepContext
from .verdicts import REST, Failed, GoOn, Refused, Rest, Verdict, Wait

__all__ = ["DELETION", "LIFECYCLE", "Decision", "HostMachine", "RetryWindow"]

MAX_STEPS = 12

DETACHABLE = frozenset({S.AVAILABLE, S.PROVISIONED, S.EXTERNALLY_PROVISIONED})
"""The states a host is detached in without ``force``: at rest, as baremetal-operator
v0.13.2 detaches (``checkDetachedHost``, internal/controller/metal3.io/
host_state_machine.go: provisioned, externally provisioned, ready, available)."""


class HostMachine:
    def __init__(self, provisioner: Provisioner, *, backoff: Backoff | None = None) -> None:
        self.prov = provisioner
        self.backoff = backoff or Backoff()

    def step(
        self, book: Book, host: HostInput, now: float, retry: RetryWindow | None = None
    ) -> Decision:
        """Advance the host as far as it can go now. ``retry`` is the previous
        step's ``Decision.retry`` (the backoff window of its last failure)."""
        run = StepContext(self.prov, self.backoff, book, host, now, retry)
        decision = Decision()
        observe(run)
        for _ in range(MAX_STEPS):
            before = progress(run)
            verdict = once(run)
            heed(decision, verdict)
            if not isinstance(verdict, GoOn) or progress(run) == before:
                break
        else:
            decision.after(0.0)  # more to do: come straight back
        if isinstance(verdict, Rest) and watched(book, host):
            every = self.prov.health_every if isinstance(self.prov, HealthWatched) else 0.0
            if every > 0:  # at rest, yet its hardware may fail: read its health again then
                decision.after(every)
        decision.retry = run.retry
        decision.remove_finalizer = run.remove_finalizer
        decision.remove_annotations = run.remove_annotations
        decision.backend_said = run.backend_said
        return decision


def watched(book: Book, host: HostInput) -> bool:
    """Whether a host at rest has a health its backend reads: registered, not detached
    nor being deleted."""
    detached = book.cursor.operational_status == OperationalStatus.DETACHED
    return book.facts.health is not None and not host.deleting and not detached


def heed(decision: Decision, verdict: Verdict) -> None:
    """What a verdict asks of the work queue: when to look again, or its rate limit."""
    match verdict:
        case GoOn(stepped_over=stop) if stop is not None:
            heed(decision, stop)
        case Wait(after=delay) | Failed(after=delay):
            decision.after(delay)
        case Refused():
            decision.rate_limited = True
        case GoOn() | Rest():
            pass


def once(run: StepContext) -> Verdict:
    """The preamble, then the current state's handler."""
    if stop := run.wait_out_backoff():  # 1. backoff
        return stop
    table = DELETION if run.host.deleting else LIFECYCLE  # 2. deletion
    if detached := held_detached(run):  # 3. detached
        return detached
    handler = table[run.book.cursor.state]
    if handler.registered and (unregistered := registration(run)):  # 4. registration
        return unregistered
    return handler.act(run)


def registration(run: StepContext) -> Verdict | None:
    """None once the host is registered; else the verdict (deletion may go on without)."""
    if run.host.deleting:
        return registered_for_deletion(run)
    stop = run.ensure_registered()
    if stop is None:
        take_backend_history(run)
    return stop


def progress(run: StepContext) -> tuple[S, OperationalStatus, int]:
    cursor = run.book.cursor
    return cursor.state, cursor.operational_status, cursor.error_count


def observe(run: StepContext) -> None:
    """Note what the host's inputs say, whatever the step does next."""
    problem, spec = run.host.spec_problem, run.host.spec
    consumer = spec.consumer_ref if spec is not None else None
    run.book.note(
        now=run.now,
        consumer=consumer.summary() if consumer is not None else "",
        observed_generation=run.host.generation,
    )
    run.book.note_seen(
        now=run.now,
        goal=goal(run.host),
        spec_problem=problem.message if problem else "",
        spec_problem_reason=problem.reason if problem else "",
    )


def goal(host: HostInput) -> S:
    """The state the host's spec asks for."""
    spec = host.spec
    if host.deleting:
        return S.NONE
    if spec is None:
        return S.AVAILABLE
    if spec.bmc is None:
        return S.UNMANAGED
    if spec.externally_provisioned:
        return S.EXTERNALLY_PROVISIONED
    return S.PROVISIONED if spec.deploys else S.AVAILABLE


def detach_waits(run: StepContext) -> None:
    """Asked to detach mid-operation without ``force``: the user is told once what to do
    to detach now."""
    if not run.book.seen.detach_waiting_told:
        run.book.note_seen(now=run.now, detach_waiting_told=True)
        run.tell(
            "Normal",
            "DetachWaiting",
            f"the host is {run.book.cursor.state.value}: it is detached once that ends; to "
            f'detach now, write {{"force": true}} in the {ann.DETACHED} annotation',
        )


def held_detached(run: StepContext) -> Verdict | None:
    """Honour the ``detached`` annotation: None when the host is not detached, else the
    verdict that ends the step (nothing else may happen now)."""
    book, host = run.book, run.host
    status = book.cursor.operational_status
    if ann.DETACHED not in host.annotations:
        if book.seen.detach_waiting_told:
            book.note_seen(now=run.now, detach_waiting_told=False)
        if status == OperationalStatus.DETACHED:
            book.transition(
                now=run.now,
                status=OperationalStatus.OK,
                reason="Reattached",
                message=f"the {ann.DETACHED} annotation was removed; resuming management",
            )
        return None
    state = book.cursor.state
    if status != OperationalStatus.DETACHED and state not in (S.NONE, S.UNMANAGED):
        if state not in DETACHABLE and not detach_asked(host.annotations)[1]:
            detach_waits(run)
            return None  # the operation goes on
        if book.seen.detach_waiting_told:
            book.note_seen(now=run.now, detach_waiting_told=False)
        known = book.facts.provider_id and host.spec is not None and host.spec.bmc
        if known and (stop := run.work(run.prov.detach(run.view()), ErrorType.DETACH)):
            return stop
        book.note(now=run.now, provider_id="")
        book.transition(
            now=run.now,
            status=OperationalStatus.DETACHED,
            reason="Detached",
            message="removed from the provisioning backend without deprovisioning",
        )
    if host.deleting and delete_action(host.annotations)[0] == "delay":
        if not book.seen.delete_delayed_told:
            book.note_seen(now=run.now, delete_delayed_told=True)
            run.tell(
                "Normal",
                "DeletionDelayed",
                f"the Host is deleted while detached with deleteAction delay: it is "
                f"deprovisioned and deleted once the {ann.DETACHED} annotation is removed",
            )
    elif host.deleting:
        if book.cursor.state != S.DELETING:
            run.move(S.DELETING, "DeletingDetached", "detached: deleted without deprovisioning")
        run.remove_finalizer = True
    return REST
