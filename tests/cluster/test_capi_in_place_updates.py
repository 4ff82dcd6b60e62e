"""Cluster API's in-place update of a Machine, on a real kube-apiserver with Cluster API's
own Machine CRD (v1.14.2, from the Go module tools/clusterctl/go.mod pins:
``tools/clusterctl/crds.sh``), read beside the Machine's Node as update steps of its Host.

The Machine's writes are played as Cluster API v1.14.2's Machine controller makes them
(``core/reconcilers/machine/machine_controller_inplace_update.go``,
``reconcileInPlaceUpdate``; ``machine_controller_status.go``, ``setUpdatingCondition``),
through the cases its own test of that function plays (``TestReconcileInPlaceUpdate`` in
``machine_controller_inplace_update_test.go``: waits for the pending hook, requeues while
the hook is in progress, completes and cleans the annotations): the owner marks the Machine
``in-place-updates.internal.cluster.x-k8s.io/update-in-progress`` and its
``UpdateMachine`` hook pending, ``Updating`` turns ``True``/``InPlaceUpdating`` with the
extension's message while it answers retry-after, ``InPlaceUpdateFailed`` when it
errs, and ``False``/``NotUpdating`` once it answers done and the marks are removed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from typing import Any

import pytest

from state_controller.api.updates import DEFAULT_STEP_THRESHOLDS, UpdateStep
from state_controller.books.stuck import StuckPolicy
from state_controller.cluster.interface import CAPI_MACHINES, NotFound
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.remediation.policy import RemediationPolicy
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.fleet import create_fleet, host_manifest
from state_controller.simulation.nodes import SimulatedNode
from testbed.control_plane import ControlPlane
from testbed.scenarios import NS, WORKER, hoststate, state_of, update_of
from tests.conftest import (
    FAST_BACKOFF,
    NODE_STATE_NAMESPACE,
    empty_namespace,
    remove_nodes,
    wait_for,
)

pytestmark = pytest.mark.slow

HOST, NODE, MACHINE = "host-0000", "worker-0", "md-0-7x2kq"
PROVIDER_ID = f"metal3://{NS}/{HOST}/m-0"
IN_PROGRESS = "in-place-updates.internal.cluster.x-k8s.io/update-in-progress"
PENDING_HOOKS = "runtime.cluster.x-k8s.io/pending-hooks"
HOOK_FAILED = "UpdateMachine hook failed: please check controller logs for errors"


@pytest.fixture
def kube(control_plane: ControlPlane) -> Iterator[KubeCluster]:
    """The session's control plane, Cluster API's Machine CRD among its CRDs
    (testbed/kube.py); what the test made is removed afterwards."""
    cluster = KubeCluster.from_kubeconfig(str(control_plane.kubeconfig))
    yield cluster
    for machine in cluster.list(CAPI_MACHINES, NS)[0]:
        with suppress(NotFound):
            cluster.delete(CAPI_MACHINES, NS, machine["metadata"]["name"])
    remove_nodes(cluster)
    empty_namespace(cluster, NS)
    empty_namespace(cluster, NODE_STATE_NAMESPACE)
    cluster.close()


class PlayedMachineController:
    """One Machine, written as Cluster API's Machine controller and its owner write it."""

    def __init__(self, cluster: KubeCluster) -> None:
        self.cluster = cluster
        self.cluster.create(
            CAPI_MACHINES,
            {
                "apiVersion": "cluster.x-k8s.io/v1beta2",
                "kind": "Machine",
                "metadata": {"namespace": NS, "name": MACHINE},
                "spec": {
                    "clusterName": "edge",
                    "version": "v1.36.2",
                    "providerID": PROVIDER_ID,
                    "bootstrap": {"dataSecretName": MACHINE},
                    "infrastructureRef": {
                        "apiGroup": "infrastructure.cluster.x-k8s.io",
                        "kind": "Metal3Machine",
                        "name": MACHINE,
                    },
                },
            },
        )
        self.status("False", "NotUpdating")

    def status(self, status: str, reason: str, message: str = "") -> None:
        machine = self.cluster.get(CAPI_MACHINES, NS, MACHINE)
        condition = {"lastTransitionTime": "2026-11-29T05:00:00Z", "observedGeneration": 1}
        machine["status"] = {
            "nodeRef": {"name": NODE},
            "initialization": {"infrastructureProvisioned": True,
                               "bootstrapDataSecretCreated": True},
            "conditions": [
                {**condition, "type": "Updating", "status": status, "reason": reason,
                 "message": message},
                {**condition, "type": "UpToDate", "status": "False" if status == "True" else
                 "True", "reason": "Updating" if status == "True" else "UpToDate",
                 "message": ""},
            ],
        }  # fmt: skip
        self.cluster.update_status(CAPI_MACHINES, machine)

    def mark(self, marked: bool, version: str = "") -> None:
        """The owner's marks (a MachineSet's, with the Machine's new spec), or their
        removal once the hook is done."""
        value = "" if marked else None
        hooks = "UpdateMachine" if marked else None
        patch: dict[str, Any] = {
            "metadata": {"annotations": {IN_PROGRESS: value, PENDING_HOOKS: hooks}}
        }
        if version:
            patch["spec"] = {"version": version}
        self.cluster.patch(CAPI_MACHINES, NS, MACHINE, patch)


