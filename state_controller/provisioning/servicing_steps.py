"""Servicing a provisioned host: its firmware settings, firmware images and RAID volumes,
applied as ``spec.servicingPolicy`` allows, each run a chapter of the host's book.

A run begins only once the backend accepted it (its first answer is not a refusal), after
the settings were checked against the schema the BMC reports (:mod:`..servicing.schema`):
a setting the BMC would refuse fails the run before anything is sent. While it runs, each
change of step (a task done, the restart) is a record; at the end the machine's firmware is
read again, every setting asked for must read back as asked, and the versions before and
after are told. What a run applied is kept as its digest (``facts.serviced``, in
``Host.status``): nothing applied is applied again, after a restart either.

A failed run is not tried again by itself (a firmware image is not flashed twice on a
guess): it waits until the servicing fields change. Taking them back to what was last
applied ends the failure, as does removing them.

Functions of the step's :class:`~.steps.StepContext`, called by the steady states'
handlers (:mod:`.lifecycle`); each answers where the step stops, or ``None`` when the
handler may go on (nothing to do, or the run ended in this call).
"""

from __future__ import annotations

from dataclasses import replace

from ..api.servicing import (
    SERVICE_ACTIVE,
    SERVICING_COMPLETE,
    SERVICING_FAILED,
    SERVICING_STARTED,
    SERVICING_WITHDRAWN,
    ServiceStep,
    ServicingPolicy,
)
from ..api.states import ErrorType
from ..books.records import ServiceCursor, camel
from ..books.stuck import human_duration
from ..servicing.plan import ServicePlan, plan_for
from ..servicing.schema import settings_problem, shown
from .power_requests import power_requests
from .results import Outcome, Result
from .steps import StepContext
from .verdicts import REST, Stopped

DRAIN_POLL = 5.0  # seconds between looks at a drain (each pod that goes queues one too)


def serve(run: StepContext) -> Stopped | None:
    """Go on with a run under way, or start one the spec asks for and the policy allows.
    None when there is nothing to do (or the run ended); a stop while a run goes on."""
    service = run.book.service
    if service.step == ServiceStep.DRAINING:
        return begin(run, plan_for(run.spec()))  # its slot is held: go on draining
    if service.step in SERVICE_ACTIVE:
        return go_on(run, plan_for(run.spec()))
    if service.step == ServiceStep.SERVICED and run.host.uncordon is not None:
        run.host.uncordon()  # a no-op unless the Node is still cordoned for servicing
    plan = plan_for(run.spec())
    wanted = plan.digest != run.book.facts.serviced
    if not wanted:
        if service.step in (ServiceStep.PENDING, ServiceStep.FAILED):
            service_moves(run, ServiceStep.SERVICED, SERVICING_WITHDRAWN, "nothing left to apply")
            if run.host.uncordon is not None:
                run.host.uncordon()
        return None
    if service.step == ServiceStep.FAILED and service.digest == plan.digest:
        return None  # the run that failed is still what is asked: wait for a change
    waiting = waiting_for(run, plan)
    if waiting:
        if service.step != ServiceStep.PENDING or service.message != waiting:
            cursor = ServiceCursor(ServiceStep.PENDING, tasks=plan.labels, digest=plan.digest)
            service_to(run, replace(cursor, message=waiting), "ServicePending", waiting)
        return None
    return begin(run, plan)


def waiting_for(run: StepContext, plan: ServicePlan) -> str:
    """Why the run may not start now ("" when it may)."""
    policy = run.spec().servicing_policy
    if policy == ServicingPolicy.NEVER:
        return (
            "spec.servicingPolicy is not set: not applied (a Host applies them only by "
            "servicing, not at preparation); set it to onReboot or rolling"
        )
    if policy == ServicingPolicy.ON_REBOOT:
        asks = power_requests(run.host.annotations)
        if asks.reboot is None:
            return "waits for a reboot asked by annotation (spec.servicingPolicy onReboot)"
        run.remove_annotations.update(asks.reboot_annotations)  # serviced instead
        return ""
    if not run.host.service_slot():
        return "waits for a free servicing slot in its pool (--servicing-max-unavailable)"
    return ""


def begin(run: StepContext, plan: ServicePlan) -> Stopped | None:
    """Check the settings against the BMC's schema, drain the host's Node, then start
    the run; a drain that goes on stops the step (the run has begun: its slot is held)."""
    cursor = ServiceCursor(ServiceStep.PENDING, tasks=plan.labels, digest=plan.digest)
    service = run.book.service
    draining = service.step == ServiceStep.DRAINING and service.digest == plan.digest
    if not draining:
        read = run.prov.firmware(run.view())
        if stop := run.work(read, ErrorType.SERVICING):
            return stop
        if refused_settings(run, plan, cursor, read.firmware or {}):
            return None
    if run.host.drain is not None:
        drained, waits = run.host.drain()
        if not drained:
            moved = replace(cursor, step=ServiceStep.DRAINING, message=waits)
            if draining:
                service_to(run, moved, "ServiceDraining", waits)
            else:
                told = f"servicing: {', '.join(plan.labels)}; {waits}"
                service_to(run, moved, SERVICING_STARTED, told)
            return run.wait(DRAIN_POLL)
    result = run.prov.service(run.view(), plan, started=False)
    if result.outcome in (Outcome.TRANSIENT, Outcome.RETRY_AFTER):
        return run.settle(result, ErrorType.SERVICING)  # not accepted: nothing moves
    first = plan.tasks[0]
    started = replace(cursor, step=first.step, message=first.label)
    if run.book.service.step == ServiceStep.DRAINING:  # the run began with the drain
        service_to(run, started, camel(first.step.value), first.label)
    else:
        service_to(run, started, SERVICING_STARTED, f"servicing: {', '.join(plan.labels)}")
    return answered(run, result, run.book.facts.firmware or {})


