"""paused, detached, status, inspect, reboot and hardware-details, end to end."""

from __future__ import annotations

import json
from typing import Any

from state_controller.api import annotations as ann
from state_controller.cluster.interface import HOSTS, HOSTSTATES, Cluster
from state_controller.cluster.interface import SECRETS as SECRETS_RESOURCE
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.hosts.inputs import status_annotation
from state_controller.simulation.fleet import create_fleet, host_manifest, secret_manifest
from testbed.scenarios import condition, events_for, state_of, writes
from tests.conftest import wait_for, wait_reconciled

NS = "fleet"
ADDRESS0 = "redfish://bmc-0000.demo.example/redfish/v1/Systems/1"


def annotate(cluster: Cluster, name: str, **values: str | None) -> str:
    """The annotations patched; the resourceVersion the patch made."""
    mapped = {getattr(ann, k.upper()): v for k, v in values.items()}
    patched = cluster.patch(HOSTS, NS, name, {"metadata": {"annotations": mapped}})
    return str(patched["metadata"]["resourceVersion"])


def pause_provisioned(cluster: Cluster, controller: Any) -> None:
    """One provisioned Host paused, and the reconcile that read the pause finished: it
    wrote the Host's kept status, the controller's own write, which nothing may reconcile
    again (so it is not waited for by its own resourceVersion)."""
    wait_for(lambda: state_of(cluster, "host-0000") == "provisioned")
    paused = annotate(cluster, "host-0000", paused="")
    wait_for(lambda: controller.reconciled(f"{NS}/host-0000", paused),
             what="a reconcile of the paused Host")  # fmt: skip


def test_paused_host_is_neither_acted_on_nor_written(cluster: Cluster, run_controller: Any) -> None:
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim) as running:
        create_fleet(cluster, NS, 1)
        pause_provisioned(cluster, running.controller)
        assert ann.STATUS in _host_notes(cluster), "the Host's status kept"
        before = writes(cluster)
        cluster.patch(HOSTS, NS, "host-0000", {"spec": {"online": False}})
        # a reconcile read the change and, the host being paused, did nothing with it
        seen = wait_reconciled(running.controller, cluster, NS, "host-0000")
        after = writes(cluster)
        assert after["patch"] - before["patch"] == 1  # only the test's own patch
        assert after["update_status"] == before["update_status"]
        now = cluster.get(HOSTS, NS, "host-0000")["metadata"]["resourceVersion"]
        assert now == seen["metadata"]["resourceVersion"]  # nothing written since
        assert sim.machine(ADDRESS0).powered_on  # nobody touched the machine
        annotate(cluster, "host-0000", paused=None)
        wait_for(lambda: not sim.machine(ADDRESS0).powered_on, what="power-off after unpause")


def test_detach_then_reattach_adopts_without_redeploy(
    cluster: Cluster, run_controller: Any
) -> None:
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim):
        create_fleet(cluster, NS, 1)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned")
        annotate(cluster, "host-0000", detached="")
        wait_for(
            lambda: cluster.get(HOSTS, NS, "host-0000")["status"]["operationalStatus"] == "detached"
        )
        assert sim.machine(ADDRESS0).node_id == ""
        wait_for(lambda: cluster.get(HOSTSTATES, NS, "host-0000")["status"]["phase"] == "Detached")
        annotate(cluster, "host-0000", detached=None)
        wait_for(lambda: cluster.get(HOSTS, NS, "host-0000")["status"]["operationalStatus"] == "OK")
        wait_for(
            lambda: (
                cluster.get(HOSTSTATES, NS, "host-0000")["status"]["history"][-1]["reason"]
                == "Adopted"
            )
        )
        assert sim.machine(ADDRESS0).started["provision"] == 1
        assert sim.machine(ADDRESS0).node_id != ""


def test_status_annotation_restores_status_after_a_move(
    cluster: Cluster, run_controller: Any
) -> None:
    """The pivot case: a Host arrives with empty status and a status annotation."""
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim):
        create_fleet(cluster, NS, 1)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned")
        saved = cluster.get(HOSTS, NS, "host-0000")["status"]
    moved = host_manifest(NS, 1)
    moved["metadata"]["annotations"] = {ann.STATUS: json.dumps(saved)}
    moved["spec"]["bmc"]["address"] = ADDRESS0  # the same machine, now host-0001
    cluster.create(SECRETS_RESOURCE, secret_manifest(NS, "host-0001-bmc", "admin", "pw"))
    cluster.create(HOSTS, moved)
    with run_controller(cluster, sim):
        wait_for(lambda: state_of(cluster, "host-0001") == "provisioned")
        wait_for(
            lambda: (
                ann.STATUS
                not in cluster.get(HOSTS, NS, "host-0001")["metadata"].get("annotations", {})
            )
        )
        assert sim.machine(ADDRESS0).started["provision"] == 1  # not provisioned again
        assert (
            cluster.get(HOSTS, NS, "host-0001")["status"]["provisioning"]["id"]
            == saved["provisioning"]["id"]
        )


