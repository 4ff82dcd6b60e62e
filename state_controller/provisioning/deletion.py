"""Deletion: a Host being deleted is taken down state by state (:data:`DELETION`) until
its finalizer may go.

From wherever the host was, deletion goes one way: deprovision a host that runs (or was
being given) an image, power it off, delete its node in the backend, remove the finalizer.
A step the backend keeps failing is given up after a few attempts
(:data:`~.steps.GIVE_UP_DELETE_AFTER`), recorded, and deletion goes on without it, so a
dead BMC or a broken backend never holds a Host forever; registration likewise
(:func:`registered_for_deletion`).

Each handler is a function of the step's :class:`~.steps.StepContext` that returns its
verdict (:mod:`.verdicts`), as the lifecycle's do (:mod:`.lifecycle`). The ``detached``
annotation's own way out (deleted without deprovisioning, or held) is part of the
machine's preamble (:mod:`.machine`).
"""

from __future__ import annotations

from ..api.states import OperationalStatus
from ..api.states import ProvisioningState as S
from .provisioner import HostView
from .results import Result
from .steps import GIVE_UP_DELETE_AFTER, Handler, StepContext
from .verdicts import GO_ON, GoOn, Stopped, Verdict


def registered_for_deletion(run: StepContext) -> Stopped | GoOn | None:
    """Ensure registration before a deletion step: None once registered. After repeated
    failures the host moves to deleting without touching the machine, and deletion goes
    on (:class:`~.verdicts.GoOn`, carrying the failure's stop, which still wakes it)."""
    stop = run.ensure_registered()
    if stop is None:
        return None
    cursor = run.book.cursor
    if cursor.operational_status != OperationalStatus.ERROR:
        return stop
    if cursor.error_count < GIVE_UP_DELETE_AFTER:
        return stop
    run.move(S.DELETING, "RegistrationAbandoned", f"deleting as is: {cursor.error_message}")
    return GoOn(stepped_over=stop)


def forget_unregistered(run: StepContext) -> Verdict:
    run.move(S.DELETING, "Deleting")
    return GO_ON


def power_off_before_delete(run: StepContext) -> Verdict:
    return enter_deletion_power_off(run, "Deleting")


def deprovision_before_delete(run: StepContext) -> Verdict:
    return run.enter(
        S.DEPROVISIONING,
        run.prov.deprovision,
        deprovisioned,
        "Deleting",
        give_up=deprovisioned,
    )


def deprovisioning_for_delete(run: StepContext) -> Verdict:
    result = run.prov.deprovision(run.view())
    return run.work(result, give_up=True) or deprovisioned(run, result)


def deprovisioned(run: StepContext, result: Result) -> Verdict:
    """Torn down (or given up): power the host off next."""
    run.forget_deployed(result)
    reason = "Deprovisioned" if result.done else "DeprovisioningAbandoned"
    return enter_deletion_power_off(run, reason)


def powering_off_for_delete(run: StepContext) -> Verdict:
    result = power_off(run, run.view())
    return run.work(result, give_up=True) or powered_off(run, result)


def enter_deletion_power_off(run: StepContext, reason: str) -> Verdict:
    spec = run.host.spec
    if spec is not None and spec.disable_power_off:
        run.move(S.DELETING, reason, "deleting without power-off: spec.disablePowerOff")
        return GO_ON
    return run.enter(
        S.POWERING_OFF_BEFORE_DELETE,
        lambda view: power_off(run, view),
        powered_off,
        reason,
        give_up=powered_off,
    )


def power_off(run: StepContext, view: HostView) -> Result:
    return run.prov.power(view, on=False)


def powered_off(run: StepContext, result: Result) -> Verdict:
    """Off (or given up): the backend's record goes next."""
    if result.done:
        run.book.note(now=run.now, powered_on=False)
        run.move(S.DELETING, "PoweredOff")
    else:
        run.move(S.DELETING, "PowerOffAbandoned", f"deleting without power-off: {run.told(result)}")
    return GO_ON


def delete_in_backend(run: StepContext) -> Verdict:
    """Delete the host's node in the backend (given up after a few failures), then let
    the finalizer go."""
    provider_id = run.book.facts.provider_id
    if provider_id:
        if run.host.spec is not None and run.host.spec.bmc is not None:
            if stop := run.work(run.prov.delete(run.view()), give_up=True):
                return stop
        else:
            run.tell(
                "Warning",
                "BackendRecordLeft",
                f"could not delete backend record {provider_id}: "
                "the spec is invalid; delete it in the backend by hand",
            )
        run.book.note(now=run.now, provider_id="")
    run.remove_finalizer = True
    return run.rest()


DELETION: dict[S, Handler] = {
    S.NONE: Handler(forget_unregistered, registered=False),
    S.UNMANAGED: Handler(forget_unregistered, registered=False),
    S.REGISTERING: Handler(power_off_before_delete),
    S.INSPECTING: Handler(power_off_before_delete),
    S.PREPARING: Handler(power_off_before_delete),
    S.AVAILABLE: Handler(power_off_before_delete),
    S.PROVISIONING: Handler(deprovision_before_delete),
    S.PROVISIONED: Handler(deprovision_before_delete),
    S.EXTERNALLY_PROVISIONED: Handler(power_off_before_delete),
    S.DEPROVISIONING: Handler(deprovisioning_for_delete),
    S.POWERING_OFF_BEFORE_DELETE: Handler(powering_off_for_delete),
    S.DELETING: Handler(delete_in_backend, registered=False),
}
"""The handler of each state of a Host being deleted."""
