"""OpenShift's MachineConfigNode read beside its Node, on openshift/api's own CRD
(tools/openshift/crds.sh; the real kube-apiserver in the ``kube`` variants): an update
told step by step as the Machine Config Operator writes it — each write a parent and its
child, as pkg/upgrademonitor/upgrade_monitor.go makes them, in the order its e2e test
expects (test/extended/machineconfignode.go, ValidateTransitionThroughConditions; both at
openshift/machine-config-operator 1c5e40f25), played by testbed/mco.py."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import pytest

from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTSTATES, MACHINECONFIGNODES
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.nodes import SimulatedNode
from state_controller.updates.signals import MCO
from testbed.mco import PlayedMCO
from testbed.scenarios import WORKER, step_of, update_of
from tests.conftest import FAST_BACKOFF, NODE_STATE_NAMESPACE, wait_for

OLD, NEW = "rendered-worker-1a2b", "rendered-worker-3c4d"


def hoststate_in(cluster: Any, namespace: str, name: str) -> dict[str, Any]:
    return dict(cluster.get(HOSTSTATES, namespace, name))


# (write, the step shown after it, what its message starts with) of an update that reboots;
# the uncordon fails once before it succeeds (drain_controller.go: Uncordoned=Unknown)
REBOOTING = (
    ("needs update", "update pending", f"targeted to {NEW}"),
    ("prepared", "preparing update", "UpdatePrepared=True: Update Compatible."),
    ("cordoned", "cordoning", "Cordoned=True: Cordoned node."),
    ("draining", "draining", "draining: "),
    ("drained", "draining", "Drained=True: Drained node."),
    ("applying", "applying update", "AppliedFilesAndOS=Unknown: Applying files"),
    ("applied", "applying update", "AppliedFilesAndOS=True: Applied files"),
    ("rebooting", "rebooting", "RebootedNode=Unknown: Upgrade requires a reboot."),
    ("rebooted", "resuming", "RebootedNode=True: Node has rebooted"),
    ("resumed", "resuming", f"Resumed=True: In desired config {NEW}."),
    ("uncordon failing", "resuming", "Uncordoned=Unknown: Error: Failed to UnCordon node."),
    ("uncordoned", "resuming", "Uncordoned=True: UnCordoned node."),
    ("updated", "updated", ""),
)
# ...and of one that needs neither drain nor reboot (update.go: "Drain Required: false",
# UpdatePostActionComplete=True with reason None)
REBOOTLESS = (
    ("needs update", "update pending", f"targeted to {NEW}"),
    ("prepared, rebootless", "preparing update", "UpdatePrepared=True: Update Compatible."),
    ("no drain", "applying update", "UpdateExecuted=Unknown: Node Drain Not required"),
    ("applying", "applying update", "AppliedFilesAndOS=Unknown: Applying files"),
    ("applied", "applying update", "AppliedFilesAndOS=True: Applied files"),
    ("no reboot", "resuming", "UpdatePostActionComplete=True: Changes do not require a reboot"),
    ("resumed", "resuming", f"Resumed=True: In desired config {NEW}."),
    ("uncordoned", "resuming", "Uncordoned=True: UnCordoned node."),
    ("updated", "updated", ""),
)


def walk(cluster: Any, node: str, writes: tuple[tuple[str, str, str], ...]) -> dict[str, Any]:
    """Make each write, and wait until the HostState shows its step and message; the
    HostState at the end."""
    SimulatedNode(cluster, node, labels=WORKER).register()
    mco = PlayedMCO(cluster, node, "worker", OLD)

    def shown() -> dict[str, Any]:
        return update_of(hoststate_in(cluster, NODE_STATE_NAMESPACE, node))

    def shows(step: str, message: str) -> bool:
        now = shown()
        return (now.get("step"), str(now.get("message", ""))[: len(message)]) == (step, message)

    wait_for(lambda: shown().get("source") == "mcn", what="the MachineConfigNode read")
    mco.target(NEW)
    for write, step, message in writes:
        mco.step(write)
        if write == "resumed":  # the daemon writes the Node's currentConfig next (daemon.go)
            mco.current = NEW
        wait_for(
            partial(shows, step, message),
            what=f"{step!r}, {message!r} after {write!r}",
        )
    return hoststate_in(cluster, NODE_STATE_NAMESPACE, node)


def chapter_steps(state: dict[str, Any]) -> list[list[str]]:
    """The steps of each update chapter, in the history's order."""
    chapters: dict[int, list[str]] = {}
    starts = [h["seq"] for h in state["status"]["history"] if h["reason"] == "UpdateStarted"]
    for h in state["status"]["history"]:
        if h["chapter"] == "update":
            begun = [s for s in starts if s <= h["seq"]]
            chapters.setdefault(begun[-1] if begun else 0, []).append(h["to"])
    return list(chapters.values())