def test_a_status_annotation_left_after_the_status_was_restored_is_removed(
    cluster: Cluster, run_controller: Any
) -> None:
    """A controller killed between restoring a moved Host's status and removing the
    annotation: its successor removes the annotation, and the status stays as it is."""
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim) as running:
        create_fleet(cluster, NS, 1)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned")
        wait_for(running.controller.idle)
    saved = cluster.get(HOSTS, NS, "host-0000")["status"]
    history = cluster.get(HOSTSTATES, NS, "host-0000")["status"]["history"]
    cluster.patch(
        HOSTS, NS, "host-0000", {"metadata": {"annotations": {ann.STATUS: json.dumps(saved)}}}
    )
    with run_controller(cluster, sim):
        wait_for(
            lambda: (
                ann.STATUS
                not in (cluster.get(HOSTS, NS, "host-0000")["metadata"].get("annotations") or {})
            ),
            what="the spent annotation removed",
        )
    assert cluster.get(HOSTSTATES, NS, "host-0000")["status"]["history"] == history
    assert state_of(cluster, "host-0000") == "provisioned"


def test_inspect_annotation_reinspects_and_is_removed(
    cluster: Cluster, run_controller: Any
) -> None:
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim):
        create_fleet(cluster, NS, 1)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned")
        cluster.patch(HOSTS, NS, "host-0000", {"spec": {"image": None}})
        wait_for(lambda: state_of(cluster, "host-0000") == "available")
        annotate(cluster, "host-0000", inspect="")
        wait_for(lambda: sim.machine(ADDRESS0).started["inspect"] == 2, what="second inspection")
        wait_for(
            lambda: (
                ann.INSPECT
                not in cluster.get(HOSTS, NS, "host-0000")["metadata"].get("annotations", {})
            )
        )


def test_reboot_annotation_power_cycles_once(cluster: Cluster, run_controller: Any) -> None:
    with run_controller(cluster):
        create_fleet(cluster, NS, 1)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned")
        annotate(cluster, "host-0000", reboot="")
        wait_for(
            lambda: (
                ann.REBOOT
                not in cluster.get(HOSTS, NS, "host-0000")["metadata"].get("annotations", {})
            )
        )
        history = cluster.get(HOSTSTATES, NS, "host-0000")["status"]["history"]
        assert [h["reason"] for h in history].count("Rebooted") == 1


def test_inspection_disabled_with_invalid_hardware_details(
    cluster: Cluster, run_controller: Any
) -> None:
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim):
        host = host_manifest(NS, 0)
        host["metadata"]["annotations"] = {
            ann.INSPECT: "disabled",
            ann.HARDWARE_DETAILS: "{not json",
        }
        cluster.create(SECRETS_RESOURCE, secret_manifest(NS, "host-0000-bmc", "admin", "pw"))
        cluster.create(HOSTS, host)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned")
        wait_for(
            lambda: (
                cluster.get(HOSTSTATES, NS, "host-0000")["status"]["provisioning"]["state"]
                == "provisioned"
            )
        )
        state = cluster.get(HOSTSTATES, NS, "host-0000")
        degraded = condition(state, "Degraded")
        assert degraded["reason"] == "InvalidAnnotation"
        assert (
            ann.HARDWARE_DETAILS in degraded["message"]
            and "fix or remove it" in degraded["message"]
        )
        # the Event is recorded after the statuses are written: wait for it
        wait_for(
            lambda: any(
                e["reason"] == "InvalidAnnotation" for e in events_for(cluster, "host-0000")
            ),
            what="the InvalidAnnotation Event",
        )
        assert sim.machine(ADDRESS0).started["inspect"] == 0
        good = json.dumps({"cpu": {"arch": "x86_64", "count": 8}, "ramMebibytes": 4096})
        annotate(cluster, "host-0000", hardware_details=good)
        wait_for(
            lambda: (
                condition(cluster.get(HOSTSTATES, NS, "host-0000"), "Degraded")["status"] == "False"
            )
        )


