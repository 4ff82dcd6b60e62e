"""Nodes followed end to end, on the embedded store and a real kube-apiserver: a Node's
update told in its Host's book (the Machine Config Operator's annotations), a Node with no
Host in a HostState of its own (our own annotations), a plain kubelet reboot, a drain held
by a PodDisruptionBudget, heartbeats that cost nothing, and a Host named like a Node (or
like its label, in another namespace) that does not take it."""

from __future__ import annotations

import itertools
import time
from typing import Any

from state_controller.api.updates import UpdateStep
from state_controller.books.stuck import StuckPolicy, stuck_policy
from state_controller.cluster.interface import (
    EVENTS,
    HOSTS,
    HOSTSTATES,
    NODEPOOLS,
    NODES,
    Cluster,
)
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.fleet import create_fleet, host_manifest
from state_controller.simulation.nodes import SimulatedNode, set_budget
from state_controller.updates.signals import MCO
from testbed.scenarios import (
    WORKER,
    allow_pods,
    condition,
    events_for,
    hoststate,
    pool,
    state_of,
    step_of,
    update_of,
)
from tests.conftest import FAST_BACKOFF, NODE_STATE_NAMESPACE, wait_for, wait_reconciled

NS = "fleet"
OLD, NEW = "rendered-worker-1a2b", "rendered-worker-3c4d"


def test_an_mco_update_is_told_in_its_hosts_history(cluster: Cluster, run_controller: Any) -> None:
    allow_pods(cluster)
    with run_controller(cluster) as running:
        create_fleet(cluster, NS, 1)
        host = "host-0000"
        wait_for(lambda: state_of(cluster, host) == "provisioned", what="provisioned")
        node = SimulatedNode(
            cluster, "worker-0", labels=WORKER, provider_id=f"metal3://{NS}/{host}/m-0"
        )
        node.register()
        node.annotate(
            {MCO + "currentConfig": OLD, MCO + "desiredConfig": OLD, MCO + "state": "Done"}
        )
        wait_for(lambda: hoststate(cluster, host)["spec"]["node"] == "worker-0", what="linked")
        wait_for(lambda: update_of(hoststate(cluster, host)).get("currentConfig") == OLD)
        node.run_pod(NS, "web-0", {"app": "web"})
        drain, uncordon = f"drain-{NEW}", f"uncordon-{NEW}"

        def expect(step: UpdateStep) -> None:
            try:
                wait_for(lambda: step_of(cluster, NS, host) == step.value, what=step.value)
            except AssertionError as failed:
                shown = update_of(hoststate(cluster, host))
                node_now = cluster.get(NODES, None, "worker-0")
                raise AssertionError(f"{failed}; update {shown}; node {node_now}") from None

        node.annotate({MCO + "desiredConfig": NEW})
        expect(UpdateStep.PENDING)
        node.annotate({MCO + "state": "Working"})
        expect(UpdateStep.PREPARING)
        node.annotate({MCO + "desiredDrain": drain})
        expect(UpdateStep.CORDONING)
        node.cordon()
        expect(UpdateStep.DRAINING)
        wait_for(
            lambda: pool(cluster, "worker")
            == {"desiredConfig": NEW, "machineCount": 1, "updatedMachineCount": 0,
                "updatingMachineCount": 1, "degradedMachineCount": 0,
                "unavailableMachineCount": 1},
            what="the pool counting the node updating",
        )  # fmt: skip
        wait_for(
            lambda: update_of(hoststate(cluster, host))["message"] == "draining: 1 pod left",
            what="the pod left counted",
        )
        node.evict(NS, "web-0")
        node.annotate({MCO + "lastAppliedDrain": drain})
        expect(UpdateStep.APPLYING)
        node.annotate({MCO + "post-config-action": "Rebooting"})
        node.go_down()
        expect(UpdateStep.REBOOTING)
        node.come_back()
        node.annotate({MCO + "post-config-action": "", MCO + "desiredDrain": uncordon})
        expect(UpdateStep.RESUMING)
        node.cordon(False)
        node.annotate(
            {MCO + "lastAppliedDrain": uncordon, MCO + "currentConfig": NEW, MCO + "state": "Done"}
        )
        expect(UpdateStep.UPDATED)
        wait_for(lambda: pool(cluster, "worker")["updatedMachineCount"] == 1)
        wait_for(running.controller.idle)
        assert pool(cluster, "worker")["unavailableMachineCount"] == 0

        state = hoststate(cluster, host)
        history = state["status"]["history"]
        assert [h["to"] for h in history] == [
            "registering", "inspecting", "preparing", "available", "provisioning", "provisioned",
            "update pending", "preparing update", "cordoning", "draining", "applying update",
            "rebooting", "resuming", "provisioned",
        ]  # fmt: skip
        assert all(a["to"] == b["from"] for a, b in itertools.pairwise(history))
        assert [c["name"] for c in state["status"]["chapters"]][-1] == "update"
        assert state["status"]["chapters"][-1]["outcome"] == "completed"
        assert update_of(state)["currentConfig"] == NEW and update_of(state)["source"] == "mco"
        for ctype in ("Updated", "UpdateComplete", "UpdateExecuted", "Drained", "RebootedNode"):
            assert condition(state, ctype)["status"] == "True", ctype
        assert condition(state, "Provisioned")["status"] == "True"  # still provisioned
        reasons = [e["reason"] for e in events_for(cluster, host)]
        assert reasons.count("UpdateComplete") == 1 and "UpdateStarted" not in reasons
        assert running.sample("hoststate_node_updates_total", {"outcome": "completed"}) == 1
        assert running.sample("hoststate_node_update_steps", {"step": "updated"}) == 1


