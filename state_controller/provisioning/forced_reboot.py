"""A reboot annotation with ``"force": true`` on a host whose inspection or deploy waits
on its deploy ramdisk: the ramdisk is restarted and that work starts over.

This is what baremetal-operator v0.13.2 does with ``force``
(internal/controller/metal3.io/baremetalhost_controller.go: ``actionInspecting`` and
``actionProvisioning`` hand ``hasRebootAnnotation(info, true)`` to the provisioner as
``forceReboot``; pkg/provisioner/ironic/inspecthardware.go ``InspectHardware`` aborts a
node in ``inspect wait`` and starts the aborted inspection again;
pkg/provisioner/ironic/ironic.go ``Provision`` tears down a node in ``wait call-back``
and deploys it again once it is available). The backend is told through
:attr:`~.provisioner.HostView.force_reboot` and answers
:attr:`~.results.Result.restarted` when it did restart.

Once restarted, the annotations that asked are answered: the forced ones and the one-shot
reboots (``reboot.metal3.io``, ``hoststate.io/reboot``) are removed (baremetal-operator
removes every reboot annotation then); a keyed hold-off that does not say ``force``
stays, as it still holds the host off once it is at rest. A ramdisk not waiting (the work
is between steps) is left alone and the annotation kept: it is answered when the wait
comes, or as a reboot once the host is at rest.
"""

from __future__ import annotations

from dataclasses import replace

from .power_requests import power_requests
from .provisioner import HostView
from .results import Result
from .steps import StepContext


def forced_view(run: StepContext) -> HostView:
    """The host as the backend sees it, saying whether a reboot annotation forces."""
    return replace(run.view(), force_reboot=bool(power_requests(run.host.annotations).forced))


def note_restart(run: StepContext, result: Result, work: str) -> None:
    """Record a restart the backend made (``work``: what started over) and have the
    annotations that asked for it removed."""
    if not result.restarted:
        return
    asks = power_requests(run.host.annotations)
    run.remove_annotations.update(asks.forced, asks.reboot_annotations)
    asked = " and ".join(asks.forced) or "a reboot annotation"
    run.record(
        "RamdiskRestarted",
        f'{work} started over: the deploy ramdisk was restarted as {asked} asked ("force": true)',
    )