def test_a_paused_hosts_hoststate_keeps_its_status_for_a_move(
    cluster: Cluster, run_controller: Any
) -> None:
    """clusterctl move creates the HostState anew, and the API server drops its status: while
    the Host is paused the status is kept in the HostState's annotation, a HostState found
    with it and no status gets the status back, and the annotation goes once unpaused. The
    Host's own status is kept the same way in the Host's annotation, in the form its
    restore reads, without a secret; unpaused here, it goes and nothing is redone."""
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim) as running:
        create_fleet(cluster, NS, 1)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned")
        wait_for(running.controller.idle)
        started = dict(sim.machine(ADDRESS0).started)
        annotate(cluster, "host-0000", paused="")
        wait_for(lambda: ann.STATUS in _notes(cluster), what="the status kept")
        wait_for(lambda: ann.STATUS in _host_notes(cluster), what="the Host's status kept")
        host = cluster.get(HOSTS, NS, "host-0000")
        kept = _host_notes(cluster)[ann.STATUS]
        restored, problem = status_annotation({ann.STATUS: kept})
        assert problem is None and restored is not None
        assert restored["provisioning"]["state"] == "provisioned"
        assert restored["hardware"] == host["status"]["hardware"]
        assert "goodCredentials" not in json.loads(kept)  # what the restore leaves out
        assert "id" not in json.loads(kept)["provisioning"]
        assert "pw-0" not in kept and "admin" not in kept  # no secret in it
        state = cluster.get(HOSTSTATES, NS, "host-0000")
        assert json.loads(_notes(cluster)[ann.STATUS]) == state["status"]
        history = state["status"]["history"]
        assert [h["to"] for h in history][-1] == "provisioned"
        # as clusterctl leaves it in the target: the annotation, and no status
        cluster.update_status(HOSTSTATES, {**state, "status": {}})
        wait_for(
            lambda: cluster.get(HOSTSTATES, NS, "host-0000")["status"].get("history") == history,
            what="the history restored from the annotation while paused",
        )
        annotate(cluster, "host-0000", paused=None)
        wait_for(lambda: ann.STATUS not in _notes(cluster), what="the spent annotation removed")
        wait_for(lambda: ann.STATUS not in _host_notes(cluster), what="the Host's removed")
        wait_for(running.controller.idle)
        after = cluster.get(HOSTSTATES, NS, "host-0000")["status"]["history"]
        assert after[: len(history)] == history
        assert "Pivoted" not in {h["reason"] for h in after[len(history) :]}  # not "moved here"
        assert state_of(cluster, "host-0000") == "provisioned"
        assert dict(sim.machine(ADDRESS0).started) == started  # nothing done again


def _notes(cluster: Cluster, name: str = "host-0000") -> dict[str, str]:
    return cluster.get(HOSTSTATES, NS, name)["metadata"].get("annotations") or {}


def _host_notes(cluster: Cluster, name: str = "host-0000") -> dict[str, str]:
    return cluster.get(HOSTS, NS, name)["metadata"].get("annotations") or {}


def test_a_host_clusterctl_deletes_for_a_move_is_not_deprovisioned(
    cluster: Cluster, run_controller: Any
) -> None:
    """clusterctl v1.14.2 marks each source object delete-for-move with a JSON patch that
    replaces its annotations (the pause goes), deletes it, then removes its finalizers
    (cmd/clusterctl/client/cluster/mover.go, deleteSourceObject): the machine lives on in
    the target, so nothing is done to it here, and the finalizer is released untouched."""
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim) as running:
        create_fleet(cluster, NS, 1)
        pause_provisioned(cluster, running.controller)
        marked = {ann.PAUSED: None, ann.DELETE_FOR_MOVE: ""}
        cluster.patch(HOSTS, NS, "host-0000", {"metadata": {"annotations": marked}})
        seen = wait_reconciled(running.controller, cluster, NS, "host-0000")  # unpaused, marked
        assert (
            cluster.get(HOSTS, NS, "host-0000")["metadata"]["resourceVersion"]
            == (seen["metadata"]["resourceVersion"])
        )  # nothing written
        cluster.delete(HOSTS, NS, "host-0000")
        wait_for(lambda: state_of(cluster, "host-0000") == "<gone>", what="finalizer released")
        machine = sim.machine(ADDRESS0)
        assert machine.node_id != "" and machine.disk_image is not None and machine.powered_on
        # one never reconciled before it was marked gets no finalizer between mark and delete
        fresh = host_manifest(NS, 1)
        fresh["metadata"]["annotations"] = {ann.DELETE_FOR_MOVE: ""}
        cluster.create(SECRETS_RESOURCE, secret_manifest(NS, "host-0001-bmc", "admin", "pw"))
        cluster.create(HOSTS, fresh)
        wait_reconciled(running.controller, cluster, NS, "host-0001")
        assert not cluster.get(HOSTS, NS, "host-0001")["metadata"].get("finalizers")
