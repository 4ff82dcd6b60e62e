"""One step of one host: what every state's handler is given and is built from.

A :class:`StepContext` is made for one call of ``HostMachine.step`` and handed to each
handler it runs: the provisioner, the backoff, the host's book, its inputs, the instant,
the backoff window in hand, and what the reconciler is asked besides writing the book
(annotations and the finalizer to remove, the backend's words to log). Its helpers turn a
provisioner's answer into what it means for the host:

* :meth:`StepContext.enter` starts a state's work and moves there only once the
  backend accepted it; :meth:`StepContext.work` settles the current state's work;
* a refusal (``transient``, ``retry_after``) moves and records nothing;
  a failure records the error and backs off (:meth:`StepContext.fail`);
* registration (valid spec, credentials, the backend knows the host) is
  ensured by :meth:`StepContext.ensure_registered` before every state's action.

Where the host must wait, a helper answers the stop (:mod:`.verdicts`) and the handler
returns it; ``None`` means go on. Nothing here leaves a handler by an exception, so each
way out of a step is a ``return`` in the handler a reader is looking at.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import NamedTuple

from ..api.bmc import parse_bmc_address
from ..api.host import HostSpec
from ..api.states import ErrorType
from ..api.states import ProvisioningState as S
from ..books.book import Book
from ..books.records import FactChanges
from .backoff import Backoff
from .hardware_health import note_health
from .inputs import HostInput
from .provisioner import Credentials, HostView, Provisioner
from .results import Outcome, Result
from .verdicts import REFUSED, REST, Failed, Rest, Stopped, Verdict, Wait

RAMDISK_FIELD = "preprovisioningNetworkDataName"  # given to the backend at registration
GIVE_UP_DELETE_AFTER = 3  # failed attempts before deletion goes on without that step

Start = Callable[[HostView], Result]
"""Asks the backend for a state's work (again: polls it)."""
Then = Callable[["StepContext", Result], Verdict]
"""Goes on once a state's work is complete: the same whenever that is."""

FAILED_REASON: dict[ErrorType, str] = {
    ErrorType.REGISTRATION: "RegistrationFailed",
    ErrorType.PROVISIONED_REGISTRATION: "RegistrationFailed",
    ErrorType.INSPECTION: "InspectionFailed",
    ErrorType.PREPARATION: "PreparationFailed",
    ErrorType.PROVISIONING: "ProvisioningFailed",
    ErrorType.POWER_MANAGEMENT: "PowerManagementFailed",
    ErrorType.DETACH: "DetachFailed",
}

ERROR_OF_STATE: dict[S, ErrorType] = {
    S.REGISTERING: ErrorType.REGISTRATION,
    S.INSPECTING: ErrorType.INSPECTION,
    S.PREPARING: ErrorType.PREPARATION,
    S.PROVISIONING: ErrorType.PROVISIONING,
    S.DEPROVISIONING: ErrorType.PROVISIONING,
    S.POWERING_OFF_BEFORE_DELETE: ErrorType.POWER_MANAGEMENT,
    S.DELETING: ErrorType.REGISTRATION,
}


@dataclass(frozen=True, slots=True)
class RetryWindow:
    """When a failed host may be tried again, and what its inputs were when it failed.

    No status shows it, so it is not part of the book: the runtime keeps it
    beside the book and hands it back to the next step (after a restart there
    is none, and the first step retries at once, which is what a restart
    should do).
    """

    at: float
    inputs: Hashable


@dataclass
class Decision:
    """What the reconciler must do after a step, besides writing projections."""

    requeue_after: float | None = None
    rate_limited: bool = False
    remove_finalizer: bool = False
    remove_annotations: set[str] = field(default_factory=set)
    retry: RetryWindow | None = None  # hand it to this host's next step
    backend_said: str = ""  # the backend's words behind what the user was told: log them

    def after(self, delay: float) -> None:
        if self.requeue_after is None or delay < self.requeue_after:
            self.requeue_after = max(delay, 0.0)


