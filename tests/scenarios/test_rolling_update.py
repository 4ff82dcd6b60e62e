"""A pool of Nodes rolled to a new configuration one at a time, on the embedded store and
a real kube-apiserver: at every step of every node, the node's HostState, the nodes per
step (``hoststate_node_update_steps``) and the pool's NodePool agree with what the
update agent did. Twelve nodes: enough for every count to pass through first, middle and
last; fleets of thousands are measured in benchmarks/."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest

from state_controller.api.updates import UpdateStep as S
from state_controller.cluster.interface import HOSTSTATES, Cluster
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.nodes import SimulatedNode
from testbed.scenarios import NS, WORKER, allow_pods, pool, step_of, update_of
from tests.conftest import FAST_BACKOFF, NODE_STATE_NAMESPACE, wait_for

pytestmark = pytest.mark.slow  # a pool rolled one node at a time, on both clusters

NODES = 12
LEARNED = 5  # the durations an estimate needs (durations.learned.MIN_SAMPLES)
OLD, NEW = "rendered-worker-1", "rendered-worker-2"


def test_a_pool_rolled_one_node_at_a_time(cluster: Cluster, run_controller: Any) -> None:
    allow_pods(cluster)
    # every count at every step: no NodePool write held back (that is tested on its own)
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, pool_status_interval=0)
    with run_controller(cluster, config=config) as running:
        nodes = [SimulatedNode(cluster, f"worker-{i:02d}", labels=WORKER) for i in range(NODES)]
        for node in nodes:
            node.register()
            node.annotate({"hoststate.io/current-config": OLD})
        steps: Counter[S] = Counter({S.UPDATED: NODES})

        estimates: list[dict[str, Any]] = []  # the NodePool's, as each step was shown

        def shown() -> tuple[dict[str, float], dict[str, Any] | None]:
            per_step = {
                s.value: running.sample("hoststate_node_update_steps", {"step": s.value}) for s in S
            }
            counts = pool(cluster, "worker")
            if counts is not None and "estimate" in counts:
                estimates.append(counts.pop("estimate"))
                (on_time,) = counts.pop("conditions")  # OnSchedule, while there is one
                assert on_time["type"] == "OnSchedule"
            return per_step, counts

        def expect(node: SimulatedNode, step: S, done: int, target: str) -> None:
            """The node at ``step``, ``done`` nodes at the new configuration before it."""
            per_step = {s.value: float(steps[s]) for s in S}
            busy = step != S.UPDATED
            counts = {
                "desiredConfig": target,
                "machineCount": NODES,
                "updatedMachineCount": done + (not busy) if target else NODES,
                "updatingMachineCount": int(busy),
                "degradedMachineCount": 0,
                "unavailableMachineCount": int(busy),
            }
            wait_for(
                lambda: (
                    step_of(cluster, NODE_STATE_NAMESPACE, node.name) == step.value
                    and shown() == (per_step, counts)
                ),
                timeout=30,
                what=f"{node.name} {step.value} with {done} done: {per_step}, {counts}",
            )

        def move(node: SimulatedNode, frm: S, to: S, done: int) -> None:
            steps[frm] -= 1
            steps[to] += 1
            expect(node, to, done, NEW)

        for node in nodes:
            wait_for(lambda n=node.name: step_of(cluster, NODE_STATE_NAMESPACE, n) == "updated")
        expect(nodes[0], S.UPDATED, 0, "")  # before the rollout: all at rest, no target

        for done, node in enumerate(nodes):
            node.annotate({"hoststate.io/desired-config": NEW})
            move(node, S.UPDATED, S.PENDING, done)
            node.annotate({"hoststate.io/update-state": "Working"})
            estimates.clear()
            move(node, S.PENDING, S.PREPARING, done)
            state = cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, node.name)
            if done >= LEARNED:  # each step was taken by enough machines to say
                own = state["status"]["estimate"]
                assert (own["kind"], own["step"], own["samples"]) == (
                    "update",
                    "preparing update",
                    done,
                )
                assert (
                    own["endsAt"] > own["stepEndsAt"]
                    and own["basis"] == "pool worker, unknown hardware"
                )
            else:
                assert "estimate" not in state["status"]  # too few learned: nothing said
            # the pool's: once enough nodes went through a whole update
            if done >= LEARNED:
                assert estimates  # made for this rollout: as many left then, or more
                # first said as the fifth machine resumed (four whole updates ended, the
                # fifth counted as still in its last step), and kept while within a
                # twentieth of the time left: as many left as then, or fewer
                left = estimates[-1]["machinesLeft"]
                assert NODES - done <= left <= NODES - LEARNED + 1
                assert estimates[-1]["atOnce"] == 1
                assert LEARNED - 1 <= estimates[-1]["samples"] <= done + 1
            else:
                assert not estimates
            node.run_pod(NS, f"{node.name}-web")
            node.cordon()
            move(node, S.PREPARING, S.DRAINING, done)
            node.evict(NS, f"{node.name}-web")
            move(node, S.DRAINING, S.APPLYING, done)
            node.go_down()
            move(node, S.APPLYING, S.REBOOTING, done)
            node.come_back()
            move(node, S.REBOOTING, S.RESUMING, done)
            node.cordon(False)
            node.annotate({"hoststate.io/current-config": NEW, "hoststate.io/update-state": "Done"})
            move(node, S.RESUMING, S.UPDATED, done)

        wait_for(lambda: "estimate" not in (pool(cluster, "worker") or {}), what="rollout over")
        # counted as each update is told, just after its HostState is written
        wait_for(
            lambda: (
                running.sample("hoststate_node_updates_total", {"outcome": "completed"}) == NODES
            ),
            what=f"{NODES} updates counted",
        )
        drained = running.sample(
            "hoststate_node_update_step_duration_seconds_count", {"step": "draining"}
        )
        assert drained == NODES
        for node in (nodes[0], nodes[-1]):
            state = cluster.get(HOSTSTATES, NODE_STATE_NAMESPACE, node.name)
            history = state["status"]["history"]
            assert [h["to"] for h in history] == [
                "update pending", "preparing update", "draining", "applying update",
                "rebooting", "resuming", "updated",
            ]  # fmt: skip
            assert all(a["to"] == b["from"] for a, b in itertools.pairwise(history))
            assert update_of(state)["currentConfig"] == NEW