def test_a_node_with_no_host_gets_a_hoststate_of_its_own(
    cluster: Cluster, run_controller: Any
) -> None:
    with run_controller(cluster) as running:
        node = SimulatedNode(cluster, "edge-7", labels=WORKER)
        node.register()
        node.annotate({"hoststate.io/current-config": "v1"})
        wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, "edge-7") == "updated")
        state = cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, "edge-7")
        # kube-apiserver fills in the schema's defaults (bareMetalHost: ""); the store does not
        assert {k: v for k, v in state["spec"].items() if v} == {"node": "edge-7"}
        assert state["metadata"]["ownerReferences"][0]["kind"] == "Node"
        node.annotate({"hoststate.io/desired-config": "v2", "hoststate.io/update-state": "Working"})
        wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, "edge-7") == "preparing update")
        node.annotate({"hoststate.io/current-config": "v2", "hoststate.io/update-state": "Done"})
        wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, "edge-7") == "updated")
        state = cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, "edge-7")
        assert state["status"]["phase"] == "Updated"
        assert [h["to"] for h in state["status"]["history"]] == ["preparing update", "updated"]
        assert update_of(state)["source"] == "agent" and update_of(state)["currentConfig"] == "v2"
        assert "Provisioned" not in {c["type"] for c in state["status"]["conditions"]}
        # a tenant's Host named like the Node takes nothing: a name proves no link
        squatter = host_manifest(NS, 7)
        squatter["metadata"]["name"] = "edge-7"
        cluster.create(HOSTS, squatter)
        wait_reconciled(running.controller, cluster, NS, "edge-7")
        assert hoststate(cluster, "edge-7")["spec"]["node"] == ""
        assert step_of(cluster, NODE_STATE_NAMESPACE, "edge-7") == "updated"  # still its own
        # a Node that goes takes its node-only HostState with it
        node.delete()
        wait_for(
            lambda: step_of(cluster, NODE_STATE_NAMESPACE, "edge-7") == "<none>",
            what="node-only HostState deleted",
        )
        wait_for(lambda: f"{NODE_STATE_NAMESPACE}/edge-7" not in running.controller.books)
        wait_for(lambda: pool(cluster, "worker") is None, what="the empty pool's NodePool gone")


