"""OpenShift's MachineConfigNode read beside its Node: an update told step by step from
its conditions (the CRD written from the documented v1 API, on the real kube-apiserver),
with the draining step's message kept, as the Machine Config Operator writes it."""

from __future__ import annotations

from typing import Any

from state_controller.cluster.interface import HOSTSTATES
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.nodes import SimulatedNode
from state_controller.updates.signals import MCO
from testbed.mco import PlayedMCO
from testbed.scenarios import WORKER, step_of, update_of
from tests.conftest import FAST_BACKOFF, NODE_STATE_NAMESPACE, wait_for

OLD, NEW = "rendered-worker-1a2b", "rendered-worker-3c4d"


def hoststate_in(cluster: Any, namespace: str, name: str) -> dict[str, Any]:
    return dict(cluster.get(HOSTSTATES, namespace, name))


def test_an_update_is_read_from_the_machineconfignode(cluster: Any, run_controller: Any) -> None:
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, observe_machineconfignodes=True)
    with run_controller(cluster, config=config):
        SimulatedNode(cluster, "mcn-0", labels=WORKER).register()
        mco = PlayedMCO(cluster, "mcn-0", "worker", OLD)
        wait_for(
            lambda: (
                update_of(hoststate_in(cluster, NODE_STATE_NAMESPACE, "mcn-0")).get("source")
                == "mcn"
            ),
            what="the MachineConfigNode read",
        )

        def expect(step: str) -> None:
            wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, "mcn-0") == step, what=step)

        mco.target(NEW)
        mco.show(Updated=("False", "NotYetOccurred", ""))
        expect("update pending")
        mco.show(UpdatePrepared=("Unknown", "UpdatePrepared", "preparing the update"))
        expect("preparing update")
        mco.show(
            UpdatePrepared=("True", "UpdatePrepared", ""),
            UpdateExecuted=("Unknown", "UpdateExecuted", ""),
            Cordoned=("True", "UpdateExecutedCordoned", ""),
            Drained=("Unknown", "UpdateExecutedDrained", "Draining node; 2 pods left"),
        )
        expect("draining")
        message = update_of(hoststate_in(cluster, NODE_STATE_NAMESPACE, "mcn-0"))["message"]
        assert "the Machine Config Operator says: Draining node; 2 pods left" in message
        mco.show(
            Drained=("True", "UpdateExecutedDrained", ""),
            AppliedFilesAndOS=("Unknown", "UpdateExecutedAppliedFilesAndOS", "writing"),
        )
        expect("applying update")
        mco.show(
            AppliedFilesAndOS=("True", "UpdateExecutedAppliedFilesAndOS", ""),
            UpdateExecuted=("True", "UpdateExecuted", ""),
            UpdatePostActionComplete=("Unknown", "UpdatePostActionComplete", "rebooting"),
            RebootedNode=("Unknown", "UpdatePostActionCompleteRebootedNode", "rebooting"),
        )
        expect("rebooting")
        mco.current = NEW
        mco.show(
            UpdatePostActionComplete=("True", "UpdatePostActionComplete", ""),
            RebootedNode=("True", "UpdatePostActionCompleteRebootedNode", ""),
            UpdateComplete=("True", "UpdateComplete", ""),
            Uncordoned=("True", "UpdateCompleteUncordoned", ""),
            Resumed=("True", "Resumed", ""),
            Updated=("True", "Updated", ""),
        )
        expect("updated")
        state = hoststate_in(cluster, NODE_STATE_NAMESPACE, "mcn-0")
        assert update_of(state)["currentConfig"] == NEW
        steps = [h["to"] for h in state["status"]["history"]]
        assert steps[-6:] == [
            "update pending", "preparing update", "draining", "applying update", "rebooting",
            "updated",
        ], steps  # fmt: skip


def test_a_degraded_machineconfignode_degrades_the_update(
    cluster: Any, run_controller: Any
) -> None:
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, observe_machineconfignodes=True)
    with run_controller(cluster, config=config):
        SimulatedNode(cluster, "mcn-1", labels=WORKER).register()
        mco = PlayedMCO(cluster, "mcn-1", "worker", OLD)
        mco.target(NEW)
        mco.show(
            Updated=("False", "NotYetOccurred", ""),
            NodeDegraded=("True", "NodeDegraded", "failed to apply files: disk full"),
        )
        wait_for(
            lambda: step_of(cluster, NODE_STATE_NAMESPACE, "mcn-1") == "update degraded",
            what="degraded",
        )
        message = update_of(hoststate_in(cluster, NODE_STATE_NAMESPACE, "mcn-1"))["message"]
        assert message == "NodeDegraded: failed to apply files: disk full"


def test_annotations_and_machineconfignode_that_disagree_are_told(
    cluster: Any, run_controller: Any
) -> None:
    """The operator's two accounts of one node: annotations Done at the new configuration,
    its MachineConfigNode not Updated. The HostState says so with both values, and a
    series counts it until they agree again."""
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, observe_machineconfignodes=True)
    with run_controller(cluster, config=config) as running:
        node = SimulatedNode(cluster, "mcn-2", labels=WORKER)
        node.register()
        node.annotate(
            {MCO + "currentConfig": NEW, MCO + "desiredConfig": NEW, MCO + "state": "Done"}
        )
        mco = PlayedMCO(cluster, "mcn-2", "worker", OLD)
        mco.target(NEW)
        mco.show(Updated=("False", "NotYetOccurred", ""))

        def agree() -> dict[str, Any]:
            state = hoststate_in(cluster, NODE_STATE_NAMESPACE, "mcn-2")
            conditions = (state.get("status") or {}).get("conditions") or []
            return next((c for c in conditions if c["type"] == "SourcesAgree"), {})

        told = (
            f"the Node's annotations say state Done at {NEW}; its MachineConfigNode says "
            f"Updated=False with current configuration {OLD}"
        )
        wait_for(lambda: agree().get("message") == told, what="SourcesAgree False, both values")
        assert (agree()["status"], agree()["reason"]) == ("False", "SourcesDisagree")
        labels = {"namespace": NODE_STATE_NAMESPACE, "hoststate": "mcn-2", "node": "mcn-2"}
        assert running.sample("hoststate_node_sources_disagree", labels) == 1

        mco.current = NEW
        mco.show(Updated=("True", "Updated", ""))
        wait_for(lambda: agree().get("status") == "True", what="SourcesAgree True")
        assert running.sample("hoststate_node_sources_disagree", labels) == 0
