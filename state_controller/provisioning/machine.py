"""The provisioning state machine: one step of a host's life per call.

``HostMachine.step`` reads the host's inputs and book, asks the provisioner
to act, and records what the answer means through the book. It follows three
rules learned the hard way by metal3 and Ironic:

* Registration (valid spec, credentials, the backend knows the host) is
  ensured before every state's action.
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

from collections.abc import Callable
from dataclasses import dataclass, field

from ..api import annotations as ann
from ..api.bmc import parse_bmc_address
from ..api.states import ErrorType, OperationalStatus
from ..api.states import ProvisioningState as S
from ..books.book import Book
from .backoff import Backoff
from .inputs import HostInput
from .provisioner import Credentials, HostView, Provisioner
from .results import Outcome, Result

MAX_STEPS = 12
GIVE_UP_DELETE_AFTER = 3  # failed attempts before deletion goes on without that step

Start = Callable[[HostView], Result]
Then = Callable[[Result], None]

FAILED_REASON: dict[ErrorType, str] = {
    ErrorType.REGISTRATION: "RegistrationFailed",
    ErrorType.PROVISIONED_REGISTRATION: "RegistrationFailed",
    ErrorType.INSPECTION: "InspectionFailed",
    ErrorType.PREPARATION: "PreparationFailed",
    ErrorType.PROVISIONING: "ProvisioningFailed",
    ErrorType.POWER_MANAGEMENT: "PowerManagementFailed",
    ErrorType.DETACH: "DetachFailed",
}


@dataclass
class Decision:
    """What the reconciler must do after a step, besides writing projections."""

    requeue_after: float | None = None
    rate_limited: bool = False
    add_finalizer: bool = False
    remove_finalizer: bool = False
    remove_annotations: set[str] = field(default_factory=set)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)

    def after(self, delay: float) -> None:
        if self.requeue_after is None or delay < self.requeue_after:
            self.requeue_after = max(delay, 0.0)


class _Stop(Exception):
    """Ends a step: the host waits (for time, the backend, or its user)."""


class HostMachine:
    def __init__(self, provisioner: Provisioner, *, backoff: Backoff | None = None) -> None:
        self.prov = provisioner
        self.backoff = backoff or Backoff()

    def step(self, book: Book, host: HostInput, now: float) -> Decision:
        decision = Decision()
        run = _Run(self, book, host, now, decision)
        try:
            run.observe()
            for _ in range(MAX_STEPS):
                if not run.once():
                    break
            else:
                decision.after(0.0)  # more to do: come straight back
        except _Stop:
            pass
        return decision


class _Run:
    """One call of :meth:`HostMachine.step`."""

    def __init__(
        self, machine: HostMachine, book: Book, host: HostInput, now: float, decision: Decision
    ) -> None:
        self.prov = machine.prov
        self.backoff = machine.backoff
        self.book, self.host, self.now, self.d = book, host, now, decision
        self.deployed_image: str | None = None  # what register() found running

    # -- observations -------------------------------------------------------------------

    def observe(self) -> None:
        problem = self.host.spec_problem
        self.book.note(
            now=self.now,
            observed_generation=self.host.generation,
            goal=self.goal(),
            spec_problem=problem.message if problem else "",
            spec_problem_reason=problem.reason if problem else "",
        )

    def goal(self) -> S:
        spec = self.host.spec
        if self.host.deleting:
            return S.NONE
        if spec is None:
            return S.AVAILABLE
        if spec.bmc is None:
            return S.UNMANAGED
        if spec.externally_provisioned:
            return S.EXTERNALLY_PROVISIONED
        return S.PROVISIONED if spec.image is not None else S.AVAILABLE

    def once(self) -> bool:
        """Run the current state's action; True when the host moved and may go on."""
        cursor = self.book.cursor
        before = (cursor.state, cursor.operational_status, cursor.error_count)
        if not self.host.deleting:
            self.d.add_finalizer = True
        if self.detached():
            return False
        self.wait_out_backoff()
        if self.host.deleting:
            self.deletion_step()
        else:
            self.lifecycle_step()
        return (cursor.state, cursor.operational_status, cursor.error_count) != before

    # -- the lifecycle ------------------------------------------------------------------

    def lifecycle_step(self) -> None:
        state, spec = self.book.cursor.state, self.host.spec
        if state == S.NONE:
            if spec is not None and spec.bmc is None:
                self.move(S.UNMANAGED, "NoBMC", "spec.bmc is not set; the host stays unmanaged")
            else:
                self.move(S.REGISTERING, "Registering")
            return
        if state == S.UNMANAGED:
            if spec is not None and spec.bmc is not None:
                self.move(S.REGISTERING, "BMCAdded")
            return
        self.ensure_registered()
        assert self.host.spec is not None  # ensure_registered stops on an invalid spec
        if state == S.REGISTERING:
            self.registered()
        elif state == S.INSPECTING:
            self.inspected(self.work(self.prov.inspect(self.view(), restart=False)))
        elif state == S.PREPARING:
            self.prepared(self.work(self.prov.prepare(self.view())))
        elif state == S.AVAILABLE:
            self.available()
        elif state == S.PROVISIONING:
            if not self.image_changed():
                self.provisioned(self.work(self.prov.provision(self.view())))
        elif state == S.PROVISIONED:
            if not self.image_changed():
                self.adopt()
                self.steady()
        elif state == S.EXTERNALLY_PROVISIONED:
            if not self.host.spec.externally_provisioned:
                self.enter(S.PREPARING, self.prov.prepare, self.prepared, "NotExternal")
            else:
                self.adopt()
                self.steady()
        elif state == S.DEPROVISIONING:
            self.deprovisioned(self.work(self.prov.deprovision(self.view())))

    def registered(self) -> None:
        spec, annotations = self.host.spec, self.host.annotations
        assert spec is not None
        if spec.externally_provisioned:
            self.move(S.EXTERNALLY_PROVISIONED, "Registered")
        elif self.deployed_image is not None:  # ensure_registered checked it is spec.image
            self.note_image()
            self.move(
                S.PROVISIONED,
                "FoundProvisioned",
                "the backend already runs spec.image on this host; taken over without deploying",
            )
        elif annotations.get(ann.INSPECT) == ann.INSPECT_DISABLED:
            if self.host.hardware_details is not None:
                self.book.note(now=self.now, hardware=self.host.hardware_details)
            self.enter(S.PREPARING, self.prov.prepare, self.prepared, "InspectionDisabled")
        else:
            self.enter(S.INSPECTING, self.inspect, self.inspected, "Registered")

    def inspect(self, view: HostView) -> Result:
        return self.prov.inspect(view, restart=self.book.cursor.state != S.INSPECTING)

    def inspected(self, result: Result) -> None:
        self.book.note(now=self.now, hardware=result.hardware)
        if self.host.annotations.get(ann.INSPECT, ann.INSPECT_DISABLED) != ann.INSPECT_DISABLED:
            self.d.remove_annotations.add(ann.INSPECT)
        self.enter(S.PREPARING, self.prov.prepare, self.prepared, "InspectionComplete")

    def prepared(self, _: Result) -> None:
        self.move(S.AVAILABLE, "Prepared")

    def available(self) -> None:
        spec, annotations = self.host.spec, self.host.annotations
        assert spec is not None
        if spec.externally_provisioned:
            self.move(S.EXTERNALLY_PROVISIONED, "MarkedExternallyProvisioned")
        elif annotations.get(ann.INSPECT, ann.INSPECT_DISABLED) != ann.INSPECT_DISABLED:
            self.enter(S.INSPECTING, self.inspect, self.inspected, "InspectionRequested")
        elif spec.image is not None:
            self.note_image()
            self.enter(S.PROVISIONING, self.prov.provision, self.provisioned, "ImageRequested")
        else:
            self.steady()

    def note_image(self) -> None:
        """Record the image (and how to write it) the host runs or is about to."""
        spec = self.host.spec
        assert spec is not None and spec.image is not None
        hints = spec.root_device_hints
        self.book.note(
            now=self.now,
            image=spec.image.model_dump(by_alias=True, exclude_none=True),
            root_device_hints=hints.model_dump(by_alias=True, exclude_none=True) if hints else None,
            boot_mode=spec.boot_mode,
        )

    def provisioned(self, result: Result) -> None:
        if result.powered_on is not None:
            self.book.note(now=self.now, powered_on=result.powered_on)
        self.move(S.PROVISIONED, "ProvisioningComplete")

    def image_changed(self) -> bool:
        """Deprovision when the image was removed or replaced (True: handled)."""
        spec = self.host.spec
        assert spec is not None
        have = self.book.facts.image or {}
        if spec.image is not None and (spec.image.url, spec.image.checksum) == (
            have.get("url"),
            have.get("checksum"),
        ):
            return False
        reason = "ImageRemoved" if spec.image is None else "ImageChanged"
        self.enter(S.DEPROVISIONING, self.prov.deprovision, self.deprovisioned, reason)
        return True

    def deprovisioned(self, result: Result) -> None:
        if result.done:
            self.book.note(now=self.now, image=None, root_device_hints=None, powered_on=False)
        if self.host.deleting:
            reason = "Deprovisioned" if result.done else "DeprovisioningAbandoned"
            self.enter_deletion_power_off(reason)
        else:
            self.move(S.AVAILABLE, "Deprovisioned")

    # -- steady states: adoption, power, reboot -----------------------------------------

    def adopt(self) -> None:
        result = self.work(self.prov.adopt(self.view()), ErrorType.PROVISIONED_REGISTRATION)
        if result.adopted:
            self.record("Adopted", result.message or "adopted the running host, not deployed")

    def steady(self) -> None:
        spec, annotations, facts = self.host.spec, self.host.annotations, self.book.facts
        assert spec is not None
        if spec.online != facts.powered_on:
            self.work(self.prov.power(self.view(), on=spec.online), ErrorType.POWER_MANAGEMENT)
            self.book.note(now=self.now, powered_on=spec.online)
            self.record(
                "PoweredOn" if spec.online else "PoweredOff",
                f"power turned {'on' if spec.online else 'off'} to match spec.online",
            )
        if self.book.cursor.error_type is not None:
            self.book.recover(now=self.now, reason="Recovered")
        if ann.REBOOT in annotations:
            if facts.powered_on:
                self.work(self.prov.reboot(self.view()), ErrorType.POWER_MANAGEMENT)
                self.record("Rebooted", f"rebooted as the {ann.REBOOT} annotation asked")
            else:
                self.d.events.append(
                    ("Normal", "RebootSkipped", "the host is off; nothing to reboot")
                )
            self.d.remove_annotations.add(ann.REBOOT)
        raise _Stop

    def record(self, reason: str, message: str) -> None:
        self.book.transition(now=self.now, reason=reason, message=message, always_record=True)

    # -- deletion -----------------------------------------------------------------------

    def deletion_step(self) -> None:
        state, book = self.book.cursor.state, self.book
        if state in (S.NONE, S.UNMANAGED):
            self.move(S.DELETING, "Deleting")
        elif state == S.DELETING:
            self.delete_in_backend()
        elif state == S.POWERING_OFF_BEFORE_DELETE:
            if self.registered_for_deletion():
                self.powered_off(self.work(self.power_off(self.view()), give_up=True))
        elif state == S.DEPROVISIONING:
            if self.registered_for_deletion():
                self.deprovisioned(self.work(self.prov.deprovision(self.view()), give_up=True))
        elif self.registered_for_deletion():
            if state in (S.PROVISIONING, S.PROVISIONED):
                self.enter(
                    S.DEPROVISIONING,
                    self.prov.deprovision,
                    self.deprovisioned,
                    "Deleting",
                    give_up=self.deprovisioned,
                )
            else:
                self.enter_deletion_power_off("Deleting")
        del book

    def enter_deletion_power_off(self, reason: str) -> None:
        self.enter(
            S.POWERING_OFF_BEFORE_DELETE,
            self.power_off,
            self.powered_off,
            reason,
            give_up=self.powered_off,
        )

    def powered_off(self, result: Result) -> None:
        if result.done:
            self.book.note(now=self.now, powered_on=False)
            self.move(S.DELETING, "PoweredOff")
        else:
            self.move(
                S.DELETING, "PowerOffAbandoned", f"deleting without power-off: {result.explain()}"
            )

    def delete_in_backend(self) -> None:
        if self.book.facts.provider_id:
            if self.host.spec is not None and self.host.spec.bmc is not None:
                self.work(self.prov.delete(self.view()), give_up=True)
            else:
                self.d.events.append(
                    (
                        "Warning",
                        "BackendRecordLeft",
                        f"could not delete backend record {self.book.facts.provider_id}: "
                        "the spec is invalid; delete it in the backend by hand",
                    )
                )
            self.book.note(now=self.now, provider_id="")
        self.d.remove_finalizer = True
        raise _Stop

    def registered_for_deletion(self) -> bool:
        """Ensure registration; after repeated failures delete without touching the machine."""
        try:
            self.ensure_registered()
            return True
        except _Stop:
            cursor = self.book.cursor
            if cursor.operational_status != OperationalStatus.ERROR:
                raise
            if cursor.error_count < GIVE_UP_DELETE_AFTER:
                raise
            self.move(
                S.DELETING, "RegistrationAbandoned", f"deleting as is: {cursor.error_message}"
            )
            return False

    def power_off(self, view: HostView) -> Result:
        return self.prov.power(view, on=False)

    # -- detaching ----------------------------------------------------------------------

    def detached(self) -> bool:
        """Honour the ``detached`` annotation; True when nothing else may happen now."""
        book, host = self.book, self.host
        status = book.cursor.operational_status
        if ann.DETACHED not in host.annotations:
            if status == OperationalStatus.DETACHED:
                book.transition(
                    now=self.now,
                    status=OperationalStatus.OK,
                    reason="Reattached",
                    message=f"the {ann.DETACHED} annotation was removed; resuming management",
                )
            return False
        if status != OperationalStatus.DETACHED and book.cursor.state not in (S.NONE, S.UNMANAGED):
            if book.facts.provider_id and self.host.spec is not None and self.host.spec.bmc:
                self.work(self.prov.detach(self.view()), ErrorType.DETACH)
            book.note(now=self.now, provider_id="")
            book.transition(
                now=self.now,
                status=OperationalStatus.DETACHED,
                reason="Detached",
                message="removed from the provisioning backend without deprovisioning",
            )
        if host.deleting:
            if book.cursor.state != S.DELETING:
                self.move(
                    S.DELETING, "DeletingDetached", "detached: deleted without deprovisioning"
                )
            self.d.remove_finalizer = True
        return True

    # -- registration -------------------------------------------------------------------

    def registration_error(self) -> ErrorType:
        if self.book.cursor.state in (S.PROVISIONED, S.EXTERNALLY_PROVISIONED):
            return ErrorType.PROVISIONED_REGISTRATION
        return ErrorType.REGISTRATION

    def ensure_registered(self) -> None:
        host, book = self.host, self.book
        problem = host.spec_problem.message if host.spec_problem else host.credentials_problem
        if problem or host.spec is None or host.spec.bmc is None:
            self.fail(self.registration_error(), problem or "spec.bmc is required to register")
        changed = book.facts.credentials != host.credentials_version
        result = self.work(
            self.prov.register(self.view(), credentials_changed=changed),
            self.registration_error(),
        )
        if book.cursor.state == S.REGISTERING:
            self.deployed_image = result.deployed_image
            if result.deployed_image is not None:
                self.refuse_to_wipe(result.deployed_image)
        facts: dict[str, object] = {"credentials": host.credentials_version}
        if result.provider_id:
            facts["provider_id"] = result.provider_id
        if result.powered_on is not None:
            facts["powered_on"] = result.powered_on
        book.note(now=self.now, **facts)
        if book.cursor.error_type in (ErrorType.REGISTRATION, ErrorType.PROVISIONED_REGISTRATION):
            book.recover(
                now=self.now, reason="Registered", message="the BMC accepted the credentials"
            )

    def refuse_to_wipe(self, running: str) -> None:
        """A host new to us that already runs an image (its records lost: restored from a
        backup, re-applied after a forced delete). Take it over only when the spec says
        what it runs; never let inspection or preparation wipe it. Its backend ID is not
        recorded until then, so deleting the Host leaves the machine alone."""
        spec = self.host.spec
        assert spec is not None
        if spec.externally_provisioned:
            return
        if spec.image is not None and running and spec.image.url == running:
            return
        image = running or "which, it does not say"
        self.fail(
            ErrorType.REGISTRATION,
            f"the backend already runs an image on this host ({image}) that hoststate has "
            "no record of deploying; it will not wipe a running host: set "
            "spec.image to the image it runs to take it over, or spec.externallyProvisioned: "
            "true, or tear it down in the backend",
        )

    def view(self) -> HostView:
        host, facts = self.host, self.book.facts
        spec = host.spec
        assert spec is not None and spec.bmc is not None
        return HostView(
            namespace=host.namespace,
            name=host.name,
            provider_id=facts.provider_id,
            bmc=parse_bmc_address(spec.bmc.address),
            bmc_address=spec.bmc.address,
            credentials=host.credentials or Credentials("", ""),
            disable_certificate_verification=spec.bmc.disable_certificate_verification,
            boot_mac_address=spec.boot_mac_address,
            boot_mode=spec.boot_mode,
            image=facts.image,
            root_device_hints=facts.root_device_hints,
            online=spec.online,
            externally_provisioned=spec.externally_provisioned,
            automated_cleaning=spec.automated_cleaning_mode != "disabled",
            hardware=facts.hardware,
        )

    # -- results ------------------------------------------------------------------------

    def move(self, to: S, reason: str, message: str = "") -> None:
        self.book.move(to, now=self.now, reason=reason, message=message)

    def enter(
        self, to: S, start: Start, then: Then, reason: str, *, give_up: Then | None = None
    ) -> None:
        """Start ``to``'s work; move there once the backend accepted it, finish if done."""
        error = _ERROR_ENTERING.get(to, ErrorType.PROVISIONING)
        result = start(self.view())
        if result.outcome is Outcome.FAILED and give_up is not None and self.gave_up(result, error):
            give_up(result)
            return
        self.settle(result, error)
        self.move(to, reason)
        if result.outcome is Outcome.CONTINUING:
            self.d.after(result.delay)
            raise _Stop
        then(result)

    def work(
        self, result: Result, error: ErrorType | None = None, *, give_up: bool = False
    ) -> Result:
        """Settle the current state's work: returns once complete (or given up)."""
        kind = error or _ERROR_ENTERING.get(self.book.cursor.state, ErrorType.PROVISIONING)
        if result.outcome is Outcome.FAILED and give_up and self.gave_up(result, kind):
            return result
        self.settle(result, kind)
        if result.outcome is Outcome.CONTINUING:
            self.d.after(result.delay)
            raise _Stop
        return result

    def settle(self, result: Result, error: ErrorType) -> None:
        """Record what a refusal or failure means and stop; return when accepted."""
        outcome = result.outcome
        if outcome is Outcome.TRANSIENT:
            self.book.note(now=self.now, transient=result.explain())
            self.d.rate_limited = True
            raise _Stop
        if self.book.seen.transient:
            self.book.note(now=self.now, transient="")
        if outcome is Outcome.RETRY_AFTER:
            self.d.after(result.delay)
            raise _Stop
        if outcome is Outcome.FAILED:
            self.fail(error, result.explain())

    def gave_up(self, result: Result, error: ErrorType) -> bool:
        """While deleting: record the failure, and after a few let deletion go on."""
        if self.book.cursor.error_count + 1 < GIVE_UP_DELETE_AFTER:
            return False
        self.book.fail(error, result.explain(), now=self.now, reason="GivingUp")
        return True

    def fail(self, error: ErrorType, message: str) -> None:
        self.book.fail(error, message, now=self.now, reason=FAILED_REASON[error])
        delay = self.backoff.delay(self.book.cursor.error_count)
        self.book.retry = (self.now + delay, self.inputs())
        self.d.after(delay)
        raise _Stop

    def wait_out_backoff(self) -> None:
        """Retry a failure only once its backoff has passed, whatever woke the host.

        The work queue's delay is not enough: the failure's own status write comes back
        as a watch event (before the write's answer, at times), and a resync or a restart
        wakes every host. Without this each of those retries at once, and each retry's
        write wakes the next: a failing host would hammer its backend. What the user
        changed since (spec, Secret, annotations, deletion) is retried at once.
        """
        retry = self.book.retry
        if retry is None:
            return
        at, inputs = retry
        if self.now >= at or inputs != self.inputs() or self.book.cursor.error_count == 0:
            self.book.retry = None
            return
        self.d.after(at - self.now)
        raise _Stop

    def inputs(self) -> tuple[object, ...]:
        """What a user may change to have a failed host retried at once."""
        host = self.host
        return (
            host.generation,
            host.credentials_version,
            host.deleting,
            tuple(sorted(host.annotations.items())),
        )


_ERROR_ENTERING: dict[S, ErrorType] = {
    S.REGISTERING: ErrorType.REGISTRATION,
    S.INSPECTING: ErrorType.INSPECTION,
    S.PREPARING: ErrorType.PREPARATION,
    S.PROVISIONING: ErrorType.PROVISIONING,
    S.DEPROVISIONING: ErrorType.PROVISIONING,
    S.POWERING_OFF_BEFORE_DELETE: ErrorType.POWER_MANAGEMENT,
    S.DELETING: ErrorType.REGISTRATION,
}
