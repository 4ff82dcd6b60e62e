"""The steady states' handlers: a provisioned (or externally provisioned) host is adopted
after a lost backend, then its power is kept as ``spec.online`` and the reboot
annotations ask (:mod:`.power_requests`), and it is power-cycled when remediation asks.

Apart from :mod:`.machine` so the state tables and their handlers stay readable in one
file; these run only once a host is at rest.
"""

from __future__ import annotations

from dataclasses import replace

from ..api.states import ErrorType
from ..books.records import POWER_CYCLED
from .power_requests import power_requests
from .steps import StepContext


class SteadySteps(StepContext):
    def adopt(self) -> None:
        result = self.work(self.prov.adopt(self.view()), ErrorType.PROVISIONED_REGISTRATION)
        if result.adopted:
            self.record("Adopted", result.message or "adopted the running host, not deployed")

    def steady(self) -> None:
        """Keep power as ``spec.online`` and the reboot annotations ask (see
        :mod:`.power_requests`); with ``spec.disablePowerOff`` a reboot stands in for
        every power-off."""
        spec, facts = self.spec(), self.book.facts
        asks = power_requests(self.host.annotations)
        held = asks.hold_off is not None and not spec.disable_power_off
        online = spec.online and not held
        if online != facts.powered_on:
            soft = held and asks.hold_off == "soft"
            view = self.view()
            self.work(self.prov.power(view, on=online, soft=soft), ErrorType.POWER_MANAGEMENT)
            self.book.note(now=self.now, powered_on=online)
            why = "to match spec.online" if not held else "held off by a reboot.metal3.io/ key"
            self.record(
                "PoweredOn" if online else "PoweredOff",
                f"power turned {'on' if online else 'off'} {why}",
            )
        error = self.book.cursor.error_type
        if error is not None and error != ErrorType.SERVICING:  # a failed run waits for a change
            self.book.recover(now=self.now, reason="Recovered")
        stand_in = asks.hold_off is not None and spec.disable_power_off
        if stand_in != self.book.seen.hold_off_rebooted:
            if stand_in:
                self.reboot(asks.hold_off or "hard", ())
            self.book.note_seen(now=self.now, hold_off_rebooted=stand_in)
        taken = set(asks.reboot_annotations) <= self.d.remove_annotations  # by servicing
        if asks.reboot is not None and not taken:
            self.reboot(asks.reboot, asks.reboot_annotations)
        if self.host.power_cycle and self.book.facts.powered_on:
            self.power_cycle(self.host.power_cycle)
        self.rest()

    def power_cycle(self, why: str) -> None:
        """Remediation's attempt (:mod:`..remediation`): a hard reboot through the BMC.
        Once the backend has done it, the attempt is counted in the book's remediation
        record and recorded; a refusal is a power management error, which holds further
        attempts until the BMC answers again."""
        view = self.view()
        self.work(self.prov.reboot(view, soft=False), ErrorType.POWER_MANAGEMENT)
        book, known = self.book, self.book.facts.remediation
        if known is not None:
            counted = replace(known, attempts=known.attempts + 1, last_attempt_at=self.now)
            book.note(now=self.now, remediation=counted)
        book.transition(
            now=self.now,
            reason=POWER_CYCLED,
            message=why,
            always_record=True,
            chapter=book.current_chapter(),
        )

    def reboot(self, mode: str, annotations: tuple[str, ...]) -> None:
        if self.book.facts.powered_on:
            view = self.view()
            self.work(self.prov.reboot(view, soft=mode == "soft"), ErrorType.POWER_MANAGEMENT)
            asked = " and ".join(annotations) or "spec.disablePowerOff with a reboot.metal3.io/ key"
            self.record("Rebooted", f"rebooted ({mode}) as {asked} asked")
        else:
            self.tell("Normal", "RebootSkipped", "the host is off; nothing to reboot")
        self.d.remove_annotations.update(annotations)
