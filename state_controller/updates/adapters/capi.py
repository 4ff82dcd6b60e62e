"""Cluster API's in-place update of a Machine (``cluster.x-k8s.io/v1beta2``), read beside
the Machine's Node.

The words are Cluster API's own (sigs.k8s.io/cluster-api/api v1.14.2,
``core/v1beta2/machine_types.go``)::

    // MachineUpdatingCondition is true while an in-place update is in progress on the Machine.
    MachineUpdatingCondition = "Updating"
    MachineNotUpdatingReason = "NotUpdating"
    MachineInPlaceUpdatingReason = "InPlaceUpdating"
    MachineInPlaceUpdateFailedReason = "InPlaceUpdateFailed"
    // MachineUpToDateCondition is true if the Machine spec matches the spec of the
    // Machine's owner resource, e.g. KubeadmControlPlane or MachineDeployment.
    MachineUpToDateCondition = "UpToDate"  // reasons UpToDate, NotUpToDate, Updating

How they are written is its Machine controller's (sigs.k8s.io/cluster-api v1.14.2,
``core/reconcilers/machine/machine_controller_inplace_update.go`` and
``machine_controller_status.go``, ``setUpdatingCondition``):

- the owner (a MachineSet, a KubeadmControlPlane) marks the Machine with the annotation
  ``in-place-updates.internal.cluster.x-k8s.io/update-in-progress`` and then adds
  ``UpdateMachine`` to ``runtime.cluster.x-k8s.io/pending-hooks``; from the first of the
  two, ``Updating`` is ``True``;
- the ``UpdateMachine`` hook answers in progress (a ``retryAfterSeconds``: ``Updating``
  stays ``True``/``InPlaceUpdating`` with the message ``In-place update in progress:
  <the extension's message>``, and the hook is called again after that many seconds — the
  number itself is kept in the controller's memory, not on the Machine), failed (an
  error: ``InPlaceUpdateFailed``, ``UpdateMachine hook failed: please check controller
  logs for errors``, and the controller retries with its back-off), or done (the
  annotations are removed: ``Updating=False``/``NotUpdating``);
- ``UpToDate`` is ``False``/``NotUpToDate`` while the owner's spec differs from the
  Machine's, and ``False``/``Updating`` once it matches but the update still runs.

What the Node shows during the update (a cordon, a reboot) is read as the kubelet adapter
reads it, so a hook that reboots the machine is seen rebooting; the Machine says only
that the update runs, fails, or is done.
"""

from __future__ import annotations

from ...api.updates import UpdateStep
from ...books.records import UpdateCursor
from ..signals import CapiMachineSignals, NodeSignals
from .base import DrainStatus, Reading, on_the_machine
from .kubelet import KubeletAdapter

UPDATING, UP_TO_DATE = "Updating", "UpToDate"
NOT_UPDATING = "NotUpdating"
IN_PLACE_UPDATING = "InPlaceUpdating"
IN_PLACE_UPDATE_FAILED = "InPlaceUpdateFailed"
NOT_UP_TO_DATE = "NotUpToDate"

S = UpdateStep


def updating_in_place(machine: CapiMachineSignals | None) -> bool:
    """Whether Cluster API is updating the Machine in place (or failed to and retries):
    what remediation must not mistake for a broken machine."""
    if machine is None:
        return False
    return machine.updating[0] == "True" or machine.marked or machine.hook_pending


def remediation_hold(machine: CapiMachineSignals | None) -> str:
    """Why a host whose Node's Cluster API Machine is being updated in place must not be
    power-cycled ("" when it is not): a reboot or a NotReady Node is the update's, and
    a power-cycle would cut the update extension short. Cluster API's own
    MachineHealthCheck does not tell the two apart: its in-place update proposal
    (``docs/proposals/20240807-in-place-updates.md``, "Remediation") leaves rules for
    Machines "on-going an update" to a later iteration, and at v1.14.2 its reconciler
    (``core/reconcilers/machinehealthcheck``) reads neither ``Updating`` nor the
    update-in-progress mark. So hoststate holds off until ``Updating`` is ``False``; a
    failed update stays held, for Cluster API retries it and a person reads why."""
    if machine is None or not updating_in_place(machine):
        return ""
    status, reason, _ = machine.updating
    said = f"Updating={status}, {reason}" if status else "marked update-in-progress"
    if reason == IN_PLACE_UPDATE_FAILED:
        return (
            f"failing an in-place update that Cluster API retries (Machine {machine.key}: "
            f"{said}): its update extension or a person must act, not a power-cycle"
        )
    return (
        f"being updated in place by Cluster API (Machine {machine.key}: {said}); its "
        "MachineHealthCheck does not tell an update from a failure, so hoststate waits "
        "for Updating=False"
    )


class CapiMachineAdapter:
    name = "capi"

    def claims(self, node: NodeSignals) -> bool:
        """A Node whose Machine says anything of an in-place update (Cluster API v1.12 and
        later write ``Updating`` on every Machine they reconcile)."""
        return node.capi is not None and node.capi.reported

    def read(self, node: NodeSignals, before: UpdateCursor, drain: DrainStatus) -> Reading:
        machine = node.capi
        assert machine is not None  # claims() said so
        # the kubelet's version is what the Machine's spec.version is reached by; an update
        # that keeps the version (a new OS image, a configuration) names no target
        current = node.info.kubelet_version or machine.version
        desired = machine.version if machine.version != current else ""
        status, reason, message = machine.updating
        said = f"Cluster API says {UPDATING}={status or 'absent'}"

        if status == "True" and reason == IN_PLACE_UPDATE_FAILED:
            why = message or reason
            return Reading(
                S.DEGRADED,
                desired,
                current,
                f"{IN_PLACE_UPDATE_FAILED}: {why} (Cluster API retries with back-off)",
            )
        if updating_in_place(machine):
            if status != "True":  # marked, its controller has not written Updating yet
                return Reading(
                    S.PREPARING,
                    desired,
                    current,
                    "marked for an in-place update; the UpdateMachine hook is not called yet",
                )
            shown = on_the_machine(node, before, drain)
            step = shown.step if shown.step != S.PREPARING else S.APPLYING
            words = f"{said} ({reason}): {message}" if message else f"{said} ({reason})"
            if not machine.hook_pending and reason == IN_PLACE_UPDATING:
                words += "; waiting for the owner to mark the UpdateMachine hook pending"
            if step == S.RESUMING and not node.unschedulable:
                words = f"rebooted and Ready; {words}"  # no cordon to wait on
            elif step != S.APPLYING:
                words = f"{shown.message}; {words}"
            return Reading(step, desired, current, words)
        # not updating in place: the kubelet's reading (a drain, a reboot, an upgrade)
        kubelet = KubeletAdapter().read(node, before, drain)
        if kubelet.step != S.UPDATED:
            return Reading(kubelet.step, desired, current, kubelet.message)
        up, up_reason, up_message = machine.up_to_date
        if up == "False" and up_reason == NOT_UP_TO_DATE and not machine.deleting:
            words = up_message or "its spec differs from its owner's"
            return Reading(S.PENDING, desired, current, f"{NOT_UP_TO_DATE}: {words}")
        return Reading(S.UPDATED, desired or current, current)
