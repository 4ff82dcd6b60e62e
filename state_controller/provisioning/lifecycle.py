"""The lifecycle: a Host nobody is deleting, from registration to a deployed image and
back, state by state (:data:`LIFECYCLE`).

Each handler is a function of the step's :class:`~.steps.StepContext` that returns its
verdict (:mod:`.verdicts`): go on to the next state's handler, or stop here and when to
look again. A state that does work is entered through :meth:`~.steps.StepContext.enter`
with the provisioner call that starts it and the continuation that finishes it; the
state's own handler polls the same call and runs the same continuation, so the work is
finished the same way whenever it completes. The steady states' power and reboots are in
:mod:`.steady`, servicing in :mod:`.servicing_steps`; deletion has its own table in
:mod:`.deletion`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..api import annotations as ann
from ..api.servicing import SERVICE_ACTIVE
from ..api.states import ProvisioningState as S
from .forced_reboot import forced_view, note_restart
from .provisioner import HostView
from .results import Result
from .servicing_steps import serve
from .steady import adopt, keep_steady
from .steps import Handler, StepContext
from .verdicts import GO_ON, Verdict


def start(run: StepContext) -> Verdict:
    spec = run.host.spec
    if spec is not None and spec.bmc is None:
        run.move(S.UNMANAGED, "NoBMC", "spec.bmc is not set; the host stays unmanaged")
    else:
        run.move(S.REGISTERING, "Registering")
    return GO_ON


def unmanaged(run: StepContext) -> Verdict:
    spec = run.host.spec
    if spec is not None and spec.bmc is not None:
        run.move(S.REGISTERING, "BMCAdded")
        return GO_ON
    return run.rest()


def registering(run: StepContext) -> Verdict:
    spec, annotations = run.spec(), run.host.annotations
    if spec.externally_provisioned:
        run.move(S.EXTERNALLY_PROVISIONED, "Registered")
        return GO_ON
    if run.deployed_image is not None:  # ensure_registered checked it is spec.image
        note_image(run)
        run.move(
            S.PROVISIONED,
            "FoundProvisioned",
            "the backend already runs spec.image on this host; taken over without deploying",
        )
        return GO_ON
    if spec.inspection_mode == "disabled" or annotations.get(ann.INSPECT) == "disabled":
        if run.host.hardware_details is not None:
            run.book.note(now=run.now, hardware=run.host.hardware_details)
        return run.enter(S.PREPARING, run.prov.prepare, prepared, "InspectionDisabled")
    return run.enter(S.INSPECTING, inspect(run, again=False), inspected, "Registered")


def inspecting(run: StepContext) -> Verdict:
    result = run.prov.inspect(forced_view(run), restart=False)
    note_restart(run, result, "the inspection")
    return run.work(result) or inspected(run, result)


def inspect(run: StepContext, *, again: bool) -> Callable[[HostView], Result]:
    """Start inspection. The first one (not ``again``) takes an inspection the backend
    already finished: one this controller started before it died, its move to
    inspecting not yet written, is not run twice (baremetal-operator, too, inspects a
    manageable node again only when asked to refresh). Asked ``again`` (the inspect
    annotation), it starts from the beginning, unless the host is inspecting already."""

    def start_inspection(view: HostView) -> Result:
        return run.prov.inspect(view, restart=again and run.book.cursor.state != S.INSPECTING)

    return start_inspection


def inspected(run: StepContext, result: Result) -> Verdict:
    run.book.note(now=run.now, hardware=result.hardware)
    if run.host.annotations.get(ann.INSPECT, ann.INSPECT_DISABLED) != ann.INSPECT_DISABLED:
        run.remove_annotations.add(ann.INSPECT)
    return run.enter(S.PREPARING, run.prov.prepare, prepared, "InspectionComplete")


def preparing(run: StepContext) -> Verdict:
    result = run.prov.prepare(run.view())
    return run.work(result) or prepared(run, result)


def prepared(run: StepContext, _: Result) -> Verdict:
    run.move(S.AVAILABLE, "Prepared")
    return GO_ON


def available(run: StepContext) -> Verdict:
    spec, annotations = run.spec(), run.host.annotations
    if spec.externally_provisioned:
        run.move(S.EXTERNALLY_PROVISIONED, "MarkedExternallyProvisioned")
        return GO_ON
    if annotations.get(ann.INSPECT, ann.INSPECT_DISABLED) != ann.INSPECT_DISABLED:
        return run.enter(S.INSPECTING, inspect(run, again=True), inspected, "InspectionRequested")
    if spec.deploys:
        if stop := run.refuse_bad_data():
            return stop
        note_image(run)
        reason = "ImageRequested" if spec.image is not None else "CustomDeployRequested"
        return run.enter(S.PROVISIONING, run.prov.provision, provisioned, reason)
    return keep_steady(run)


def provisioning(run: StepContext) -> Verdict:
    if changed := image_changed(run):
        return changed
    if stop := run.refuse_bad_data():
        return stop
    result = run.prov.provision(forced_view(run))
    note_restart(run, result, "the deploy")
    return run.work(result) or provisioned(run, result)


def provisioned(run: StepContext, result: Result) -> Verdict:
    if result.powered_on is not None:
        run.book.note(now=run.now, powered_on=result.powered_on)
    run.book.note(now=run.now, deployed_data=run.data_digest())
    run.move(S.PROVISIONED, "ProvisioningComplete")
    return GO_ON


def running(run: StepContext) -> Verdict:
    """Provisioned: finish a servicing run under way before anything else; adopt the
    host after a lost backend, service it as asked, then keep power as asked."""
    if run.book.service.step in SERVICE_ACTIVE and (stop := serve(run)):
        return stop
    if changed := image_changed(run):
        return changed
    run.tell_data_change()
    return adopt(run) or serve(run) or keep_steady(run)


def externally_provisioned(run: StepContext) -> Verdict:
    if run.book.service.step in SERVICE_ACTIVE and (stop := serve(run)):
        return stop
    if not run.spec().externally_provisioned:
        return run.enter(S.PREPARING, run.prov.prepare, prepared, "NotExternal")
    return adopt(run) or serve(run) or keep_steady(run)


def deprovisioning(run: StepContext) -> Verdict:
    result = run.prov.deprovision(run.view())
    return run.work(result) or deprovisioned(run, result)


def deprovisioned(run: StepContext, result: Result) -> Verdict:
    run.forget_deployed(result)
    run.move(S.AVAILABLE, "Deprovisioned")
    return GO_ON


def half_deleted(run: StepContext) -> Verdict:
    """A deletion state on a Host nobody is deleting (a status restored from a
    copy): nothing to do but stay registered."""
    return run.rest()


# -- images -----------------------------------------------------------------------------


def note_image(run: StepContext) -> None:
    """Record the image or custom deploy (and how to write it) the host runs or is
    about to."""
    spec = run.spec()
    image, hints = spec.image, spec.root_device_hints
    run.book.note(
        now=run.now,
        image=image.model_dump(by_alias=True, exclude_none=True) if image else None,
        custom_deploy=spec.custom_deploy.method if spec.custom_deploy else None,
        root_device_hints=hints.model_dump(by_alias=True, exclude_none=True) if hints else None,
        boot_mode=spec.boot_mode,
    )


def image_changed(run: StepContext) -> Verdict | None:
    """Deprovision when the image (or custom deploy) was removed or replaced: the
    verdict of entering deprovisioning, or None when the host keeps its image."""
    spec, facts = run.spec(), run.book.facts
    have = facts.image or {}
    wanted = (spec.image.url, spec.image.checksum) if spec.image else (None, None)
    method = spec.custom_deploy.method if spec.custom_deploy else None
    same_image = wanted == (have.get("url"), have.get("checksum"))
    if spec.deploys and same_image and method == facts.custom_deploy:
        return None
    reason = "ImageRemoved" if not spec.deploys else "ImageChanged"
    return run.enter(S.DEPROVISIONING, run.prov.deprovision, deprovisioned, reason)


LIFECYCLE: dict[S, Handler] = {
    S.NONE: Handler(start, registered=False),
    S.UNMANAGED: Handler(unmanaged, registered=False),
    S.REGISTERING: Handler(registering),
    S.INSPECTING: Handler(inspecting),
    S.PREPARING: Handler(preparing),
    S.AVAILABLE: Handler(available),
    S.PROVISIONING: Handler(provisioning),
    S.PROVISIONED: Handler(running),
    S.EXTERNALLY_PROVISIONED: Handler(externally_provisioned),
    S.DEPROVISIONING: Handler(deprovisioning),
    S.POWERING_OFF_BEFORE_DELETE: Handler(half_deleted),
    S.DELETING: Handler(half_deleted),
}
"""The handler of each state of a Host nobody is deleting."""
