"""The provisioning state machine: one step of a host's life per call.

``HostMachine.step`` runs a fixed preamble, then the current state's handler
from one of two tables, and repeats while the host moves on:

1. **backoff** — a failed host waits until its backoff has passed, unless
   its user changed something since;
2. **deletion** — a Host being deleted is driven by :data:`DELETION`, any
   other by :data:`LIFECYCLE`;
3. **detached** — the ``detached`` annotation suspends everything (and lets
   deletion skip deprovisioning);
4. **registration** — valid spec, credentials, the backend knows the host:
   ensured before every state's action but the few that need no backend.

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

One module on purpose: the preamble, the two tables and their handlers are
read together (a state missing from a table, or a handler no table names, shows here);
the work each handler asks for already lives in :mod:`.steps`, the steady
states' power and reboot handling in :mod:`.steady`, and servicing in
:mod:`.servicing_steps`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ..api import annotations as ann
from ..api.servicing import SERVICE_ACTIVE
from ..api.states import ErrorType, OperationalStatus
from ..api.states import ProvisioningState as S
from ..books.book import Book
from .backoff import Backoff
from .inputs import HostInput
from .power_requests import delete_action
from .provisioner import HostView, Provisioner
from .results import Result
from .servicing_steps import ServicingSteps
from .steady import SteadySteps
from .steps import Decision, RetryWindow, Stop

__all__ = ["DELETION", "LIFECYCLE", "Decision", "HostMachine", "RetryWindow"]

MAX_STEPS = 12


class HostMachine:
    def __init__(self, provisioner: Provisioner, *, backoff: Backoff | None = None) -> None:
        self.prov = provisioner
        self.backoff = backoff or Backoff()

    def step(
        self, book: Book, host: HostInput, now: float, retry: RetryWindow | None = None
    ) -> Decision:
        """Advance the host as far as it can go now. ``retry`` is the previous
        step's ``Decision.retry`` (the backoff window of its last failure)."""
        decision = Decision(retry=retry)
        run = _Run(self.prov, self.backoff, book, host, now, decision)
        try:
            run.observe()
            for _ in range(MAX_STEPS):
                if not run.once():
                    break
            else:
                decision.after(0.0)  # more to do: come straight back
        except Stop:
            pass
        return decision


class Handler(NamedTuple):
    act: Callable[[_Run], None]
    registered: bool = True  # registration is ensured before ``act`` runs