def shown(cluster: KubeCluster) -> tuple[str, str, str, str]:
    """(update step, its source, its message, the remediation's action) of the Host."""
    status = hoststate(cluster, HOST).get("status") or {}
    update = update_of(hoststate(cluster, HOST))
    remediation = status.get("remediation") or {}
    return (
        str(update.get("step", "")),
        str(update.get("source", "")),
        str(update.get("message", "")),
        str(remediation.get("action", "")),
    )


def test_an_in_place_update_is_told_as_update_steps_and_holds_remediation_off(
    kube: KubeCluster, run_controller: Any
) -> None:
    """The Machine's Updating condition becomes the Host's update steps (source capi):
    applying while the UpdateMachine hook answers retry-after, rebooting when the
    extension's reboot takes the Node down, degraded when the hook fails, updated when
    it is done. While Updating is True a NotReady Node is never power-cycled, though the
    policy would at once on any other Node: the HostState says why."""
    steps = {**DEFAULT_STEP_THRESHOLDS, UpdateStep.REBOOTING: 0.5}
    config = ControllerConfig(
        workers=2,
        backoff=FAST_BACKOFF,
        stuck=StuckPolicy(step_thresholds=steps),
        remediation=RemediationPolicy(not_ready_after=0.5, first_wait=0.5, max_unhealthy=1.0),
    )
    sim = SimulatedProvisioner()
    address = str(host_manifest(NS, 0)["spec"]["bmc"]["address"])
    with run_controller(kube, sim, config) as running:
        create_fleet(kube, NS, 1)
        wait_for(lambda: state_of(kube, HOST) == "provisioned", what="provisioned")
        node = SimulatedNode(kube, NODE, labels=WORKER, provider_id=PROVIDER_ID)
        node.register()
        played = PlayedMachineController(kube)
        wait_for(lambda: shown(kube)[:2] == ("updated", "capi"), what="the Machine read")

        played.mark(True, version="v1.36.3")
        # the marks are read before Updating turns True, as the Machine controller first
        # waits for the pending hook (TestReconcileInPlaceUpdate's first case)
        wait_for(lambda: shown(kube)[0] == "preparing update", what="preparing, marked")
        played.status("True", "InPlaceUpdating", "In-place update in progress: kubelet v1.36.3")
        wait_for(
            lambda: shown(kube)[:3] == (
                "applying update", "capi",
                "Cluster API says Updating=True (InPlaceUpdating): "
                "In-place update in progress: kubelet v1.36.3",
            ),
            what="applying, in Cluster API's words",
        )  # fmt: skip
        node.go_down()  # the extension reboots the machine
        wait_for(lambda: shown(kube)[0] == "rebooting", what="rebooting")
        wait_for(lambda: shown(kube)[3] == "Blocked", what="remediation held off")
        remediation = hoststate(kube, HOST)["status"]["remediation"]
        assert remediation["message"] == (
            f"not remediated while the host is being updated in place by Cluster API "
            f"(Machine {NS}/{MACHINE}: Updating=True, InPlaceUpdating); its "
            "MachineHealthCheck does not tell an update from a failure, so hoststate "
            "waits for Updating=False"
        )

        played.status("True", "InPlaceUpdateFailed", HOOK_FAILED)
        wait_for(lambda: shown(kube)[0] == "update degraded", what="degraded")
        assert shown(kube)[2] == f"InPlaceUpdateFailed: {HOOK_FAILED} (Cluster API retries " \
            "with back-off)"  # fmt: skip
        wait_for(
            lambda: "failing an in-place update" in str(
                hoststate(kube, HOST)["status"]["remediation"]["message"]
            ),
            what="remediation still held, for the failed update",
        )  # fmt: skip

        # the retry succeeds: the machine is back on its new kubelet, the marks go
        played.status("True", "InPlaceUpdating", "In-place update in progress")
        wait_for(lambda: shown(kube)[0] == "rebooting", what="retried, the machine still down")
        node.come_back(kubelet_version="v1.36.3")
        wait_for(lambda: shown(kube)[0] == "resuming", what="back on a new boot")
        played.mark(False)
        played.status("False", "NotUpdating")
        wait_for(lambda: shown(kube)[0] == "updated", what="updated")
        wait_for(lambda: shown(kube)[3] == "", what="remediation over")
        wait_for(running.controller.idle)
        assert sim.machine(address).reboots.count("hard") == 0  # never power-cycled
        history = hoststate(kube, HOST)["status"]["history"]
        told = [(h["to"], h["reason"]) for h in history if h["chapter"] == "update"]
        # marked by its owner first, then Updating=True written by the Machine controller
        assert told == [
            ("preparing update", "UpdateStarted"),
            ("applying update", "ApplyingUpdate"),
            ("rebooting", "Rebooting"),
            ("update degraded", "UpdateDegraded"),
            ("rebooting", "Rebooting"),
            ("resuming", "Resuming"),
            ("provisioned", "UpdateComplete"),  # the Host's own state, once the update ends
        ]
        assert history[-1]["message"].endswith("now running v1.36.3")
        started = next(h for h in history if h["reason"] == "UpdateStarted")
        assert started["message"].startswith("updating from v1.36.2 to v1.36.3: marked for")
