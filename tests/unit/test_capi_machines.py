"""Cluster API's in-place update, read from a Machine (``cluster.x-k8s.io/v1beta2``) beside
its Node. The Machines are shaped as Cluster API v1.14.2's Machine CRD and its Machine
controller write them (``core/reconcilers/machine/machine_controller_inplace_update.go``,
``setUpdatingCondition`` in ``machine_controller_status.go``)."""

from __future__ import annotations

import logging
from typing import Any, cast

import pytest

from state_controller.api.updates import UpdateStep as S
from state_controller.books.book import Book
from state_controller.books.records import UpdateCursor
from state_controller.cluster.interface import ApiError, Cluster, NotFound
from state_controller.runtime.indexes.nodes import NodeIndex
from state_controller.runtime.nodes.capi_machines import CapiMachines
from state_controller.updates.adapters import DrainStatus, adapter_for
from state_controller.updates.adapters.capi import updating_in_place
from state_controller.updates.progression import progress
from state_controller.updates.signals import capi_machine_signals

PROVIDER = "metal3://metal/host-0/m-0"
IN_PROGRESS = "in-place-updates.internal.cluster.x-k8s.io/update-in-progress"
HOOKS = "runtime.cluster.x-k8s.io/pending-hooks"


def node(*, unschedulable: bool = False, ready: str = "True", kubelet: str = "v1.35.1") -> Any:
    return {
        "metadata": {"name": "worker-0", "uid": "u-1", "labels": {}},
        "spec": {"unschedulable": unschedulable, "providerID": PROVIDER},
        "status": {
            "conditions": [{"type": "Ready", "status": ready}],
            "nodeInfo": {"kubeletVersion": kubelet, "bootID": "boot-1"},
        },
    }


def machine(
    reason: str = "NotUpdating",
    message: str = "",
    *,
    marked: bool = False,
    hook: bool = False,
    up_to_date: tuple[str, str] = ("True", "UpToDate"),
    node_ref: str | None = "worker-0",
) -> dict[str, Any]:
    annotations = {}
    if marked:
        annotations[IN_PROGRESS] = ""
    if hook:
        annotations[HOOKS] = "UpdateMachine"
    status = "False" if reason == "NotUpdating" else "True"
    cond = {"lastTransitionTime": "2026-11-29T04:00:00Z", "message": message}
    raw: dict[str, Any] = {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {"namespace": "capi", "name": "md-0-abcde", "annotations": annotations},
        "spec": {
            "clusterName": "c",
            "version": "v1.35.1",
            "providerID": PROVIDER,
            "bootstrap": {"dataSecretName": "md-0-abcde"},
            "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io",
                "kind": "Metal3Machine",
                "name": "md-0-abcde",
            },
        },
        "status": {
            "conditions": [
                {**cond, "type": "Updating", "status": status, "reason": reason},
                {
                    **cond,
                    "type": "UpToDate",
                    "status": up_to_date[0],
                    "reason": up_to_date[1],
                    "message": "",
                },
            ]
        },
    }
    if node_ref:
        raw["status"]["nodeRef"] = {"name": node_ref}
    return raw


def read(raw_node: Any, raw_machine: Any, before: UpdateCursor | None = None) -> Any:
    index = NodeIndex(lambda name: [])
    index.observe("worker-0", raw_node)
    index.observe_capi_machine("capi/md-0-abcde", raw_machine)
    [signals] = index.all()
    adapter = adapter_for(signals)
    return adapter.name, adapter.read(signals, before or UpdateCursor(), DrainStatus())


def test_the_machines_words_are_read_as_cluster_api_writes_them() -> None:
    m = capi_machine_signals(
        machine("InPlaceUpdating", "In-place update in progress: x", hook=True)
    )
    assert m.key == "capi/md-0-abcde" and m.node_name == "worker-0"
    assert m.provider_id == PROVIDER and m.version == "v1.35.1"
    assert m.updating == ("True", "InPlaceUpdating", "In-place update in progress: x")
    assert m.hook_pending and not m.marked and updating_in_place(m)
    assert not updating_in_place(capi_machine_signals(machine()))
    # one hook among others, as the comma-separated annotation holds them
    other = machine()
    other["metadata"]["annotations"][HOOKS] = "BeforeClusterUpgrade,UpdateMachine"
    assert capi_machine_signals(other).hook_pending


def test_each_answer_of_the_update_machine_hook_is_a_step() -> None:
    name, r = read(node(), machine())
    assert (name, r.step, r.message) == ("capi", S.UPDATED, "")
    # marked by its owner; the Machine controller has not written Updating=True yet
    name, r = read(node(), machine(marked=True))
    assert (r.step, r.message) == (
        S.PREPARING,
        "marked for an in-place update; the UpdateMachine hook is not called yet",
    )
    # the hook answered in progress, with retryAfterSeconds and a message
    msg = "In-place update in progress: upgrading kubelet"
    name, r = read(node(), machine("InPlaceUpdating", msg, marked=True, hook=True))
    assert (r.step, r.message) == (
        S.APPLYING,
        f"Cluster API says Updating=True (InPlaceUpdating): {msg}",
    )
    # ... and the extension rebooted the machine: the Node says so
    name, r = read(node(ready="False"), machine("InPlaceUpdating", msg, marked=True, hook=True))
    assert r.step == S.REBOOTING and r.message.startswith("the node is not Ready; Cluster API")
    # the hook failed
    failed = "UpdateMachine hook failed: please check controller logs for errors"
    name, r = read(node(), machine("InPlaceUpdateFailed", failed, marked=True, hook=True))
    assert (r.step, r.message) == (
        S.DEGRADED,
        f"InPlaceUpdateFailed: {failed} (Cluster API retries with back-off)",
    )


