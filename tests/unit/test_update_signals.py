"""Update signals: a Node reduced to what an update is read from, and the adapters' steps."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from state_controller.api.updates import UpdateStep as S
from state_controller.books.book import Book
from state_controller.books.records import UpdateCursor
from state_controller.books.update_conditions import derive
from state_controller.runtime.indexes.nodes import NodeIndex
from state_controller.updates.adapters import DrainStatus, adapter_for, never_back
from state_controller.updates.links import host_of, names_read
from state_controller.updates.pool_summary import pool_share, pool_status, pool_summary
from state_controller.updates.progression import progress
from state_controller.updates.signals import node_signals, pool_of

M = "machineconfiguration.openshift.io/"
OLD, NEW = "rendered-worker-1a2b", "rendered-worker-3c4d"


def node(
    annotations: dict[str, str] | None = None,
    *,
    unschedulable: bool = False,
    ready: str = "True",
    boot: str = "boot-1",
    kubelet: str = "v1.36.2",
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "worker-0",
            "uid": "u-1",
            "labels": {"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": "w0"},
            "annotations": annotations or {},
        },
        "spec": {"unschedulable": unschedulable, "providerID": "metal3://metal/host-0/m-0"},
        "status": {
            "conditions": [
                {"type": "Ready", "status": ready, "lastHeartbeatTime": "2026-11-24T10:00:00Z"}
            ],
            "nodeInfo": {
                "kubeletVersion": kubelet,
                "osImage": "RHCOS 9.6",
                "kernelVersion": "5.14.0-570",
                "containerRuntimeVersion": "cri-o://1.36.1",
                "bootID": boot,
            },
            "images": [{"names": ["quay.io/x"], "sizeBytes": 1}],
        },
    }


def test_a_heartbeat_does_not_change_the_signals() -> None:
    before = node({M + "state": "Done"})
    after = copy.deepcopy(before)
    after["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-11-24T10:05:00Z"
    after["status"]["images"].append({"names": ["quay.io/y"], "sizeBytes": 2})
    after["metadata"]["annotations"]["unrelated.example/x"] = "1"
    assert node_signals(after) == node_signals(before)
    cordoned = copy.deepcopy(before)
    cordoned["spec"]["unschedulable"] = True
    assert node_signals(cordoned) != node_signals(before)


def test_pool_from_role_labels() -> None:
    """As the Machine Config Operator places a node (pkg/helpers/helpers.go,
    GetPoolsForNode, at 1c5e40f25): master first, then a custom role, then worker."""
    role = "node-role.kubernetes.io/"
    assert pool_of({role + "worker": ""}) == "worker"
    assert pool_of({role + "worker": "", role + "master": ""}) == "master"
    # every OpenShift control-plane node: its MachineConfigPool is master
    assert pool_of({role + "master": "", role + "control-plane": ""}) == "master"
    assert pool_of({role + "master": "", role + "control-plane": "", role + "worker": ""}) == (
        "master"
    )
    assert pool_of({role + "control-plane": ""}) == "control-plane"  # kubeadm's, alone
    assert pool_of({role + "infra": "", role + "worker": ""}) == "infra"
    assert pool_of({role + "gpu": "", role + "worker": ""}) == "gpu"  # a custom pool
    assert pool_of({role + "master": "", role + "infra": ""}) == "master"
    assert pool_of({"pool": "gpu"}, "pool") == "gpu"
    assert pool_of({}) == ""


def mco(state: str, **extra: str) -> dict[str, str]:
    base = {M + "desiredConfig": NEW, M + "currentConfig": OLD, M + "state": state}
    return {**base, **{M + k: v for k, v in extra.items()}}


def test_the_machine_config_operator_update_sequence() -> None:
    """The annotations in the order the operator writes them, read step by step."""
    drain, uncordon = f"drain-{NEW}", f"uncordon-{NEW}"
    cursor = UpdateCursor(desired=OLD, current=OLD, boot_id="boot-1")
    pods = DrainStatus(
        known=True, pods_left=3, blocked_by="web/web-pdb", blocked_since="2026-11-24T10:02:11Z"
    )
    sequence = [
        (node(mco("Done")), S.PENDING),
        (node(mco("Working")), S.PREPARING),
        (node(mco("Working", desiredDrain=drain)), S.CORDONING),
        (node(mco("Working", desiredDrain=drain), unschedulable=True), S.DRAINING),
        (
            node(mco("Working", desiredDrain=drain, lastAppliedDrain=drain), unschedulable=True),
            S.APPLYING,
        ),
        (
            node(
                mco("Working", desiredDrain=drain, lastAppliedDrain=drain, **{
                    "post-config-action": "Rebooting"}),
                unschedulable=True,
                ready="False",
            ),
            S.REBOOTING,
        ),
        (
            node(
                mco("Working", desiredDrain=uncordon, lastAppliedDrain=drain),
                unschedulable=True,
                boot="boot-2",
            ),
            S.RESUMING,
        ),
        (
            node(
                {**mco("Done", desiredDrain=uncordon, lastAppliedDrain=uncordon),
                 M + "currentConfig": NEW},
                boot="boot-2",
            ),
            S.UPDATED,
        ),
    ]  # fmt: skip
    steps = []
    for raw, expected in sequence:
        signals = node_signals(raw)
        adapter = adapter_for(signals)
        assert adapter.name == "mco"
        reading = adapter.read(signals, cursor, pods)
        steps.append(reading.step)
        assert reading.step == expected, (expected, reading)
        assert reading.desired == NEW
        if reading.step == S.DRAINING:
            assert reading.message == "draining: 3 pods left, eviction blocked by " + (
                "PodDisruptionBudget web/web-pdb (it allows no disruption since "
                "2026-11-24T10:02:11Z)"
            )
        cursor = replace(cursor, step=reading.step, desired=reading.desired)
    assert steps == [expected for _, expected in sequence]


def test_degraded_and_unreconcilable_carry_the_daemons_reason() -> None:
    cursor = UpdateCursor(step=S.APPLYING, desired=NEW, current=OLD)
    for state in ("Degraded", "Unreconcilable"):
        signals = node_signals(node(mco(state, reason="failed to pull quay.io/os: 403")))
        reading = adapter_for(signals).read(signals, cursor, DrainStatus())
        assert reading.step == S.DEGRADED
        assert reading.message == f"{state}: failed to pull quay.io/os: 403"


def test_a_drained_node_stays_past_draining_when_a_pod_lands() -> None:
    before = UpdateCursor(step=S.APPLYING, desired=NEW)
    working = {"hoststate.io/update-state": "Working", "hoststate.io/desired-config": NEW}
    signals = node_signals(node(working, unschedulable=True))
    reading = adapter_for(signals).read(signals, before, DrainStatus(known=True, pods_left=1))
    assert reading.step == S.DRAINING
    assert never_back(before, reading).step == S.APPLYING
    restarted = UpdateCursor(step=S.APPLYING, desired="another")
    assert never_back(restarted, reading).step == S.DRAINING  # a new update starts over


def test_own_annotations_with_the_machine_telling_the_step() -> None:
    own = {"hoststate.io/desired-config": "v2", "hoststate.io/current-config": "v1"}
    cursor = UpdateCursor(desired="v1", current="v1", boot_id="boot-1")
    drained = DrainStatus(known=True)
    cases = [
        (node(own), S.PENDING),
        (node({**own, "hoststate.io/update-state": "Working"}), S.PREPARING),
        (node({**own, "hoststate.io/update-state": "Working"}, unschedulable=True), S.DRAINING),
        (node({**own, "hoststate.io/update-state": "Working"}, ready="Unknown"), S.REBOOTING),
        (
            node({**own, "hoststate.io/update-state": "Working"}, unschedulable=True,
                 boot="boot-2"),
            S.RESUMING,
        ),
        (node({**own, "hoststate.io/current-config": "v2",
               "hoststate.io/update-state": "Done"}), S.UPDATED),
    ]  # fmt: skip
    for raw, expected in cases:
        signals = node_signals(raw)
        adapter = adapter_for(signals)
        pods = drained if expected != S.DRAINING else DrainStatus(known=True, pods_left=2)
        assert adapter.name == "agent"
        assert adapter.read(signals, cursor, pods).step == expected


def test_plain_kubelet_upgrade_with_a_reboot() -> None:
    idle = UpdateCursor(current="kubelet v1.36.2, RHCOS 9.6, kernel 5.14.0-570, cri-o://1.36.1")
    signals = node_signals(node())
    adapter = adapter_for(signals)
    assert adapter.name == "kubelet"
    assert adapter.read(signals, idle, DrainStatus()).step == S.UPDATED
    started = replace(idle, step=S.DRAINING, boot_id="boot-1")
    cordoned = node_signals(node(unschedulable=True))
    assert adapter.read(cordoned, started, DrainStatus(known=True)).step == S.APPLYING
    down = node_signals(node(unschedulable=True, ready="False"))
    assert adapter.read(down, started, DrainStatus(known=True)).step == S.REBOOTING
    back = node_signals(node(unschedulable=True, boot="boot-2", kubelet="v1.37.1"))
    assert adapter.read(back, started, DrainStatus(known=True)).step == S.RESUMING
    uncordoned = node_signals(node(boot="boot-2", kubelet="v1.37.1"))
    done = adapter.read(uncordoned, replace(started, step=S.RESUMING), DrainStatus())
    assert done.step == S.UPDATED and done.current.startswith("kubelet v1.37.1")


def test_a_node_that_is_merely_not_ready_is_not_updating() -> None:
    idle = UpdateCursor(current="x")
    signals = node_signals(node(ready="False"))
    assert adapter_for(signals).read(signals, idle, DrainStatus()).step == S.UPDATED


def statuses(cursor: UpdateCursor, visited: set[S] | None = None) -> dict[str, tuple[str, str]]:
    cursor = replace(cursor, visited=frozenset(visited or ()))
    return {k: (c.status, c.reason) for k, c in derive(cursor).items()}


def test_conditions_while_draining_name_the_child_in_progress() -> None:
    cursor = UpdateCursor(step=S.DRAINING, desired=NEW, started_at=1.0, message="draining: 2 pods")
    got = statuses(cursor)
    assert got["UpdatePrepared"] == ("True", "NotRequired")
    assert "UpdateCompatible" not in got and "ReloadedCRIO" not in got  # v1alpha1's words
    assert got["UpdateExecuted"] == ("Unknown", "Draining")
    assert got["Cordoned"] == ("True", "NotRequired")
    assert got["Drained"] == ("Unknown", "Draining")
    assert got["AppliedFilesAndOS"] == ("False", "NotYetOccurred")
    assert got["UpdatePostActionComplete"] == ("False", "NotYetOccurred")
    assert got["Updated"] == ("False", "Updating")
    assert got["NodeDegraded"] == ("False", "AsExpected")
    assert derive(cursor)["Drained"].message == "draining: 2 pods"


def test_conditions_of_a_finished_update_and_of_one_never_seen() -> None:
    done = statuses(UpdateCursor(started_at=1.0, current=NEW), {S.DRAINING, S.REBOOTING})
    assert done["Updated"] == ("True", "AtDesiredConfig")
    assert done["Drained"] == ("True", "Done") and done["RebootedNode"] == ("True", "Done")
    assert done["Cordoned"] == ("True", "NotRequired")
    assert all(status == "True" for k, (status, _) in done.items() if k != "NodeDegraded")
    never = statuses(UpdateCursor(current=OLD))
    assert never["Updated"] == ("True", "AtDesiredConfig")
    assert never["UpdateExecuted"] == ("False", "NotYetOccurred")


def test_a_degraded_update_fails_the_phase_it_was_in() -> None:
    cursor = UpdateCursor(
        step=S.DEGRADED, failed_step=S.APPLYING, started_at=1.0, message="Degraded: disk full"
    )
    got = statuses(cursor, {S.DRAINING})
    assert got["UpdateExecuted"] == ("False", "Failed")
    assert got["AppliedFilesAndOS"] == ("False", "Failed")
    assert got["Drained"] == ("True", "Done")
    assert got["RebootedNode"] == ("False", "NotYetOccurred")
    assert got["NodeDegraded"] == ("True", "UpdateFailed")
    assert derive(cursor)["NodeDegraded"].message == "Degraded: disk full"


def test_progress_records_a_plain_kubelet_upgrade_with_its_reboot() -> None:
    book = Book("hoststate-system/worker-0", now=0, node_only=True)
    clock = 100.0

    def see(raw: dict[str, Any], pods: DrainStatus | None = None) -> bool:
        nonlocal clock
        clock += 10
        return progress(book, node_signals(raw), pods or DrainStatus(), clock)

    assert not see(node())  # first sight: running v1.36.2, nothing to record
    assert not see(node())  # a heartbeat
    assert see(node(unschedulable=True), DrainStatus(known=True, pods_left=2))
    assert not see(node(unschedulable=True), DrainStatus(known=True, pods_left=1))
    assert book.update.message == "draining: 1 pod left"
    assert see(node(unschedulable=True), DrainStatus(known=True))
    assert see(node(unschedulable=True, ready="False"))
    # the kubelet is back on its new boot before the node is Ready (CNI not up yet)
    assert not see(node(unschedulable=True, ready="False", boot="boot-2", kubelet="v1.37.1"))
    assert see(node(unschedulable=True, boot="boot-2", kubelet="v1.37.1"))
    assert see(node(boot="boot-2", kubelet="v1.37.1"))
    assert book.update.boot_id == "boot-2"  # in the write that ended the update
    steps = [(t.from_state, t.to_state, t.reason) for t in book.history]
    assert steps == [
        ("updated", "draining", "UpdateStarted"),
        ("draining", "applying update", "ApplyingUpdate"),
        ("applying update", "rebooting", "Rebooting"),
        ("rebooting", "resuming", "Resuming"),
        ("resuming", "updated", "UpdateComplete"),
    ]
    assert "kubelet v1.37.1" in book.history[-1].message
    assert book.history[-1].message.startswith("done in 1m0s, now running")  # from 130 to 190
    assert book.chapters[-1].outcome == "completed"


def test_progress_records_an_in_place_upgrade() -> None:
    book = Book("hoststate-system/worker-0", now=0, node_only=True)
    progress(book, node_signals(node()), DrainStatus(), 10)
    assert progress(book, node_signals(node(kubelet="v1.36.3")), DrainStatus(), 20)
    assert [t.to_state for t in book.history] == ["applying update", "updated"]
    assert "in place" in book.history[0].message


def test_progress_through_the_operators_annotations_and_a_degraded_retry() -> None:
    book = Book("hoststate-system/worker-0", now=0, node_only=True)
    drain = f"drain-{NEW}"
    done_old = {M + "desiredConfig": OLD, M + "currentConfig": OLD, M + "state": "Done"}
    readings = [
        node(done_old),
        node(mco("Done")),
        node(mco("Working", desiredDrain=drain), unschedulable=True),
        node(mco("Degraded", desiredDrain=drain, reason="drain timed out"), unschedulable=True),
        node(mco("Working", desiredDrain=drain, lastAppliedDrain=drain), unschedulable=True),
    ]
    for at, raw in enumerate(readings):
        progress(book, node_signals(raw), DrainStatus(known=True, pods_left=1), 10.0 * at)
    assert [t.reason for t in book.history] == [
        "UpdateStarted", "Draining", "UpdateDegraded", "ApplyingUpdate",
    ]  # fmt: skip
    assert book.history[0].message == f"updating from {OLD} to {NEW}: targeted to {NEW}; " + (
        "the daemon has not started"
    )
    assert book.history[2].message == "Degraded: drain timed out"
    assert book.update.step == S.APPLYING and book.update.failed_step is None


def test_a_node_is_linked_to_its_host_by_provider_id_or_label_and_by_hostname_if_asked() -> None:
    hosts = {
        "host-0": ["metal/host-0"],
        "bmh-7": ["openshift-machine-api/bmh-7"],
        "w0": ["metal/w0"],
        "twin": ["a/twin", "b/twin"],
    }

    def named(name: str) -> list[str]:
        return hosts.get(name, [])

    raw = node()
    assert host_of(node_signals(raw), named) == "metal/host-0"  # metal3://metal/host-0/m-0
    raw["spec"]["providerID"] = "baremetalhost:///openshift-machine-api/bmh-7/0f3c"
    assert host_of(node_signals(raw), named) == "openshift-machine-api/bmh-7"
    # cluster-api-provider-metal3's older form names the BareMetalHost by its UID
    hosts["uid:6f1c2a4e-0b7d-4f4e-9d0a-3c5e2b1a9f00"] = ["metal3/worker-9"]
    raw["spec"]["providerID"] = "metal3://6f1c2a4e-0b7d-4f4e-9d0a-3c5e2b1a9f00"
    assert host_of(node_signals(raw), named) == "metal3/worker-9"
    assert names_read(node_signals(raw)) == {"uid:6f1c2a4e-0b7d-4f4e-9d0a-3c5e2b1a9f00"}
    hosts["6f1c2a4e-0b7d-4f4e-9d0a-3c5e2b1a9f00"] = ["tenant/x"]  # a Host named like it
    assert host_of(node_signals(raw), named) == "metal3/worker-9"  # answers for nothing
    raw["spec"]["providerID"] = "metal3://metal/gone/m-0"
    assert host_of(node_signals(raw), named) is None  # no such Host; a hostname proves nothing
    assert names_read(node_signals(raw)) == {"gone"}
    # metal3's providerID decides alone: its Host gone (or another shard's), no weaker
    # claim takes the Node, not even a trusted hostname
    assert host_of(node_signals(raw), named, by_hostname=True) is None
    raw["spec"]["providerID"] = "aws:///us-east-1a/i-0abc"  # not metal3's: asked next
    assert host_of(node_signals(raw), named, by_hostname=True) == "metal/w0"
    raw["metadata"]["labels"]["hoststate.io/host"] = "twin"
    assert host_of(node_signals(raw), named) is None  # a name alone, no home namespace
    assert host_of(node_signals(raw), named, current="a/twin") is None
    assert host_of(node_signals(raw), named, home="b") == "b/twin"
    assert host_of(node_signals(raw), named, by_hostname=True) is None  # the label decides
    raw["metadata"]["labels"]["hoststate.io/host-namespace"] = "a"
    assert host_of(node_signals(raw), named) == "a/twin"
    assert host_of(node_signals(raw), named, home="b") == "a/twin"
    del raw["metadata"]["labels"]["hoststate.io/host-namespace"]
    raw["metadata"]["labels"]["hoststate.io/host"] = "b/twin"
    assert host_of(node_signals(raw), named) == "b/twin"
    del raw["metadata"]["labels"]["hoststate.io/host"]
    raw["metadata"]["labels"]["kubernetes.io/hostname"] = "nowhere"
    assert host_of(node_signals(raw), named, by_hostname=True) is None


def test_a_host_named_like_a_node_does_not_take_it() -> None:
    """A tenant's Host named after a Node (its hostname) takes nothing by default; with
    hostnames trusted, a second Host of that name elsewhere does not take the Node away
    from the one it was linked to."""
    hosts: dict[str, list[str]] = {}
    index = NodeIndex(lambda name: hosts.get(name, []))
    worker = node()
    worker["spec"] = {}  # no providerID, no label: only its hostname, w0
    index.observe("w0", worker)
    hosts["w0"] = ["tenant/w0"]
    assert index.relink("w0") == set()
    assert index.key_of("w0") == "node:w0"  # followed on its own, as before

    trusting = NodeIndex(lambda name: hosts.get(name, []), by_hostname=True)
    trusting.observe("w0", worker)
    assert trusting.key_of("w0") == "tenant/w0"
    hosts["w0"] = ["tenant/w0", "other/w0"]
    assert trusting.relink("w0") == set()
    assert trusting.key_of("w0") == "tenant/w0"  # the link made first holds


def test_an_update_that_reloads_cri_o_instead_of_rebooting() -> None:
    book = Book("hoststate-system/worker-0", now=0, node_only=True)
    own = {"hoststate.io/current-config": "v1"}
    working = {**own, "hoststate.io/desired-config": "v2", "hoststate.io/update-state": "Working"}
    readings = [
        (node(own), DrainStatus()),
        (node(working, unschedulable=True), DrainStatus(known=True)),
        (node({**working, "hoststate.io/update-state": "ReloadingCRIO"}, unschedulable=True),
         DrainStatus(known=True)),
        (node(working, unschedulable=True), DrainStatus(known=True)),
        (node({**working, "hoststate.io/current-config": "v2",
               "hoststate.io/update-state": "Done"}), DrainStatus()),
    ]  # fmt: skip
    conditions = []
    for clock, (raw, drain) in enumerate(readings, start=1):
        progress(book, node_signals(raw), drain, clock * 10.0)
        conditions.append({k: (c.status, c.reason) for k, c in derive(book.update).items()})
    steps = [(t.to_state, t.reason) for t in book.history]
    assert steps == [
        ("applying update", "UpdateStarted"),
        ("reloading CRI-O", "ReloadingCRIO"),
        ("resuming", "Resuming"),
        ("updated", "UpdateComplete"),
    ]
    reloading, finished = conditions[2], conditions[-1]
    # MachineConfigNode v1 has no ReloadedCRIO: the reload is its post-action
    assert reloading["UpdatePostActionComplete"] == ("Unknown", "ReloadingCRIO")
    assert reloading["RebootedNode"] == ("False", "NotYetOccurred")
    assert conditions[3]["UpdatePostActionComplete"] == ("True", "Done")
    assert finished["UpdatePostActionComplete"] == ("True", "Done")
    assert finished["RebootedNode"] == ("True", "NotRequired")


def test_a_pool_counts_as_updated_only_the_nodes_at_its_target() -> None:
    ready, cordoned = node_signals(node()), node_signals(node(unschedulable=True))
    done = UpdateCursor(current=NEW, desired=NEW, started_at=50.0)
    updating = UpdateCursor(step=S.DRAINING, current=OLD, desired=NEW, started_at=90.0)
    untouched = UpdateCursor(current=OLD, desired=OLD)  # the rollout has not reached it
    earlier = UpdateCursor(current=OLD, desired=OLD, started_at=10.0)  # the last rollout
    summary = pool_summary(
        [(ready, done), (cordoned, updating), (ready, untouched), (ready, earlier), (ready, None)]
    )
    assert summary == {
        "desiredConfig": NEW,
        "machineCount": 5,
        "updatedMachineCount": 1,
        "updatingMachineCount": 1,
        "degradedMachineCount": 0,
        "unavailableMachineCount": 1,
    }
    # no update named a configuration yet: every node at rest is up to date
    before = pool_summary([(ready, untouched), (ready, UpdateCursor(current="kubelet v1"))])
    assert before["desiredConfig"] == "" and before["updatedMachineCount"] == 2


def test_a_pools_nodes_split_among_shards_add_up_to_the_same_counts() -> None:
    """Sharded, each replica tells its own Nodes' share; the sum is the pool's status."""
    ready, cordoned = node_signals(node()), node_signals(node(unschedulable=True))
    members = [
        (ready, UpdateCursor(current=OLD, desired=OLD, started_at=10.0)),  # the last rollout
        (ready, UpdateCursor(current=NEW, desired=NEW, started_at=50.0)),
        (cordoned, UpdateCursor(step=S.DRAINING, current=OLD, desired=NEW, started_at=90.5)),
        (ready, UpdateCursor(step=S.REBOOTING, current=OLD, desired=NEW, started_at=90.25)),
        (ready, UpdateCursor(step=S.DEGRADED, current=OLD, desired=NEW, started_at=70.0)),
        (ready, UpdateCursor(current=OLD, desired=OLD)),
        (cordoned, UpdateCursor(current=NEW, desired=NEW, started_at=40.0)),
        (ready, None),
    ]
    whole = pool_summary(members)
    assert whole["updatedMachineCount"] == 2 and whole["unavailableMachineCount"] == 4
    told = [(n, u) for n, u in members if u is not None]
    for cut in ([1], [2, 4], [1, 3, 5], [3], [2]):  # the target's update in one share or another
        parts = [told[a:b] for a, b in zip([0, *cut], [*cut, len(told)], strict=True)]
        shares = [pool_share("worker", part) for part in parts]
        assert pool_status(shares, machines=8, down=2) == whole, cut
    # a share's target is its latest update's, to the millisecond
    assert pool_share("worker", told).target_since.endswith(".500Z")


def mcn(updated: str, when: str = "2026-11-24T10:00:00Z") -> dict[str, Any]:
    return {
        "metadata": {"name": "worker-0"},
        "spec": {"configVersion": {"desired": "rendered-2"}},
        "status": {
            "configVersion": {"current": "rendered-1", "desired": "rendered-2"},
            "conditions": [
                {"type": "Updated", "status": updated, "reason": "Updated", "message": "",
                 "lastTransitionTime": when},
                {"type": "UpdatePrepared", "status": "Unknown", "reason": "UpdatePrepared",
                 "message": "checking the new configuration", "lastTransitionTime": when},
            ],
        },
    }  # fmt: skip


def test_a_machineconfignode_is_read_with_its_node_whichever_comes_first() -> None:
    index = NodeIndex(lambda name: [])
    assert index.observe_machine_config_node("worker-0", mcn("False")) == set()  # no Node yet
    index.observe("worker-0", node())
    [signals] = index.all()
    assert signals.mcn is not None and signals.mcn.desired == "rendered-2"
    reading = adapter_for(signals).read(signals, UpdateCursor(), DrainStatus())
    assert (reading.step, reading.message) == (
        S.PREPARING,
        "UpdatePrepared=Unknown: checking the new configuration",
    )
    # only a condition's time moved: nothing a book reads, nothing to reconcile
    later = mcn("False", when="2026-11-24T10:05:00Z")
    assert index.observe_machine_config_node("worker-0", later) == set()
    assert index.observe_machine_config_node("worker-0", mcn("True")) == {"node:worker-0"}
    assert index.observe_machine_config_node("worker-0", None) == {"node:worker-0"}
    [signals] = index.all()
    assert signals.mcn is None and adapter_for(signals).name == "kubelet"


def test_a_machineconfignode_the_daemon_has_not_reported_on_says_nothing_yet() -> None:
    """The operator creates the object, then the daemon writes its status: in between it
    holds only a target, and the Node is read as before (no update pending invented)."""
    index = NodeIndex(lambda name: [])
    index.observe("worker-0", node())
    created = {k: v for k, v in mcn("True").items() if k != "status"}
    assert index.observe_machine_config_node("worker-0", created) == {"node:worker-0"}
    [signals] = index.all()
    assert signals.mcn is not None and not signals.mcn.reported
    assert adapter_for(signals).name == "kubelet"
    index.observe_machine_config_node("worker-0", mcn("False"))
    [signals] = index.all()
    assert adapter_for(signals).name == "mcn"


def test_the_two_accounts_of_an_update_are_compared() -> None:
    from state_controller.updates.agreement import disagreement
    from state_controller.updates.signals import (
        MCO_CURRENT_CONFIG as MCO_CURRENT,
    )
    from state_controller.updates.signals import (
        MCO_DESIRED_CONFIG as MCO_DESIRED,
    )
    from state_controller.updates.signals import (
        MCO_STATE,
        machine_config_node_signals,
    )

    def both(annotations: dict[str, str], updated: str, degraded: str = "False") -> Any:
        shown = mcn(updated)
        shown["status"]["conditions"] = [
            {"type": "Updated", "status": updated, "reason": "", "message": ""},
            {"type": "NodeDegraded", "status": degraded, "reason": "", "message": "disk full"},
        ]
        shown["status"]["configVersion"]["current"] = "rendered-2"
        return replace(node_signals(node(annotations)), mcn=machine_config_node_signals(shown))

    done = {MCO_STATE: "Done", MCO_CURRENT: "rendered-2", MCO_DESIRED: "rendered-2"}
    assert disagreement(both(done, "True")) == ""
    assert disagreement(replace(node_signals(node(done)), mcn=None)) is None  # one account
    assert disagreement(both(done, "False")) == (
        "the Node's annotations say state Done at rendered-2; its MachineConfigNode says "
        "Updated=False with current configuration rendered-2"
    )
    degraded = {**done, MCO_STATE: "Degraded"}
    assert disagreement(both(degraded, "False")) == (
        "the Node's annotations say state Degraded; its MachineConfigNode says NodeDegraded=False"
    )
    assert disagreement(both(done, "True", degraded="True")).startswith(
        "its MachineConfigNode says NodeDegraded=True (disk full); the Node's annotations say"
    )


# -- MachineConfigNode v1 as the Machine Config Operator writes it (testbed/mco.py) ----------


def played(pool: str = "worker") -> Any:
    from state_controller.cluster.embedded import EmbeddedCluster
    from testbed.mco import PlayedMCO

    return PlayedMCO(EmbeddedCluster(), "worker-0", pool, OLD)


def walked(mco: Any, writes: tuple[str, ...], book: Book, at_new: str = "resumed") -> list[Any]:
    """Each write of ``writes`` made, read and recorded: the (step, message) after each."""
    from state_controller.updates.signals import machine_config_node_signals

    shown = []
    for n, name in enumerate(writes):
        mco.step(name)
        if name == at_new:  # the daemon writes currentConfig right after (daemon.go)
            mco.current = mco.desired
        signals = replace(node_signals(node()), mcn=machine_config_node_signals(mco.obj))
        progress(book, signals, DrainStatus(known=True, pods_left=2), 100.0 + n)
        shown.append((book.update.step, book.update.message))
    return shown


def test_an_update_read_in_the_order_the_operators_e2e_test_expects() -> None:
    """The writes of test/extended/machineconfignode.go's ValidateTransitionThroughConditions
    (MCO 1c5e40f25), each a parent and its child in one write as upgrade_monitor.go makes
    them: the step of each, done only at Updated=True, and one chapter for the update
    though the uncordon failed once (Uncordoned=Unknown) after the node was back."""
    from testbed.mco import REBOOTING_UPDATE

    book = Book("hoststate-system/worker-0", now=0, node_only=True)
    mco = played()
    walked(mco, (), book)
    mco.target(NEW)
    writes = (*REBOOTING_UPDATE[:-2], "uncordon failing", *REBOOTING_UPDATE[-2:])
    shown = walked(mco, writes, book)
    assert [step for step, _ in shown] == [
        S.PENDING, S.PREPARING, S.CORDONING, S.DRAINING, S.DRAINING, S.APPLYING, S.APPLYING,
        S.REBOOTING, S.RESUMING, S.RESUMING, S.RESUMING, S.RESUMING, S.UPDATED,
    ]  # fmt: skip
    messages = dict(zip(writes, (m for _, m in shown), strict=True))
    assert messages["cordoned"] == (
        "Cordoned=True: Cordoned node. The node is reporting Unschedulable = true"
    )
    assert messages["draining"] == (
        "draining: 2 pods left; the Machine Config Operator says: Draining node. The drain "
        f"will not be complete until desired drainer drain-{NEW} matches current drainer "
        f"uncordon-{NEW}"
    )
    assert messages["rebooted"] == "RebootedNode=True: Node has rebooted"
    assert messages["uncordon failing"].startswith("Uncordoned=Unknown: Error: Failed to UnCordon")
    updates = [c for c in book.chapters if c.name == "update"]
    assert [(c.outcome, c.transitions) for c in updates] == [("completed", 8)]
    # at Updated=True the operator reset every other condition to False
    assert [t for t, (s, _, _) in mco.conditions.items() if s != "False"] == ["Updated"]
    assert mco.conditions["Drained"][2].startswith(f"Action during update to {NEW}: Drained")


def test_a_rebootless_update_is_never_shown_rebooting() -> None:
    """No drain (update.go: "Node Drain Not required"), UpdatePostActionComplete=True with
    reason None and no RebootedNode: applying, then resuming."""
    from testbed.mco import REBOOTLESS_UPDATE

    book = Book("hoststate-system/worker-0", now=0, node_only=True)
    mco = played()
    walked(mco, (), book)
    mco.target(NEW)
    shown = walked(mco, REBOOTLESS_UPDATE, book)
    assert [step for step, _ in shown] == [
        S.PENDING, S.PREPARING, S.APPLYING, S.APPLYING, S.APPLYING, S.RESUMING, S.RESUMING,
        S.RESUMING, S.UPDATED,
    ]  # fmt: skip
    assert shown[2][1] == "UpdateExecuted=Unknown: Node Drain Not required for this update."
    assert shown[5][1] == "UpdatePostActionComplete=True: Changes do not require a reboot"
    assert S.REBOOTING not in {t.to_state for t in book.history}


def test_image_mode_and_pinned_image_set_conditions_are_read() -> None:
    """ImagePulledFromRegistry (a parent of its own, update.go) and AppliedOSImage are
    applying; PinnedImageSetsDegraded=True is a degraded node with the failing set's
    error; PinnedImageSetsProgressing=True on a node at rest (which turns Updated False,
    upgrade_monitor.go) is no update."""
    from state_controller.updates.signals import machine_config_node_signals

    mco = played()
    mco.target(NEW)

    def read() -> Any:
        signals = replace(node_signals(node()), mcn=machine_config_node_signals(mco.obj))
        return adapter_for(signals).read(signals, UpdateCursor(), DrainStatus())

    for name in ("needs update", "prepared", "cordoned", "draining", "drained", "applying"):
        mco.step(name)
    mco.step("pulling image")
    assert (read().step, read().message) == (
        S.APPLYING,
        f"ImagePulledFromRegistry=Unknown: Pulling OS image {NEW} from registry",
    )
    mco.write(
        ("UpdateExecuted", "Unknown", "AppliedOSImage", "Updating the OS on disk"),
        ("AppliedOSImage", "Unknown", "UpdateExecutedAppliedOSImage", "Applying the OS"),
    )
    assert read().step == S.APPLYING

    rest = played()
    rest.write(("PinnedImageSetsProgressing", "True", "ImagePrefetch",
                "node is prefetching images: worker-0"))  # fmt: skip
    assert rest.conditions["Updated"][0] == "False"
    signals = replace(node_signals(node()), mcn=machine_config_node_signals(rest.obj))
    reading = adapter_for(signals).read(signals, UpdateCursor(), DrainStatus())
    assert (reading.step, reading.message) == (
        S.UPDATED,
        "PinnedImageSetsProgressing: node is prefetching images: worker-0",
    )
    failed = copy.deepcopy(dict(rest.obj))
    failed["status"]["conditions"].append(
        {"type": "PinnedImageSetsDegraded", "status": "True", "reason": "PrefetchFailed",
         "message": "One or more PinnedImageSet is experiencing an error. See PinnedImageSet "
         "list for more details.", "lastTransitionTime": "2026-11-24T10:00:00Z"}
    )  # fmt: skip
    failed["status"]["pinnedImageSets"] = [
        {"name": "ocp-release", "desiredGeneration": 2, "currentGeneration": 1,
         "lastFailedGeneration": 2, "lastFailedGenerationError": "no space left on device"},
        {"name": "extras", "desiredGeneration": 1, "currentGeneration": 1},
    ]  # fmt: skip
    signals = replace(node_signals(node()), mcn=machine_config_node_signals(failed))
    reading = adapter_for(signals).read(signals, UpdateCursor(), DrainStatus())
    assert (reading.step, reading.message) == (
        S.DEGRADED,
        "PinnedImageSetsDegraded: One or more PinnedImageSet is experiencing an error. See "
        "PinnedImageSet list for more details. (ocp-release: no space left on device)",
    )


def test_the_pool_is_the_one_the_machineconfignode_names() -> None:
    """spec.pool.name, the operator's choice (a pool may select Nodes by any label), over
    the role labels; its placeholder not-yet-set is no pool. A change moves the Node's
    count and queues the pool it left."""
    index = NodeIndex(lambda name: [])
    index.observe("worker-0", node())
    [signals] = index.all()
    assert signals.pool == "worker"
    named = mcn("True")
    named["spec"]["pool"] = {"name": "gpu"}
    assert index.observe_machine_config_node("worker-0", named) == {"node:worker-0", "pool:worker"}
    [signals] = index.all()
    assert signals.pool == "gpu" and signals.role_pool == "worker"
    assert index.pool_counts("gpu")[0] == 1 and index.pool_counts("worker")[0] == 0
    named["spec"]["pool"] = {"name": "not-yet-set"}
    index.observe_machine_config_node("worker-0", named)
    assert index.all()[0].pool == "worker"


def test_in_image_mode_a_new_image_is_an_update_pending() -> None:
    """spec.configImage.desiredImage against status.configImage.currentImage (openshift/api
    types_machineconfignode.go, with the ImageModeStatusReporting gate): the same
    rendered configuration on another image is still an update to come."""
    from state_controller.updates.signals import machine_config_node_signals

    image = "quay.example/ocp/os@sha256:" + "a" * 64
    shown = mcn("True")
    shown["spec"]["configVersion"]["desired"] = shown["status"]["configVersion"]["current"]
    shown["status"]["conditions"] = [
        {"type": "Updated", "status": "True", "reason": "Updated", "message": ""}
    ]
    shown["status"]["configImage"] = {"currentImage": image}

    def step(desired_image: str) -> S:
        shown["spec"]["configImage"] = {"desiredImage": desired_image}
        signals = replace(node_signals(node()), mcn=machine_config_node_signals(shown))
        return adapter_for(signals).read(signals, UpdateCursor(), DrainStatus()).step

    assert step(image) == S.UPDATED
    assert step(image.replace("a" * 64, "b" * 64)) == S.PENDING
    # no image desired while one runs: image mode being turned off (upgrade_monitor.go)
    assert step("") == S.PENDING