class StepContext:
    """What every handler of one step is given: the host's book and inputs, the backend,
    the instant; and the helpers that turn the backend's answers into verdicts."""

    def __init__(
        self,
        provisioner: Provisioner,
        backoff: Backoff,
        book: Book,
        host: HostInput,
        now: float,
        retry: RetryWindow | None = None,
    ) -> None:
        self.prov, self.backoff = provisioner, backoff
        self.book, self.host, self.now = book, host, now
        self.retry = retry  # the last failure's backoff window, until it is waited out
        self.deployed_image: str | None = None  # what register() found running
        # asked of the reconciler besides writing the book (see Decision)
        self.remove_annotations: set[str] = set()
        self.remove_finalizer = False
        self.backend_said = ""

    # -- recording ----------------------------------------------------------------------

    def move(self, to: S, reason: str, message: str = "") -> None:
        self.book.move(to, now=self.now, reason=reason, message=message)

    def record(self, reason: str, message: str) -> None:
        """Something in the host's life that moves no state (a power change, an adoption)."""
        self.book.transition(now=self.now, reason=reason, message=message, always_record=True)

    def tell(self, type_: str, reason: str, message: str) -> None:
        """Tell the host's user something that is not a transition (an Event)."""
        self.book.notice(type_, reason, message, now=self.now)

    # -- the backend's answers ----------------------------------------------------------

    def enter(
        self, to: S, start: Start, then: Then, reason: str, *, give_up: Then | None = None
    ) -> Verdict:
        """Start ``to``'s work; move there once the backend accepted it, finish if done."""
        error = ERROR_OF_STATE.get(to, ErrorType.PROVISIONING)
        result = start(self.view())
        if result.outcome is Outcome.FAILED and give_up is not None and self.gave_up(result, error):
            return give_up(self, result)
        if stop := self.settle(result, error):
            return stop
        self.move(to, reason)
        if result.outcome is Outcome.CONTINUING:
            return self.wait(result.delay)
        return then(self, result)

    def work(
        self, result: Result, error: ErrorType | None = None, *, give_up: bool = False
    ) -> Stopped | None:
        """Settle the current state's work: None once complete (or given up)."""
        kind = error or ERROR_OF_STATE.get(self.book.cursor.state, ErrorType.PROVISIONING)
        if result.outcome is Outcome.FAILED and give_up and self.gave_up(result, kind):
            return None
        if stop := self.settle(result, kind):
            return stop
        if result.outcome is Outcome.CONTINUING:
            return self.wait(result.delay)
        return None

    def settle(self, result: Result, error: ErrorType) -> Stopped | None:
        """Record what a refusal or failure means and stop; None when accepted."""
        outcome = result.outcome
        if outcome is Outcome.TRANSIENT:
            self.book.note_seen(now=self.now, transient=self.told(result))
            return REFUSED
        if self.book.seen.transient:
            self.book.note_seen(now=self.now, transient="")
        if outcome is Outcome.RETRY_AFTER:
            return self.wait(result.delay)
        if outcome is Outcome.FAILED:
            return self.fail(error, self.told(result))
        return None

    def told(self, result: Result) -> str:
        """What the host's user reads of a refusal or a failure: our sentence only.

        The backend's own words may quote what a remote server answered (a BMC, an image
        server, whatever address a Host named): shown to the Host's author, they would
        make the backend a scanner of the networks it reaches. They are handed to the
        reconciler, which logs them for the operator (:attr:`Decision.backend_said`).
        """
        if result.details:
            self.backend_said = result.details
        return result.message

    def gave_up(self, result: Result, error: ErrorType) -> bool:
        """While deleting: record the failure, and after a few let deletion go on."""
        if self.book.cursor.error_count + 1 < GIVE_UP_DELETE_AFTER:
            return False
        self.book.fail(error, self.told(result), now=self.now, reason="GivingUp")
        return True

    def wait(self, delay: float) -> Wait:
        """Come back after ``delay`` seconds."""
        return Wait(delay)

    def rest(self) -> Rest:
        """Nothing more to do until something changes."""
        return REST

    def fail(self, error: ErrorType, message: str) -> Failed:
        """Record the failure and back off: the host is tried again once its window passed."""
        self.book.fail(error, message, now=self.now, reason=FAILED_REASON[error])
        delay = self.backoff.delay(self.book.cursor.error_count)
        self.retry = RetryWindow(self.now + delay, self.inputs())
        return Failed(delay)

    # -- backoff ------------------------------------------------------------------------

    def wait_out_backoff(self) -> Wait | None:
        """Retry a failure only once its backoff has passed, whatever woke the host.

        The work queue's delay is not enough: the failure's own status write comes back
        as a watch event (before the write's answer, at times), and a resync or a restart
        wakes every host. Without this each of those retries at once, and each retry's
        write wakes the next: a failing host would hammer its backend. What the user
        changed since (spec, Secret, annotations, deletion) is retried at once.
        """
        retry = self.retry
        if retry is None:
            return None
        if (
            self.now >= retry.at
            or retry.inputs != self.inputs()
            or self.book.cursor.error_count == 0
        ):
            self.retry = None
            return None
        return self.wait(retry.at - self.now)

    def inputs(self) -> tuple[object, ...]:
        """What a user may change to have a failed host retried at once."""
        host = self.host
        return (
            host.generation,
            host.credentials_version,
            host.data_versions,
            host.deleting,
            tuple(sorted(host.annotations.items())),
        )

    # -- registration -------------------------------------------------------------------

    def registration_error(self) -> ErrorType:
        if self.book.cursor.state in (S.PROVISIONED, S.EXTERNALLY_PROVISIONED):
            return ErrorType.PROVISIONED_REGISTRATION
        return ErrorType.REGISTRATION

    def ensure_registered(self) -> Stopped | None:
        """Valid spec, credentials, the backend knows the host: None once all hold."""
        host, book = self.host, self.book
        problem = host.spec_problem.message if host.spec_problem else host.credentials_problem
        if problem or host.spec is None or host.spec.bmc is None:
            return self.fail(
                self.registration_error(), problem or "spec.bmc is required to register"
            )
        ramdisk = host.data_problem_field == RAMDISK_FIELD  # the backend's node needs it
        if ramdisk and host.data_problem and not book.facts.provider_id:
            return self.fail(self.registration_error(), host.data_problem)
        changed = book.facts.credentials != host.credentials_version
        result = self.prov.register(self.view(), credentials_changed=changed)
        if stop := self.work(result, self.registration_error()):
            return stop
        if book.cursor.state == S.REGISTERING:
            self.deployed_image = result.deployed_image
            running = result.deployed_image
            if running is not None and (refused := self.refuse_to_wipe(running)):
                return refused
        facts: FactChanges = {"credentials": host.credentials_version}
        if result.provider_id:
            facts["provider_id"] = result.provider_id
        if result.powered_on is not None:
            facts["powered_on"] = result.powered_on
        if result.health is not None:
            note_health(book, result.health, self.now)
        book.note(now=self.now, **facts)
        if book.cursor.error_type in (ErrorType.REGISTRATION, ErrorType.PROVISIONED_REGISTRATION):
            book.recover(
                now=self.now, reason="Registered", message="the BMC accepted the credentials"
            )
        return None

    def refuse_to_wipe(self, running: str) -> Failed | None:
        """A host new to us that already runs an image (its records lost: restored from a
        backup, re-applied after a forced delete). Take it over only when the spec says
        what it runs; never let inspection or preparation wipe it. Its backend ID is not
        recorded until then, so deleting the Host leaves the machine alone."""
        spec = self.host.spec
        assert spec is not None
        if spec.externally_provisioned:
            return None
        if spec.image is not None and running and spec.image.url == running:
            return None
        image = running or "which, it does not say"
        return self.fail(
            ErrorType.REGISTRATION,
            f"the backend already runs an image on this host ({image}) that hoststate has "
            "no record of deploying; it will not wipe a running host: set "
            "spec.image to the image it runs to take it over, or spec.externallyProvisioned: "
            "true, or tear it down in the backend",
        )

    def refuse_bad_data(self) -> Failed | None:
        """Deploy nothing while a data Secret (user, network, meta data) is missing,
        unlabelled or malformed: the host waits with an error naming the field; fixing the
        Secret or the spec retries at once."""
        if self.host.data_problem:
            return self.fail(ErrorType.PROVISIONING, self.host.data_problem)
        return None

    def forget_deployed(self, torn_down: Result) -> None:
        """Deprovisioning done: the host runs no image and is off."""
        if torn_down.done:
            self.book.note(now=self.now, image=None, root_device_hints=None, powered_on=False)

    def data_digest(self) -> str:
        """The digest of the data the host would be deployed with now ("" for none)."""
        return self.host.data.digest() if self.host.data is not None else ""

    def tell_data_change(self) -> None:
        """User, network or meta data changed on a provisioned host: as with
        baremetal-operator, nothing happens until the next deploy; the user is told so,
        once per change. The digest deployed is kept in Host.status.provisioning.dataDigest,
        so a change made while the controller was down is told after its restart too."""
        deployed, book = self.book.facts.deployed_data, self.book
        if deployed is None or self.host.data_problem:
            return
        now = self.data_digest()
        if now == deployed or book.seen.data_change_told == now:
            if now == deployed and book.seen.data_change_told:
                book.note_seen(now=self.now, data_change_told="")
            return
        book.note_seen(now=self.now, data_change_told=now)
        self.tell(
            "Normal",
            "HostDataChanged",
            "spec.userData, spec.networkData or spec.metaData (or their Secrets) changed "
            "since this host was deployed; as with baremetal-operator this takes effect on "
            "the next deploy: change spec.image, or remove and restore it, to redeploy",
        )

    def spec(self) -> HostSpec:
        spec = self.host.spec
        assert spec is not None  # registration stopped on a missing or invalid spec
        return spec

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
            data=host.data,
            architecture=spec.architecture,
            disable_power_off=spec.disable_power_off,
            custom_deploy=spec.custom_deploy.method if spec.custom_deploy else None,
        )


class Handler(NamedTuple):
    """A state's handler in a table (:data:`~.lifecycle.LIFECYCLE`, :data:`~.deletion.DELETION`)."""

    act: Callable[[StepContext], Verdict]
    registered: bool = True  # registration is ensured before ``act`` runs