def test_a_machine_behind_its_owners_spec_is_pending() -> None:
    behind = machine(up_to_date=("False", "NotUpToDate"))
    _name, r = read(node(), behind)
    assert (r.step, r.message) == (S.PENDING, "NotUpToDate: its spec differs from its owner's")
    # a drain by its owner (a rollout that replaces it) is read from the Node
    _name, r = read(node(unschedulable=True), behind)
    assert r.step == S.DRAINING


def test_a_machine_joins_its_node_by_node_ref_or_provider_id_whichever_comes_first() -> None:
    index = NodeIndex(lambda name: [])
    updating = machine("InPlaceUpdating", marked=True, hook=True, node_ref=None)
    assert index.observe_capi_machine("capi/md-0-abcde", updating) == set()  # no Node yet
    assert index.observe("worker-0", node()) == {"node:worker-0"}
    [signals] = index.all()
    assert signals.capi is not None and adapter_for(signals).name == "capi"  # by providerID
    # the nodeRef is written: the same Node; a Machine event that changes nothing read
    # (a condition's time) reconciles nothing
    updating["status"]["nodeRef"] = {"name": "worker-0"}
    assert index.observe_capi_machine("capi/md-0-abcde", updating) == {"node:worker-0"}
    updating["status"]["conditions"][0]["lastTransitionTime"] = "2026-11-29T04:01:00Z"
    assert index.observe_capi_machine("capi/md-0-abcde", updating) == set()
    assert index.observe_capi_machine("capi/md-0-abcde", machine()) == {"node:worker-0"}
    # a Machine whose nodeRef names another Node is not this one's, same providerID or not
    index.observe_capi_machine("capi/md-0-abcde", machine(node_ref="worker-9"))
    [signals] = index.all()
    assert signals.capi is None
    assert index.observe_capi_machine("capi/md-0-abcde", None) == set()
    assert adapter_for(index.all()[0]).name == "kubelet"


def test_a_machine_without_node_ref_finds_a_known_node_by_provider_id_and_only_it() -> None:
    index = NodeIndex(lambda name: [])
    index.observe("worker-0", node())
    updating = machine("InPlaceUpdating", marked=True, hook=True, node_ref=None)
    assert index.observe_capi_machine("capi/md-0-abcde", updating) == {"node:worker-0"}
    assert index.all()[0].capi is not None
    # the Node gone, its providerID joins no Node: the Machine's next event touches none
    index.observe("worker-0", None)
    assert index.observe_capi_machine("capi/md-0-abcde", machine(node_ref=None)) == set()


def test_progress_records_an_update_in_place_and_one_that_failed() -> None:
    book = Book("hoststate-system/worker-0", now=0, node_only=True)
    index = NodeIndex(lambda name: [])
    index.observe("worker-0", node())
    clock = 100.0

    def see(raw_machine: Any, raw_node: Any | None = None) -> None:
        nonlocal clock
        clock += 10
        if raw_node is not None:
            index.observe("worker-0", raw_node)
        index.observe_capi_machine("capi/md-0-abcde", raw_machine)
        progress(book, index.all()[0], DrainStatus(), clock)

    see(machine())
    see(machine("InPlaceUpdating", "In-place update in progress", marked=True, hook=True))
    see(machine(), node(kubelet="v1.35.2"))
    see(machine("InPlaceUpdating", "In-place update in progress", marked=True, hook=True))
    see(machine("InPlaceUpdateFailed", "UpdateMachine hook failed", marked=True, hook=True))
    steps = [(t.from_state, t.to_state, t.reason) for t in book.history]
    assert steps == [
        ("updated", "applying update", "UpdateStarted"),
        ("applying update", "updated", "UpdateComplete"),
        ("updated", "applying update", "UpdateStarted"),
        ("applying update", "update degraded", "UpdateDegraded"),
    ]
    assert book.update.source == "capi"
    assert "now running v1.35.2" in book.history[1].message


class Answering:
    """A cluster whose list of Machines answers ``error`` (None: an empty list)."""

    def __init__(self, error: ApiError | None) -> None:
        self.error = error
        self.lists = 0

    def list(self, *args: Any, **kwargs: Any) -> tuple[list[Any], str]:
        self.lists += 1
        if self.error is not None:
            raise self.error
        return [], "1"


def test_machines_are_watched_only_where_their_crd_is_served(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def informers(error: ApiError | None) -> tuple[int, int]:
        cluster = Answering(error)
        machines = CapiMachines(cast(Cluster, cluster), lambda key, obj: None)
        found = machines.informers()
        assert machines.informers() == found  # asked once
        return len(found), cluster.lists

    assert informers(None) == (1, 1)
    assert informers(NotFound("the server could not find the requested resource")) == (0, 1)
    forbidden = ApiError('machines.cluster.x-k8s.io is forbidden: User "x" cannot list')
    forbidden.code = 403
    with caplog.at_level(logging.WARNING):
        assert informers(forbidden) == (0, 1)
    assert "Grant get, list and watch on machines.cluster.x-k8s.io" in caplog.text
    broken = ApiError("etcdserver: request timed out")
    with pytest.raises(ApiError):
        informers(broken)  # no answer about the CRD: raised, as any cache that fails to fill
