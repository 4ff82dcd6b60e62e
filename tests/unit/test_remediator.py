"""Remediation inside a Host's reconcile (runtime/hosts/remediator.py): a host never in
trouble costs nothing and gets no verdict; a Node NotReady for long enough is
power-cycled when its pool is healthy enough and held when too much of the pool is
unhealthy (the pool's count read from the Node index, the held hosts named for a
Node change of the pool to free them); a Node gone, or a pool not remediated, takes
the remediation away; and when to look at the host again."""

from __future__ import annotations

from typing import Any

from state_controller.api.states import ProvisioningState
from state_controller.api.timefmt import rfc3339
from state_controller.books.book import Book
from state_controller.remediation.policy import Action, RemediationPolicy, Verdict
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.hosts.remediator import Remediator
from state_controller.runtime.indexes.nodes import NodeIndex
from state_controller.updates.signals import NodeSignals
from testbed.clocks import T0

NS = "metal"
NOT_READY_AFTER = 60.0
LATE = T0 + 3600  # long after every Node here went NotReady


def a_node(name: str, *, ready: str = "True", pool: str = "worker") -> dict[str, Any]:
    """A Node linked to the Host of its name in NS, Ready or not since T0."""
    labels = {f"node-role.kubernetes.io/{pool}": "", "hoststate.io/host": name,
              "hoststate.io/host-namespace": NS}  # fmt: skip
    condition = {"type": "Ready", "status": ready, "lastTransitionTime": rfc3339(T0)}
    return {"metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
            "spec": {}, "status": {"conditions": [condition]}}  # fmt: skip


class Fleet:
    """Nodes of one pool, each on the Host of its name, and a remediator over them."""

    def __init__(self, ready: int, not_ready: int, *, pools: frozenset[str] | None = None):
        names = [f"w-{i}" for i in range(ready + not_ready)]
        self.index = NodeIndex(lambda name: [f"{NS}/{name}"] if name in names else [])
        for i, name in enumerate(names):
            self.index.observe(name, a_node(name, ready="True" if i < ready else "False"))
        policy = RemediationPolicy(not_ready_after=NOT_READY_AFTER)
        config = ControllerConfig(remediation=policy, remediation_pools=pools)
        self.remediator = Remediator(config, self.index)

    def node(self, name: str) -> NodeSignals:
        node = self.index.node_on(f"{NS}/{name}")
        assert node is not None
        return node


def provisioned(name: str) -> Book:
    book = Book(f"{NS}/{name}", now=T0 - 600)
    book.move(ProvisioningState.PROVISIONED, now=T0 - 600, reason="ProvisioningComplete")
    book.note(now=T0 - 600, node=name, powered_on=True)
    return book


def test_a_host_never_in_trouble_gets_no_verdict_and_its_book_is_left_alone() -> None:
    fleet = Fleet(ready=3, not_ready=0)
    book = provisioned("w-0")
    end = book.journal.end
    assert fleet.remediator.consider(book, fleet.node("w-0"), deleting=False, now=LATE) is None
    assert book.facts.remediation is None and book.journal.end == end


def test_a_node_not_ready_long_enough_in_a_healthy_pool_is_power_cycled() -> None:
    fleet = Fleet(ready=4, not_ready=1)  # 1 of 5 unhealthy: 40 % allows 2
    book = provisioned("w-4")
    early = fleet.remediator.consider(book, fleet.node("w-4"), deleting=False, now=T0 + 10)
    assert early is not None and early.action is Action.WAIT
    assert Remediator.wake_after(early, T0 + 10) == NOT_READY_AFTER - 10

    verdict = fleet.remediator.consider(book, fleet.node("w-4"), deleting=False, now=LATE)
    assert verdict is not None and verdict.action is Action.POWER_CYCLE
    assert verdict.attempt == 1 and Remediator.wake_after(verdict, LATE) == 0.0
    assert book.facts.remediation is not None  # shown in the HostState
    assert fleet.remediator.held_in("worker") == []


def test_a_pool_too_unhealthy_holds_its_hosts_and_names_them() -> None:
    fleet = Fleet(ready=2, not_ready=2)  # 2 of 4 unhealthy: 40 % allows 1
    books = {name: provisioned(name) for name in ("w-2", "w-3")}
    for name, book in books.items():
        verdict = fleet.remediator.consider(book, fleet.node(name), deleting=False, now=LATE)
        assert verdict is not None and verdict.action is Action.HELD, verdict
    assert fleet.remediator.held_in("worker") == [f"{NS}/w-2", f"{NS}/w-3"]

    # w-3's Node comes back: the pool is healthy enough again, and w-2 no longer held
    fleet.index.observe("w-3", a_node("w-3"))
    back = fleet.remediator.consider(books["w-3"], fleet.node("w-3"), deleting=False, now=LATE)
    assert back is not None and back.action is Action.HEALTHY
    freed = fleet.remediator.consider(books["w-2"], fleet.node("w-2"), deleting=False, now=LATE)
    assert freed is not None and freed.action is Action.POWER_CYCLE
    assert fleet.remediator.held_in("worker") == []


