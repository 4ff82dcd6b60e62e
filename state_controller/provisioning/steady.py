"""The steady states' work: a provisioned (or externally provisioned) host is adopted
after a lost backend, then its power is kept as ``spec.online`` and the reboot
annotations ask (:mod:`.power_requests`), and it is power-cycled when remediation asks.

Functions of the step's :class:`~.steps.StepContext`, called by the handlers of
:mod:`.lifecycle` once a host is at rest; each answers where the step stops, or ``None``
to go on.
"""

from __future__ import annotations

from dataclasses import replace

from ..api.states import ErrorType
from ..books.records import POWER_CYCLED
from .power_requests import power_requests
from .steps import StepContext
from .verdicts import Stopped


def adopt(run: StepContext) -> Stopped | None:
    """Have the backend manage the running host again (after it lost its records)."""
    result = run.prov.adopt(run.view())
    if stop := run.work(result, ErrorType.PROVISIONED_REGISTRATION):
        return stop
    if result.adopted:
        run.record("Adopted", result.message or "adopted the running host, not deployed")
    return None


def keep_steady(run: StepContext) -> Stopped:
    """Keep power as ``spec.online`` and the reboot annotations ask (see
    :mod:`.power_requests`); with ``spec.disablePowerOff`` a reboot stands in for
    every power-off. Then rest: a steady host waits for something to change."""
    spec, facts = run.spec(), run.book.facts
    asks = power_requests(run.host.annotations)
    held = asks.hold_off is not None and not spec.disable_power_off
    online = spec.online and not held
    hard = run.book.cursor.error_type == ErrorType.POWER_MANAGEMENT  # see after_failure
    if online != facts.powered_on:
        soft = held and asks.hold_off == "soft" and not hard
        view = run.view()
        switched = run.prov.power(view, on=online, soft=soft)
        if stop := run.work(switched, ErrorType.POWER_MANAGEMENT):
            return stop
        run.book.note(now=run.now, powered_on=online)
        why = "to match spec.online" if not held else "held off by a reboot.metal3.io/ key"
        run.record(
            "PoweredOn" if online else "PoweredOff",
            f"power turned {'on' if online else 'off'} {why}",
        )
    error = run.book.cursor.error_type
    if error is not None and error != ErrorType.SERVICING:  # a failed run waits for a change
        run.book.recover(now=run.now, reason="Recovered")
    stand_in = asks.hold_off is not None and spec.disable_power_off
    if stand_in != run.book.seen.hold_off_rebooted:
        mode = after_failure(asks.hold_off or "hard", hard)
        if stand_in and (stop := reboot(run, mode, ())):
            return stop
        run.book.note_seen(now=run.now, hold_off_rebooted=stand_in)
    taken = set(asks.reboot_annotations) <= run.remove_annotations  # by servicing
    if (
        asks.reboot is not None
        and not taken
        and (stop := reboot(run, after_failure(asks.reboot, hard), asks.reboot_annotations))
    ):
        return stop
    cycle = run.host.power_cycle and run.book.facts.powered_on
    if cycle and (stop := power_cycle(run, run.host.power_cycle)):
        return stop
    return run.rest()


def after_failure(mode: str, failed: bool) -> str:
    """The mode of a power-off or reboot: hard once a power action failed (the host in a
    power management error), as baremetal-operator v0.13.2 does (``manageHostPower``,
    internal/controller/metal3.io/baremetalhost_controller.go, passes ``PowerOff`` the
    ``force`` of a PowerManagementError; pkg/provisioner/ironic/ironic.go ``PowerOff``
    then goes straight to a hard power off): an OS that did not answer the ACPI request
    is not asked again."""
    return "hard" if failed else mode


def power_cycle(run: StepContext, why: str) -> Stopped | None:
    """Remediation's attempt (:mod:`..remediation`): a hard reboot through the BMC.
    Once the backend has done it, the attempt is counted in the book's remediation
    record and recorded; a refusal is a power management error, which holds further
    attempts until the BMC answers again."""
    view = run.view()
    if stop := run.work(run.prov.reboot(view, soft=False), ErrorType.POWER_MANAGEMENT):
        return stop
    book, known = run.book, run.book.facts.remediation
    if known is not None:
        counted = replace(known, attempts=known.attempts + 1, last_attempt_at=run.now)
        book.note(now=run.now, remediation=counted)
    book.transition(
        now=run.now,
        reason=POWER_CYCLED,
        message=why,
        always_record=True,
        chapter=book.current_chapter(),
    )
    return None


def reboot(run: StepContext, mode: str, annotations: tuple[str, ...]) -> Stopped | None:
    """Reboot a host that is on (told and skipped when it is off); the annotations that
    asked for it are removed once it is done."""
    if run.book.facts.powered_on:
        view = run.view()
        rebooted = run.prov.reboot(view, soft=mode == "soft")
        if stop := run.work(rebooted, ErrorType.POWER_MANAGEMENT):
            return stop
        asked = " and ".join(annotations) or "spec.disablePowerOff with a reboot.metal3.io/ key"
        run.record("Rebooted", f"rebooted ({mode}) as {asked} asked")
    else:
        run.tell("Normal", "RebootSkipped", "the host is off; nothing to reboot")
    run.remove_annotations.update(annotations)
    return None