class _Run(SteadySteps, ServicingSteps):
    """One call of :meth:`HostMachine.step`: the preamble and every state's handler."""

    def observe(self) -> None:
        problem, spec = self.host.spec_problem, self.host.spec
        consumer = spec.consumer_ref if spec is not None else None
        self.book.note(
            now=self.now,
            consumer=consumer.summary() if consumer is not None else "",
            observed_generation=self.host.generation,
        )
        self.book.note_seen(
            now=self.now,
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
        return S.PROVISIONED if spec.deploys else S.AVAILABLE

    def once(self) -> bool:
        """The preamble, then the current state's handler; True when the host moved on."""
        before = self.progress()
        self.wait_out_backoff()  # 1. backoff
        table = DELETION if self.host.deleting else LIFECYCLE  # 2. deletion
        if self.detached():  # 3. detached
            return False
        handler = table[self.book.cursor.state]
        if handler.registered and not self.registered():  # 4. registration
            return True  # deletion went on without the backend
        handler.act(self)
        return self.progress() != before

    def progress(self) -> tuple[S, OperationalStatus, int]:
        cursor = self.book.cursor
        return cursor.state, cursor.operational_status, cursor.error_count

    def registered(self) -> bool:
        if not self.host.deleting:
            self.ensure_registered()
            return True
        return self.registered_for_deletion()

    # -- the lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        spec = self.host.spec
        if spec is not None and spec.bmc is None:
            self.move(S.UNMANAGED, "NoBMC", "spec.bmc is not set; the host stays unmanaged")
        else:
            self.move(S.REGISTERING, "Registering")

    def unmanaged(self) -> None:
        spec = self.host.spec
        if spec is not None and spec.bmc is not None:
            self.move(S.REGISTERING, "BMCAdded")

    def registering(self) -> None:
        spec, annotations = self.spec(), self.host.annotations
        if spec.externally_provisioned:
            self.move(S.EXTERNALLY_PROVISIONED, "Registered")
        elif self.deployed_image is not None:  # ensure_registered checked it is spec.image
            self.note_image()
            self.move(
                S.PROVISIONED,
                "FoundProvisioned",
                "the backend already runs spec.image on this host; taken over without deploying",
            )
        elif spec.inspection_mode == "disabled" or annotations.get(ann.INSPECT) == "disabled":
            if self.host.hardware_details is not None:
                self.book.note(now=self.now, hardware=self.host.hardware_details)
            self.enter(S.PREPARING, self.prov.prepare, self.prepared, "InspectionDisabled")
        else:
            self.enter(S.INSPECTING, self.inspect, self.inspected, "Registered")

    def inspecting(self) -> None:
        self.inspected(self.work(self.prov.inspect(self.view(), restart=False)))

    def inspect(self, view: HostView) -> Result:
        return self.prov.inspect(view, restart=self.book.cursor.state != S.INSPECTING)

    def inspected(self, result: Result) -> None:
        self.book.note(now=self.now, hardware=result.hardware)
        if self.host.annotations.get(ann.INSPECT, ann.INSPECT_DISABLED) != ann.INSPECT_DISABLED:
            self.d.remove_annotations.add(ann.INSPECT)
        self.enter(S.PREPARING, self.prov.prepare, self.prepared, "InspectionComplete")

    def preparing(self) -> None:
        self.prepared(self.work(self.prov.prepare(self.view())))

    def prepared(self, _: Result) -> None:
        self.move(S.AVAILABLE, "Prepared")

    def available(self) -> None:
        spec, annotations = self.spec(), self.host.annotations
        if spec.externally_provisioned:
            self.move(S.EXTERNALLY_PROVISIONED, "MarkedExternallyProvisioned")
        elif annotations.get(ann.INSPECT, ann.INSPECT_DISABLED) != ann.INSPECT_DISABLED:
            self.enter(S.INSPECTING, self.inspect, self.inspected, "InspectionRequested")
        elif spec.deploys:
            self.refuse_bad_data()
            self.note_image()
            reason = "ImageRequested" if spec.image is not None else "CustomDeployRequested"
            self.enter(S.PROVISIONING, self.prov.provision, self.provisioned, reason)
        else:
            self.steady()

    def provisioning(self) -> None:
        if not self.image_changed():
            self.refuse_bad_data()
            self.provisioned(self.work(self.prov.provision(self.view())))

    def provisioned(self, result: Result) -> None:
        if result.powered_on is not None:
            self.book.note(now=self.now, powered_on=result.powered_on)
        self.book.note(now=self.now, deployed_data=self.data_digest())
        self.move(S.PROVISIONED, "ProvisioningComplete")

    def running(self) -> None:
        """Provisioned: finish a servicing run under way before anything else; adopt the
        host after a lost backend, service it as asked, then keep power as asked."""
        if self.book.service.step in SERVICE_ACTIVE:
            self.serve()
        if not self.image_changed():
            self.tell_data_change()
            self.adopt()
            self.serve()
            self.steady()

    def externally_provisioned(self) -> None:
        if self.book.service.step in SERVICE_ACTIVE:
            self.serve()
        if not self.spec().externally_provisioned:
            self.enter(S.PREPARING, self.prov.prepare, self.prepared, "NotExternal")
        else:
            self.adopt()
            self.serve()
            self.steady()

    def deprovisioning(self) -> None:
        self.deprovisioned(self.work(self.prov.deprovision(self.view())))

    def deprovisioned(self, result: Result) -> None:
        if result.done:
            self.book.note(now=self.now, image=None, root_device_hints=None, powered_on=False)
        if self.host.deleting:
            reason = "Deprovisioned" if result.done else "DeprovisioningAbandoned"
            self.enter_deletion_power_off(reason)
        else:
            self.move(S.AVAILABLE, "Deprovisioned")

    def half_deleted(self) -> None:
        """A deletion state on a Host nobody is deleting (a status restored from a
        copy): nothing to do but stay registered."""

    # -- images -------------------------------------------------------------------------

    def note_image(self) -> None:
        """Record the image or custom deploy (and how to write it) the host runs or is
        about to."""
        spec = self.spec()
        image, hints = spec.image, spec.root_device_hints
        self.book.note(
            now=self.now,
            image=image.model_dump(by_alias=True, exclude_none=True) if image else None,
            custom_deploy=spec.custom_deploy.method if spec.custom_deploy else None,
            root_device_hints=hints.model_dump(by_alias=True, exclude_none=True) if hints else None,
            boot_mode=spec.boot_mode,
        )

    def image_changed(self) -> bool:
        """Deprovision when the image (or custom deploy) was removed or replaced (True:
        handled)."""
        spec, facts = self.spec(), self.book.facts
        have = facts.image or {}
        wanted = (spec.image.url, spec.image.checksum) if spec.image else (None, None)
        method = spec.custom_deploy.method if spec.custom_deploy else None
        same_image = wanted == (have.get("url"), have.get("checksum"))
        if spec.deploys and same_image and method == facts.custom_deploy:
            return False
        reason = "ImageRemoved" if not spec.deploys else "ImageChanged"
        self.enter(S.DEPROVISIONING, self.prov.deprovision, self.deprovisioned, reason)
        return True

    # -- deletion -----------------------------------------------------------------------

    def forget_unregistered(self) -> None:
        self.move(S.DELETING, "Deleting")

    def power_off_before_delete(self) -> None:
        self.enter_deletion_power_off("Deleting")

    def deprovision_before_delete(self) -> None:
        self.enter(
            S.DEPROVISIONING,
            self.prov.deprovision,
            self.deprovisioned,
            "Deleting",
            give_up=self.deprovisioned,
        )

    def deprovisioning_for_delete(self) -> None:
        self.deprovisioned(self.work(self.prov.deprovision(self.view()), give_up=True))

    def powering_off_for_delete(self) -> None:
        self.powered_off(self.work(self.power_off(self.view()), give_up=True))

    def enter_deletion_power_off(self, reason: str) -> None:
        spec = self.host.spec
        if spec is not None and spec.disable_power_off:
            self.move(S.DELETING, reason, "deleting without power-off: spec.disablePowerOff")
            return
        self.enter(
            S.POWERING_OFF_BEFORE_DELETE,
            self.power_off,
            self.powered_off,
            reason,
            give_up=self.powered_off,
        )

    def power_off(self, view: HostView) -> Result:
        return self.prov.power(view, on=False)

    def powered_off(self, result: Result) -> None:
        if result.done:
            self.book.note(now=self.now, powered_on=False)
            self.move(S.DELETING, "PoweredOff")
        else:
            self.move(
                S.DELETING, "PowerOffAbandoned", f"deleting without power-off: {self.told(result)}"
            )

    def delete_in_backend(self) -> None:
        provider_id = self.book.facts.provider_id
        if provider_id:
            if self.host.spec is not None and self.host.spec.bmc is not None:
                self.work(self.prov.delete(self.view()), give_up=True)
            else:
                self.tell(
                    "Warning",
                    "BackendRecordLeft",
                    f"could not delete backend record {provider_id}: "
                    "the spec is invalid; delete it in the backend by hand",
                )
            self.book.note(now=self.now, provider_id="")
        self.d.remove_finalizer = True
        self.rest()

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
        if host.deleting and delete_action(host.annotations)[0] == "delay":
            if not book.seen.delete_delayed_told:
                book.note_seen(now=self.now, delete_delayed_told=True)
                self.tell(
                    "Normal",
                    "DeletionDelayed",
                    f"the Host is deleted while detached with deleteAction delay: it is "
                    f"deprovisioned and deleted once the {ann.DETACHED} annotation is removed",
                )
        elif host.deleting:
            if book.cursor.state != S.DELETING:
                self.move(
                    S.DELETING, "DeletingDetached", "detached: deleted without deprovisioning"
                )
            self.d.remove_finalizer = True
        return True


LIFECYCLE: dict[S, Handler] = {
    S.NONE: Handler(_Run.start, registered=False),
    S.UNMANAGED: Handler(_Run.unmanaged, registered=False),
    S.REGISTERING: Handler(_Run.registering),
    S.INSPECTING: Handler(_Run.inspecting),
    S.PREPARING: Handler(_Run.preparing),
    S.AVAILABLE: Handler(_Run.available),
    S.PROVISIONING: Handler(_Run.provisioning),
    S.PROVISIONED: Handler(_Run.running),
    S.EXTERNALLY_PROVISIONED: Handler(_Run.externally_provisioned),
    S.DEPROVISIONING: Handler(_Run.deprovisioning),
    S.POWERING_OFF_BEFORE_DELETE: Handler(_Run.half_deleted),
    S.DELETING: Handler(_Run.half_deleted),
}

DELETION: dict[S, Handler] = {
    S.NONE: Handler(_Run.forget_unregistered, registered=False),
    S.UNMANAGED: Handler(_Run.forget_unregistered, registered=False),
    S.REGISTERING: Handler(_Run.power_off_before_delete),
    S.INSPECTING: Handler(_Run.power_off_before_delete),
    S.PREPARING: Handler(_Run.power_off_before_delete),
    S.AVAILABLE: Handler(_Run.power_off_before_delete),
    S.PROVISIONING: Handler(_Run.deprovision_before_delete),
    S.PROVISIONED: Handler(_Run.deprovision_before_delete),
    S.EXTERNALLY_PROVISIONED: Handler(_Run.power_off_before_delete),
    S.DEPROVISIONING: Handler(_Run.deprovisioning_for_delete),
    S.POWERING_OFF_BEFORE_DELETE: Handler(_Run.powering_off_for_delete),
    S.DELETING: Handler(_Run.delete_in_backend, registered=False),
}