def test_an_update_is_read_in_the_order_the_operator_writes_it(
    cluster: Any, run_controller: Any
) -> None:
    """The cordon is shown as cordoning and the drain as draining (the step of the
    deepest condition started); the update is done only at Updated=True, not when the
    node is back at its new configuration (RebootedNode=True), and a failing uncordon
    after that opens no second update."""
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, observe_machineconfignodes=True)
    with run_controller(cluster, config=config):
        state = walk(cluster, "mcn-0", REBOOTING)
    assert update_of(state)["currentConfig"] == NEW
    assert chapter_steps(state) == [[
        "update pending", "preparing update", "cordoning", "draining", "applying update",
        "rebooting", "resuming", "updated",
    ]]  # fmt: skip
    said = [h["message"] for h in state["status"]["history"] if h["to"] == "draining"]
    assert "the Machine Config Operator says: Draining node." in said[0]
    # as the API server holds it: every condition but Updated reset to False at Updated
    mcn = cluster.get(MACHINECONFIGNODES, None, "mcn-0")
    assert [c["type"] for c in mcn["status"]["conditions"] if c["status"] != "False"] == ["Updated"]


def test_a_rebootless_update_is_shown_as_such(cluster: Any, run_controller: Any) -> None:
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, observe_machineconfignodes=True)
    with run_controller(cluster, config=config):
        state = walk(cluster, "mcn-3", REBOOTLESS)
    assert chapter_steps(state) == [
        ["update pending", "preparing update", "applying update", "resuming", "updated"]
    ]


def test_a_degraded_machineconfignode_degrades_the_update(
    cluster: Any, run_controller: Any
) -> None:
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, observe_machineconfignodes=True)
    with run_controller(cluster, config=config):
        SimulatedNode(cluster, "mcn-1", labels=WORKER).register()
        mco = PlayedMCO(cluster, "mcn-1", "worker", OLD)
        mco.target(NEW)
        mco.step("needs update")
        # update.go, reportMachineNodeDegradeStatus
        mco.write(("NodeDegraded", "True", "NodeDegraded", "failed to apply files: disk full"))
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
        mco.step("needs update")

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
        mco.step("updated")
        wait_for(lambda: agree().get("status") == "True", what="SourcesAgree True")
        assert running.sample("hoststate_node_sources_disagree", labels) == 0


def test_a_missing_namespace_for_lone_nodes_is_told_in_one_line_once(
    cluster: Any, run_controller: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The HostStates of Nodes that run on no Host go to --node-state-namespace; when it
    does not exist, the API server refuses every create. That is said once, in one line
    naming the namespace, the command that creates it and the flag — not as a traceback
    at every reconcile of every Node."""
    if isinstance(cluster, EmbeddedCluster):
        pytest.skip("the embedded cluster has no namespaces to be missing")
    caplog.set_level(logging.INFO)
    config = ControllerConfig(
        workers=2,
        backoff=FAST_BACKOFF,
        observe_machineconfignodes=True,
        node_state_namespace="hoststate-absent",
    )
    names = ("lone-0", "lone-1", "lone-2")
    with run_controller(cluster, config=config) as running:

        def refused() -> float:
            labels = {"controller": "node", "result": "requeue_after"}
            return float(running.sample("controller_runtime_reconcile_total", labels))

        mcos = []
        for name in names:
            SimulatedNode(cluster, name, labels=WORKER).register()
            mcos.append(PlayedMCO(cluster, name, "worker", OLD))
        wait_for(lambda: refused() >= len(names), what="each lone Node's HostState refused")
        for mco in mcos:  # every Node changes: each is reconciled, and refused, again
            mco.target(NEW)
            mco.step("needs update")
        wait_for(lambda: refused() >= 2 * len(names), what="refused again")
        errors = running.sample("controller_runtime_reconcile_errors_total", {"controller": "node"})
    told = [r for r in caplog.records if "hoststate-absent" in r.getMessage()]
    assert [r.getMessage() for r in told] == [
        "the namespace hoststate-absent for the HostStates of Nodes that run on no Host does "
        "not exist: create it (kubectl create namespace hoststate-absent) or set "
        "--node-state-namespace to one that does; those Nodes are not reported until then "
        "(tried again every 30 s)"
    ]
    assert not [r for r in caplog.records if r.exc_info], "no traceback"
    assert errors == 0