def test_a_tenants_host_named_like_the_label_elsewhere_never_takes_the_node(
    cluster: Cluster, run_controller: Any
) -> None:
    """A Node labelled ``hoststate.io/host=host-0000`` while the controller watches every
    namespace: the tenant's Host of that name (created first, the only one for a while)
    does not take it; the label alone is refused, told on the Node's own HostState, and
    with ``hoststate.io/host-namespace`` the Node joins the operator's Host."""
    tenant_ns = NODE_STATE_NAMESPACE  # another namespace, emptied between tests
    with run_controller(cluster) as running:
        cluster.create(HOSTS, host_manifest(tenant_ns, 0))
        node = SimulatedNode(cluster, "n-3", labels={**WORKER, "hoststate.io/host": "host-0000"})
        node.register()

        def refused() -> bool:
            items, _ = cluster.list(EVENTS, NODE_STATE_NAMESPACE)
            return any(e["reason"] == "NodeLinkRefused" for e in items)

        wait_for(refused, what="the bare label refused on the Node's own HostState")
        wait_reconciled(running.controller, cluster, tenant_ns, "host-0000")
        tenant_state = cluster.get(HOSTSTATES, tenant_ns, "host-0000")
        assert (tenant_state.get("spec") or {}).get("node", "") == ""
        assert cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, "n-3")["spec"]["node"] == "n-3"

        create_fleet(cluster, NS, 1)  # the operator's host-0000
        labels = {"hoststate.io/host-namespace": NS}
        cluster.patch(NODES, None, "n-3", {"metadata": {"labels": labels}})
        wait_for(lambda: hoststate(cluster, "host-0000")["spec"]["node"] == "n-3", what="linked")
        wait_for(running.controller.idle)
        assert cluster.get(HOSTSTATES, tenant_ns, "host-0000")["spec"].get("node", "") == ""


def test_with_nodes_not_followed_no_node_is_read(cluster: Cluster, run_controller: Any) -> None:
    """``--no-nodes``: provisioning only; a Node on a Host, or on none, changes nothing."""
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, follow_nodes=False)
    with run_controller(cluster, config=config) as running:
        linked, lone = SimulatedNode(cluster, "host-0000"), SimulatedNode(cluster, "lone-2")
        for node in (linked, lone):
            node.register()
            node.cordon()
        # the whole provisioning takes seconds after the Nodes were written: had they
        # been followed, their HostStates and pool would be there by its end
        create_fleet(cluster, NS, 1)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned", what="provisioned")
        wait_for(running.controller.idle)
        assert running.controller.node_index.events == 0
        assert not running.controller.drains.watched()
        state = hoststate(cluster, "host-0000")
        assert state["spec"]["node"] == "" and "update" not in state["status"]
        assert cluster.list(HOSTSTATES, NODE_STATE_NAMESPACE)[0] == []
        assert cluster.list(NODEPOOLS)[0] == []


def test_a_plain_kubelet_reboot_and_upgrade_with_no_agent(
    cluster: Cluster, run_controller: Any
) -> None:
    with run_controller(cluster):
        node = SimulatedNode(cluster, "plain-1")
        node.register()
        wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, "plain-1") == "updated")
        node.cordon()
        wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, "plain-1") == "applying update")
        node.go_down()
        wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, "plain-1") == "rebooting")
        node.come_back(kubelet_version="v1.37.1")
        wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, "plain-1") == "resuming")
        node.cordon(False)
        wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, "plain-1") == "updated")
        state = cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, "plain-1")
        assert update_of(state)["currentConfig"].startswith("kubelet v1.37.1")
        assert update_of(state)["source"] == "kubelet"
        assert condition(state, "RebootedNode")["status"] == "True"