def test_a_node_gone_takes_the_remediation_and_the_hold_away() -> None:
    fleet = Fleet(ready=0, not_ready=1)
    book = provisioned("w-0")
    verdict = fleet.remediator.consider(book, fleet.node("w-0"), deleting=False, now=LATE)
    assert verdict is not None and verdict.action is Action.HELD
    assert book.facts.remediation is not None

    assert fleet.remediator.consider(book, None, deleting=False, now=LATE + 1) is None
    assert book.facts.remediation is None
    assert fleet.remediator.held_in("worker") == []


def test_a_pool_not_remediated_is_left_alone() -> None:
    fleet = Fleet(ready=4, not_ready=1, pools=frozenset({"infra"}))
    book = provisioned("w-4")
    assert fleet.remediator.consider(book, fleet.node("w-4"), deleting=False, now=LATE) is None
    assert book.facts.remediation is None


def test_a_deleting_host_is_not_power_cycled() -> None:
    fleet = Fleet(ready=4, not_ready=1)
    verdict = fleet.remediator.consider(
        provisioned("w-4"), fleet.node("w-4"), deleting=True, now=LATE
    )
    assert verdict is not None and verdict.action is Action.BLOCKED


def test_when_to_look_again() -> None:
    assert Remediator.wake_after(None, T0) is None
    assert Remediator.wake_after(Verdict(Action.WAIT, "settling", retry_at=T0 + 30), T0) == 30
    assert Remediator.wake_after(Verdict(Action.WAIT, "late", retry_at=T0 - 5), T0) == 0.0
    assert Remediator.wake_after(Verdict(Action.EXHAUSTED, "a person must look"), T0) is None


def capi_machine(node: str, reason: str) -> dict[str, Any]:
    """A Cluster API Machine (v1beta2) of ``node``, its Updating condition with ``reason``
    as the Machine controller writes it (setUpdatingCondition), marked by its owner."""
    updating = {"type": "Updating", "status": "False" if reason == "NotUpdating" else "True",
                "reason": reason, "message": "", "lastTransitionTime": rfc3339(T0)}  # fmt: skip
    marked = {} if reason == "NotUpdating" else {
        "in-place-updates.internal.cluster.x-k8s.io/update-in-progress": "",
        "runtime.cluster.x-k8s.io/pending-hooks": "UpdateMachine"}  # fmt: skip
    return {"metadata": {"namespace": "capi", "name": f"m-{node}", "annotations": marked},
            "spec": {"clusterName": "c"},
            "status": {"nodeRef": {"name": node}, "conditions": [updating]}}  # fmt: skip


def test_a_node_down_for_cluster_apis_in_place_update_is_held_off_and_says_why() -> None:
    fleet = Fleet(ready=4, not_ready=1)
    book = provisioned("w-4")
    fleet.index.observe_capi_machine("capi/m-w-4", capi_machine("w-4", "InPlaceUpdating"))
    verdict = fleet.remediator.consider(book, fleet.node("w-4"), deleting=False, now=LATE)
    assert verdict is not None and verdict.action is Action.BLOCKED
    assert verdict.why == (
        "not remediated while the host is being updated in place by Cluster API "
        "(Machine capi/m-w-4: Updating=True, InPlaceUpdating); its MachineHealthCheck "
        "does not tell an update from a failure, so hoststate waits for Updating=False"
    )
    fleet.index.observe_capi_machine("capi/m-w-4", capi_machine("w-4", "InPlaceUpdateFailed"))
    verdict = fleet.remediator.consider(book, fleet.node("w-4"), deleting=False, now=LATE)
    assert verdict is not None and verdict.action is Action.BLOCKED
    assert "failing an in-place update that Cluster API retries" in verdict.why
    # the update is over and the Node still NotReady: a failure like any other
    fleet.index.observe_capi_machine("capi/m-w-4", capi_machine("w-4", "NotUpdating"))
    verdict = fleet.remediator.consider(book, fleet.node("w-4"), deleting=False, now=LATE)
    assert verdict is not None and verdict.action is Action.POWER_CYCLE