def refused_settings(
    run: StepContext, plan: ServicePlan, cursor: ServiceCursor, firmware: dict[str, object]
) -> bool:
    """Check the settings asked against the schema the firmware read reports; a setting
    the BMC would refuse fails the run before anything is sent (True)."""
    wanted = dict(run.spec().firmware_settings or {})
    run.book.note(now=run.now, firmware=shown(firmware, set(wanted)))
    problem = settings_problem(wanted, firmware)
    if problem:
        failed = replace(cursor, step=ServiceStep.FAILED, message=problem)
        service_to(run, failed, SERVICING_FAILED, problem)
    return bool(problem)


def go_on(run: StepContext, plan: ServicePlan) -> Stopped | None:
    """Poll the run under way (the backend answers for the run it runs, whatever the
    spec asks now: a change waits for the next run)."""
    before = run.book.facts.firmware or {}
    return answered(run, run.prov.service(run.view(), plan, started=True), before)


def answered(run: StepContext, result: Result, before: dict[str, object]) -> Stopped | None:
    """What the backend's answer about the run means: it was refused, failed, goes on,
    or is done (then verified)."""
    cursor = run.book.service
    if result.outcome in (Outcome.TRANSIENT, Outcome.RETRY_AFTER):
        return run.settle(result, ErrorType.SERVICING)
    if result.outcome is Outcome.FAILED:
        message = run.told(result)
        failed = replace(cursor, step=ServiceStep.FAILED, message=message)
        service_to(run, failed, SERVICING_FAILED, message)
        return REST
    caught_up(run, result)
    cursor = run.book.service
    if result.outcome is Outcome.CONTINUING:
        step = result.service_step or cursor.step
        done = result.service_done
        if (step, done) != (cursor.step, cursor.done):
            label = _label(cursor, step, done)
            moved = replace(cursor, step=step, done=done, message=label)
            service_to(run, moved, camel(step.value), label)
        return run.wait(result.delay)
    return verify(run, cursor, before)


def caught_up(run: StepContext, result: Result) -> None:
    """Record the steps the backend says the run began since the step the book shows, each
    at the time it began (never before the book's step, never after now): a restart over
    between two polls is still in the history, with its own duration."""
    for done, step, ago in result.service_passed:
        cursor = run.book.service
        if done <= cursor.done:
            continue
        at = min(max(run.now - ago, cursor.entered_at), run.now)
        label = _label(cursor, step, done)
        moved = replace(cursor, step=step, done=done, message=label)
        run.book.service_to(moved, now=at, reason=camel(step.value), message=label)


def verify(run: StepContext, cursor: ServiceCursor, before: dict[str, object]) -> Stopped | None:
    """Read the firmware back: every setting asked must read as asked."""
    done = replace(cursor, done=len(cursor.tasks))
    if cursor.step != ServiceStep.VERIFYING:
        message = "reading back settings and firmware versions"
        service_to(run, replace(done, step=ServiceStep.VERIFYING, message=message),
                   "VerifyingService", message)  # fmt: skip
    read = run.prov.firmware(run.view())
    if stop := run.work(read, ErrorType.SERVICING):
        return stop
    firmware = read.firmware or {}
    wanted = dict(run.spec().firmware_settings or {})
    run.book.note(now=run.now, firmware=shown(firmware, set(wanted)))
    settings = firmware.get("settings") or {}
    assert isinstance(settings, dict)
    for name, value in sorted(wanted.items()):
        read_back = (settings.get(name) or {}).get("value")
        if str(read_back) != str(value):
            message = (
                f"spec.firmwareSettings.{name}: the BMC reads {read_back!r} after servicing, "
                f"not {value!r}; it may need another reboot, or refused it silently"
            )
            failed = replace(done, step=ServiceStep.FAILED, message=message)
            service_to(run, failed, SERVICING_FAILED, message)
            return REST
    took = human_duration(run.now - (cursor.started_at or run.now))
    changed = _versions_changed(before, firmware)
    message = f"done in {took}" + (f": {changed}" if changed else "")
    run.book.note(now=run.now, serviced=cursor.digest)
    service_to(run, replace(done, step=ServiceStep.SERVICED, message=message),
               SERVICING_COMPLETE, message)  # fmt: skip
    if run.host.uncordon is not None:
        run.host.uncordon()
    return None


def service_moves(run: StepContext, step: ServiceStep, reason: str, message: str) -> None:
    cursor = replace(run.book.service, step=step, message=message)
    service_to(run, cursor, reason, message)


def service_to(run: StepContext, cursor: ServiceCursor, reason: str, message: str) -> None:
    run.book.service_to(cursor, now=run.now, reason=reason, message=message)


def _label(cursor: ServiceCursor, step: ServiceStep, done: int) -> str:
    if step == ServiceStep.REBOOTING:
        return "restarting into what was applied"
    if done < len(cursor.tasks):
        return cursor.tasks[done]
    return step.value


def _versions_changed(before: dict[str, object], after: dict[str, object]) -> str:
    """``bios 1.0.0 -> 1.1.0``, for each component whose version changed."""

    def versions(report: dict[str, object]) -> dict[str, str]:
        components = report.get("components") or []
        assert isinstance(components, list)
        return {str(c.get("component")): str(c.get("version")) for c in components}

    old, new = versions(before), versions(after)
    return ", ".join(
        f"{name} {old[name]} -> {new[name]}"
        for name in sorted(new)
        if name in old and old[name] != new[name]
    )