def test_a_drain_held_by_a_budget_is_stuck_once_and_says_which(
    cluster: Cluster, run_controller: Any
) -> None:
    allow_pods(cluster)
    # the fleet's drains may take an hour; the worker pool's one second
    policy = stuck_policy(["draining=1h", "worker:draining=1s"])
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, stuck=policy)
    with run_controller(cluster, config=config) as running:
        node = SimulatedNode(cluster, "db-3", labels=WORKER)
        node.register()
        node.run_pod(NS, "db-0", {"app": "db"})
        node.run_pod(NS, "db-1", {"app": "db"})
        since = "2026-11-24T10:02:11Z"
        set_budget(cluster, NS, "db-pdb", {"app": "db"}, allowed=0, since=since)
        wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, "db-3") == "updated")
        node.cordon()
        expected = (
            f"draining: 2 pods left, eviction blocked by PodDisruptionBudget {NS}/db-pdb "
            f"(it allows no disruption since {since})"
        )

        def message() -> str:
            return str(update_of(cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, "db-3"))["message"])

        wait_for(lambda: message() == expected, what="the blocking budget named")
        wait_for(
            lambda: (
                condition(cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, "db-3"), "Stuck")["status"]
                == "True"
            ),
            what="stuck",
        )
        state = cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, "db-3")
        stuck = condition(state, "Stuck")
        assert stuck["reason"] == "StepTimeout" and expected in stuck["message"]
        assert "longer than the 1s allowed in pool worker" in stuck["message"]
        # a drain that fails, told apart from one that runs: by reason, and by a series
        for ctype in ("Drained", "UpdateExecuted"):
            assert condition(state, ctype)["reason"] == "DrainBlocked", ctype
        blocked = {"namespace": NODE_STATE_NAMESPACE, "hoststate": "db-3", "node": "db-3",
                   "poddisruptionbudget": f"{NS}/db-pdb"}  # fmt: skip
        assert running.sample("hoststate_node_drain_blocked", blocked) == 1
        set_budget(cluster, NS, "db-pdb", {"app": "db"}, allowed=1, since=since)
        wait_for(
            lambda: (
                condition(cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, "db-3"), "Drained")[
                    "reason"
                ]
                == "Draining"
            ),
            what="the drain running again",
        )
        assert (
            running.metrics.registry.get_sample_value("hoststate_node_drain_blocked", blocked)
            is None
        )
        set_budget(cluster, NS, "db-pdb", {"app": "db"}, allowed=0, since=since)
        node.evict(NS, "db-0")
        wait_for(lambda: message().startswith("draining: 1 pod left"), what="one pod fewer")
        events, _ = cluster.list(EVENTS, NODE_STATE_NAMESPACE)
        stuck_events = [
            e for e in events if e["reason"] == "Stuck" and e["involvedObject"]["name"] == "db-3"
        ]
        assert len(stuck_events) == 1, stuck_events
        assert "draining" in stuck_events[0]["message"]


