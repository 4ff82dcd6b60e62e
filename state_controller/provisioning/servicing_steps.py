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

DRAIN_POLL = 5.0  # seconds between looks at a drain (each pod that goes queues one too)


class ServicingSteps(StepContext):
    def serve(self) -> None:
        """Go on with a run under way, or start one the spec asks for and the policy allows.
        Returns when there is nothing to do; stops the step while a run goes on."""
        service = self.book.service
        if service.step == ServiceStep.DRAINING:
            self.begin(plan_for(self.spec()))  # its slot is held: go on draining
            return
        if service.step in SERVICE_ACTIVE:
            self.go_on(plan_for(self.spec()))
            return
        if service.step == ServiceStep.SERVICED and self.host.uncordon is not None:
            self.host.uncordon()  # a no-op unless the Node is still cordoned for servicing
        plan = plan_for(self.spec())
        wanted = plan.digest != self.book.facts.serviced
        if not wanted:
            if service.step in (ServiceStep.PENDING, ServiceStep.FAILED):
                self.service_moves(
                    ServiceStep.SERVICED, SERVICING_WITHDRAWN, "nothing left to apply"
                )
                if self.host.uncordon is not None:
                    self.host.uncordon()
            return
        if service.step == ServiceStep.FAILED and service.digest == plan.digest:
            return  # the run that failed is still what is asked: wait for a change
        waiting = self.waiting_for(plan)
        if waiting:
            if service.step != ServiceStep.PENDING or service.message != waiting:
                cursor = ServiceCursor(ServiceStep.PENDING, tasks=plan.labels, digest=plan.digest)
                self.service_to(replace(cursor, message=waiting), "ServicePending", waiting)
            return
        self.begin(plan)

    def waiting_for(self, plan: ServicePlan) -> str:
        """Why the run may not start now ("" when it may)."""
        policy = self.spec().servicing_policy
        if policy == ServicingPolicy.NEVER:
            return "spec.servicingPolicy is not set: applied at the next preparation only"
        if policy == ServicingPolicy.ON_REBOOT:
            asks = power_requests(self.host.annotations)
            if asks.reboot is None:
                return "waits for a reboot asked by annotation (spec.servicingPolicy onReboot)"
            self.d.remove_annotations.update(asks.reboot_annotations)  # serviced instead
            return ""
        if not self.host.service_slot():
            return "waits for a free servicing slot in its pool (--servicing-max-unavailable)"
        return ""

    def begin(self, plan: ServicePlan) -> None:
        """Check the settings against the BMC's schema, drain the host's Node, then start
        the run; a drain that goes on stops the step (the run has begun: its slot is held)."""
        cursor = ServiceCursor(ServiceStep.PENDING, tasks=plan.labels, digest=plan.digest)
        service = self.book.service
        draining = service.step == ServiceStep.DRAINING and service.digest == plan.digest
        if not draining and not self.checked(plan, cursor):
            return
        if self.host.drain is not None:
            drained, waits = self.host.drain()
            if not drained:
                moved = replace(cursor, step=ServiceStep.DRAINING, message=waits)
                if draining:
                    self.service_to(moved, "ServiceDraining", waits)
                else:
                    told = f"servicing: {', '.join(plan.labels)}; {waits}"
                    self.service_to(moved, SERVICING_STARTED, told)
                self.wait(DRAIN_POLL)
        result = self.prov.service(self.view(), plan, started=False)
        if result.outcome in (Outcome.TRANSIENT, Outcome.RETRY_AFTER):
            self.settle(result, ErrorType.SERVICING)  # not accepted: nothing moves
        first = plan.tasks[0]
        started = replace(cursor, step=first.step, message=first.label)
        if self.book.service.step == ServiceStep.DRAINING:  # the run began with the drain
            self.service_to(started, camel(first.step.value), first.label)
        else:
            self.service_to(started, SERVICING_STARTED, f"servicing: {', '.join(plan.labels)}")
        self.answered(result, self.book.facts.firmware or {})

    def checked(self, plan: ServicePlan, cursor: ServiceCursor) -> bool:
        """Read the firmware and check the settings asked against its schema; a setting
        the BMC would refuse fails the run before anything is sent (False)."""
        firmware = self.work(self.prov.firmware(self.view()), ErrorType.SERVICING).firmware or {}
        wanted = dict(self.spec().firmware_settings or {})
        self.book.note(now=self.now, firmware=shown(firmware, set(wanted)))
        problem = settings_problem(wanted, firmware)
        if problem:
            failed = replace(cursor, step=ServiceStep.FAILED, message=problem)
            self.service_to(failed, SERVICING_FAILED, problem)
        return not problem

    def go_on(self, plan: ServicePlan) -> None:
        """Poll the run under way (the backend answers for the run it runs, whatever the
        spec asks now: a change waits for the next run)."""
        before = self.book.facts.firmware or {}
        self.answered(self.prov.service(self.view(), plan, started=True), before)

    def answered(self, result: Result, before: dict[str, object]) -> None:
        cursor = self.book.service
        if result.outcome in (Outcome.TRANSIENT, Outcome.RETRY_AFTER):
            self.settle(result, ErrorType.SERVICING)
        if result.outcome is Outcome.FAILED:
            message = self.told(result)
            failed = replace(cursor, step=ServiceStep.FAILED, message=message)
            self.service_to(failed, SERVICING_FAILED, message)
            self.rest()
        if result.outcome is Outcome.CONTINUING:
            step = result.service_step or cursor.step
            done = result.service_done
            if (step, done) != (cursor.step, cursor.done):
                label = _label(cursor, step, done)
                moved = replace(cursor, step=step, done=done, message=label)
                self.service_to(moved, camel(step.value), label)
            self.wait(result.delay)
        self.verify(cursor, before)

    def verify(self, cursor: ServiceCursor, before: dict[str, object]) -> None:
        """Read the firmware back: every setting asked must read as asked."""
        done = replace(cursor, done=len(cursor.tasks))
        if cursor.step != ServiceStep.VERIFYING:
            message = "reading back settings and firmware versions"
            self.service_to(replace(done, step=ServiceStep.VERIFYING, message=message),
                            "VerifyingService", message)  # fmt: skip
        firmware = self.work(self.prov.firmware(self.view()), ErrorType.SERVICING).firmware or {}
        wanted = dict(self.spec().firmware_settings or {})
        self.book.note(now=self.now, firmware=shown(firmware, set(wanted)))
        settings = firmware.get("settings") or {}
        assert isinstance(settings, dict)
        for name, value in sorted(wanted.items()):
            read = (settings.get(name) or {}).get("value")
            if str(read) != str(value):
                message = (
                    f"spec.firmwareSettings.{name}: the BMC reads {read!r} after servicing, "
                    f"not {value!r}; it may need another reboot, or refused it silently"
                )
                failed = replace(done, step=ServiceStep.FAILED, message=message)
                self.service_to(failed, SERVICING_FAILED, message)
                self.rest()
        took = human_duration(self.now - (cursor.started_at or self.now))
        changed = _versions_changed(before, firmware)
        message = f"done in {took}" + (f": {changed}" if changed else "")
        self.book.note(now=self.now, serviced=cursor.digest)
        self.service_to(replace(done, step=ServiceStep.SERVICED, message=message),
                        SERVICING_COMPLETE, message)  # fmt: skip
        if self.host.uncordon is not None:
            self.host.uncordon()

    def service_moves(self, step: ServiceStep, reason: str, message: str) -> None:
        cursor = replace(self.book.service, step=step, message=message)
        self.service_to(cursor, reason, message)

    def service_to(self, cursor: ServiceCursor, reason: str, message: str) -> None:
        self.book.service_to(cursor, now=self.now, reason=reason, message=message)


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