def test_a_degraded_update_and_a_reboot_that_never_comes_back(
    cluster: Cluster, run_controller: Any
) -> None:
    policy = StuckPolicy(step_thresholds={UpdateStep.REBOOTING: 1.0})
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, stuck=policy)
    with run_controller(cluster, config=config) as running:
        failing, lost = (SimulatedNode(cluster, n, labels=WORKER) for n in ("w-fail", "w-lost"))
        for node in (failing, lost):
            node.register()
            node.annotate({"hoststate.io/current-config": "v1"})
            wait_for(lambda n=node.name: step_of(cluster, NODE_STATE_NAMESPACE, n) == "updated")
        working = {"hoststate.io/desired-config": "v2", "hoststate.io/update-state": "Working"}
        failing.annotate(working)
        failing.cordon()
        wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, "w-fail") == "applying update")
        reason = "writing /etc/crio/crio.conf: no space left on device"
        failing.annotate(
            {"hoststate.io/update-state": "Degraded", "hoststate.io/update-reason": reason}
        )
        wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, "w-fail") == "update degraded")
        state = cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, "w-fail")
        assert condition(state, "NodeDegraded")["status"] == "True"
        assert condition(state, "NodeDegraded")["message"] == reason
        assert condition(state, "AppliedFilesAndOS")["reason"] == "Failed"
        assert condition(state, "Drained")["status"] == "True"  # what it did before failing
        assert update_of(state)["failedStep"] == "applying update"
        wait_for(lambda: (pool(cluster, "worker") or {}).get("degradedMachineCount") == 1)

        lost.annotate(working)
        lost.cordon()
        wait_for(lambda: step_of(cluster, NODE_STATE_NAMESPACE, "w-lost") == "applying update")
        lost.go_down()  # and never back
        wait_for(
            lambda: (
                condition(cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, "w-lost"), "Stuck")[
                    "status"
                ]
                == "True"
            ),
            what="the lost reboot stuck",
        )
        state = cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, "w-lost")
        assert update_of(state)["step"] == "rebooting"
        assert condition(state, "RebootedNode")["status"] == "Unknown"
        assert condition(state, "Stuck")["reason"] == "StepTimeout"
        assert running.sample("hoststate_node_updates_total", {"outcome": "degraded"}) == 1
        wait_for(running.controller.idle)

        def reasons(name: str) -> list[str]:
            events, _ = cluster.list(EVENTS, NODE_STATE_NAMESPACE)
            return [e["reason"] for e in events if e["involvedObject"]["name"] == name]

        wait_for(lambda: "UpdateDegraded" in reasons("w-fail"), what="UpdateDegraded Event")
        wait_for(lambda: "Stuck" in reasons("w-lost"), what="Stuck Event")
        assert reasons("w-fail").count("UpdateDegraded") == 1
        assert reasons("w-lost").count("Stuck") == 1
        warning = next(
            e
            for e in cluster.list(EVENTS, NODE_STATE_NAMESPACE)[0]
            if e["reason"] == "UpdateDegraded"
        )
        assert warning["type"] == "Warning" and reason in warning["message"]
        counts = ("degradedMachineCount", "updatingMachineCount", "unavailableMachineCount")
        wait_for(
            lambda: [(pool(cluster, "worker") or {}).get(c) for c in counts] == [1, 1, 2],
            what="one degraded, one updating, both unavailable",
        )


INTERVAL = 5.0  # seconds between two writes of a NodePool's status, at most


def test_a_pools_status_is_written_at_most_once_per_interval(
    cluster: Cluster, run_controller: Any
) -> None:
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, pool_status_interval=INTERVAL)
    with run_controller(cluster, config=config) as running:
        nodes = [SimulatedNode(cluster, f"burst-{i}", labels=WORKER) for i in range(5)]
        for node in nodes:
            node.register()
            node.annotate({"hoststate.io/current-config": "v1"})
        wait_for(lambda: (pool(cluster, "worker") or {}).get("updatedMachineCount") == 5)

        def written() -> float:
            labels = {"resource": "nodepools", "outcome": "written"}
            return running.sample("hoststate_status_writes_total", labels)

        before, since = written(), time.monotonic()  # the last write was before this
        # five counts moved in a burst (milliseconds), within an interval of the last write
        for node in nodes:
            node.annotate({"hoststate.io/desired-config": "v2"})
        for node in nodes:
            wait_for(
                lambda n=node.name: step_of(cluster, NODE_STATE_NAMESPACE, n) == "update pending"
            )
        wait_for(running.controller.idle)
        burst = time.monotonic() - since
        if burst < INTERVAL - 1.0:  # else a loaded machine let the interval end
            assert (pool(cluster, "worker") or {}).get("updatingMachineCount") == 0  # held back
        wait_for(
            lambda: (pool(cluster, "worker") or {}).get("updatingMachineCount") == 5,
            timeout=40,
            what="the held-back counts written",
        )
        # the server shows the write before the controller has counted it: wait for the count
        wait_for(lambda: written() - before >= 1, what="the held-back write counted")
        # at most one write per interval: the five counts moved in a burst are one write
        # when the interval ends (a loaded machine may let one more interval begin while
        # the test looks, hence the bound by the time it took, not exactly 1)
        elapsed = time.monotonic() - since
        assert 1 <= written() - before <= 1 + elapsed // INTERVAL, (burst, elapsed)


def test_heartbeats_cost_no_reconcile_and_no_write(cluster: Cluster, run_controller: Any) -> None:
    with run_controller(cluster) as running:
        ticks = itertools.count(time.time(), 10.0)  # a kubelet heartbeats every 10 s
        nodes = [
            SimulatedNode(cluster, f"hb-{i}", labels=WORKER, clock=lambda: next(ticks))
            for i in range(3)
        ]
        for node in nodes:
            node.register()
        for node in nodes:
            wait_for(lambda n=node.name: step_of(cluster, NODE_STATE_NAMESPACE, n) == "updated")
        wait_for(  # no pool write held back (at most one a second) to land in what follows
            lambda: (pool(cluster, "worker") or {}).get("updatedMachineCount") == 3
        )
        wait_for(running.controller.idle)
        reconciles = running.controller.workers.reconciles
        index = running.controller.node_index
        dropped = index.dropped

        def written(resource: str) -> float:
            labels = {"resource": resource, "outcome": "written"}
            return float(running.sample("hoststate_status_writes_total", labels))

        writes, pool_writes = written("hoststates"), written("nodepools")
        for _ in range(5):
            for node in nodes:
                node.heartbeat()
        # every heartbeat is seen and dropped before the work queue: no reconcile at all
        wait_for(lambda: index.dropped - dropped == 15, what="15 heartbeats seen")
        wait_for(running.controller.idle)
        assert running.controller.workers.reconciles == reconciles
        assert written("hoststates") == writes
        # a change the book reads does reach it, and costs one HostState write
        nodes[0].annotate({"hoststate.io/current-config": "v9"})
        wait_for(
            lambda: (
                update_of(cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, "hb-0")).get(
                    "currentConfig"
                )
                == "v9"
            )
        )
        wait_for(running.controller.idle)
        assert running.controller.workers.reconciles > reconciles
        assert written("hoststates") - writes == 1
        assert written("nodepools") == pool_writes  # the pool's counts did not move
        assert index.dropped - dropped == 15


def test_a_restart_mid_update_keeps_one_history(cluster: Cluster, run_controller: Any) -> None:
    """The update's records before the restart are neither lost nor told twice."""
    agent = {"hoststate.io/desired-config": "v2", "hoststate.io/update-state": "Working"}
    node = SimulatedNode(
        cluster, "host-0000", labels=WORKER, provider_id=f"metal3://{NS}/host-0000/m-0"
    )
    with run_controller(cluster) as first:
        create_fleet(cluster, NS, 1)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned", what="provisioned")
        node.register()
        node.annotate({"hoststate.io/current-config": "v1"})
        wait_for(lambda: update_of(hoststate(cluster, "host-0000")).get("currentConfig") == "v1")
        node.annotate(agent)
        node.cordon()
        wait_for(lambda: step_of(cluster, NS, "host-0000") == "applying update")
        wait_for(first.controller.idle)
    before = hoststate(cluster, "host-0000")["status"]["history"]
    with run_controller(cluster, first.sim) as second:  # the same machines
        wait_for(second.controller.idle)
        node.go_down()
        wait_for(lambda: step_of(cluster, NS, "host-0000") == "rebooting")
        node.come_back()
        wait_for(lambda: step_of(cluster, NS, "host-0000") == "resuming")
        node.cordon(False)
        node.annotate({"hoststate.io/current-config": "v2", "hoststate.io/update-state": "Done"})
        wait_for(lambda: step_of(cluster, NS, "host-0000") == "updated")
        wait_for(second.controller.idle)
    status = hoststate(cluster, "host-0000")["status"]
    history = status["history"]
    assert history[: len(before)] == before, [(h["from"], h["to"], h["reason"]) for h in history]
    assert [h["seq"] for h in history] == list(range(1, len(history) + 1))
    assert [h["to"] for h in history[len(before) :]] == [
        "rebooting", "resuming", "provisioned",
    ], [(h["from"], h["to"], h["reason"], h["message"]) for h in history]  # fmt: skip
    assert [c["name"] for c in status["chapters"]].count("update") == 1
    reasons = [e["reason"] for e in events_for(cluster, "host-0000")]
    assert reasons.count("UpdateComplete") == 1 and "UpdateStarted" not in reasons
