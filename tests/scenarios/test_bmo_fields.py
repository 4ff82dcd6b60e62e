"""baremetal-operator's fields with its meanings on a Host: consumerRef, customDeploy,
inspectionMode, architecture, disablePowerOff, reboot annotations with a mode (once, and
the keyed hold-off), and the detached annotation's deleteAction."""

from __future__ import annotations

import json
from typing import Any

import pytest

from state_controller.api import annotations as ann
from state_controller.cluster.interface import HOSTS, HOSTSTATES, SECRETS, Cluster, NotFound
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.scenarios import events_for, state_of
from tests.conftest import wait_for

NS = "fleet"
NAME = "host-0000"
ADDRESS = host_manifest(NS, 0)["spec"]["bmc"]["address"]
METAL3_MACHINE = {
    "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
    "kind": "Metal3Machine",
    "name": "worker-abc",
    "namespace": NS,
}


def _create(cluster: Cluster, **spec: Any) -> None:
    host = host_manifest(NS, 0)
    host["spec"].update(spec)
    cluster.create(SECRETS, secret_manifest(NS, f"{NAME}-bmc", "admin", "pw"))
    cluster.create(HOSTS, host)


def _annotations(cluster: Cluster) -> dict[str, str]:
    found: dict[str, str] = cluster.get(HOSTS, NS, NAME)["metadata"].get("annotations") or {}
    return found


def _annotate(cluster: Cluster, **values: str | None) -> None:
    cluster.patch(HOSTS, NS, NAME, {"metadata": {"annotations": values}})


def _gone(cluster: Cluster) -> bool:
    try:
        cluster.get(HOSTS, NS, NAME)
    except NotFound:
        return True
    return False


def _history(cluster: Cluster) -> list[str]:
    status = cluster.get(HOSTSTATES, NS, NAME).get("status") or {}
    return [entry["reason"] for entry in status.get("history") or []]


def _powered(cluster: Cluster) -> bool:
    return bool((cluster.get(HOSTS, NS, NAME).get("status") or {}).get("poweredOn"))


def test_a_custom_deploy_provisions_without_an_image_and_the_consumer_is_shown(
    cluster: Cluster, run_controller: Any
) -> None:
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim):
        _create(
            cluster,
            image=None,
            customDeploy={"method": "install_coreos"},
            consumerRef=METAL3_MACHINE,
            inspectionMode="disabled",
            architecture="aarch64",
        )
        wait_for(lambda: state_of(cluster, NAME) == "provisioned", what="provisioned")
        machine = sim.machine(ADDRESS)
        assert machine.custom_deploy == "install_coreos" and machine.disk_image is None
        assert machine.registered_with == {"architecture": "aarch64"}
        assert machine.started["inspect"] == 0  # inspectionMode: disabled
        status = cluster.get(HOSTS, NS, NAME)["status"]
        assert status["provisioning"]["customDeploy"] == {"method": "install_coreos"}
        assert "image" not in status["provisioning"]
        history = _history(cluster)
        assert "InspectionDisabled" in history and "CustomDeployRequested" in history
        wait_for(
            lambda: (
                (cluster.get(HOSTSTATES, NS, NAME).get("status") or {}).get("consumer")
                == "Metal3Machine fleet/worker-abc"
            ),
            what="the consumer on the HostState",
        )
        cluster.patch(HOSTS, NS, NAME, {"spec": {"customDeploy": None}})
        wait_for(lambda: state_of(cluster, NAME) == "available", what="deprovisioned")
        assert machine.custom_deploy is None


def test_reboot_annotations_take_a_mode_and_a_keyed_one_holds_the_host_off(
    cluster: Cluster, run_controller: Any
) -> None:
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim):
        _create(cluster)
        wait_for(lambda: state_of(cluster, NAME) == "provisioned", what="provisioned")
        machine = sim.machine(ADDRESS)
        _annotate(cluster, **{"reboot.metal3.io": json.dumps({"mode": "hard"})})
        wait_for(lambda: "reboot.metal3.io" not in _annotations(cluster), what="removed")
        _annotate(cluster, **{ann.REBOOT: json.dumps({"mode": "soft"})})
        wait_for(lambda: ann.REBOOT not in _annotations(cluster), what="ours removed")
        assert machine.reboots == ["hard", "soft"]
        _annotate(cluster, **{"reboot.metal3.io/remediation": ""})
        wait_for(lambda: not _powered(cluster), what="held off")
        assert not machine.powered_on and "reboot.metal3.io/remediation" in _annotations(cluster)
        _annotate(cluster, **{"reboot.metal3.io/remediation": None})
        wait_for(lambda: _powered(cluster), what="on again once the hold-off is gone")
        assert machine.powered_on and machine.reboots == ["hard", "soft"]
        _annotate(cluster, **{"reboot.metal3.io": "{bad"})
        wait_for(
            lambda: any(
                e["reason"] == "InvalidAnnotation" and "reboot.metal3.io" in e["message"]
                for e in events_for(cluster, NAME)
            ),
            what="the InvalidAnnotation Event naming the annotation",
        )
        wait_for(lambda: "reboot.metal3.io" not in _annotations(cluster), what="read as soft")
        assert machine.reboots[-1] == "soft"


def test_a_host_that_may_not_power_off_is_rebooted_instead(
    cluster: Cluster, run_controller: Any
) -> None:
    with pytest.raises(Exception, match=r"spec\.disablePowerOff"):
        _create(cluster, online=False, disablePowerOff=True)
    cluster.delete(SECRETS, NS, f"{NAME}-bmc")
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim):
        _create(cluster, disablePowerOff=True)
        wait_for(lambda: state_of(cluster, NAME) == "provisioned", what="provisioned")
        machine = sim.machine(ADDRESS)
        assert machine.registered_with == {"disablePowerOff": True}
        _annotate(cluster, **{"reboot.metal3.io/remediation": ""})
        wait_for(lambda: machine.reboots == ["soft"], what="a reboot in place of power-off")
        assert _powered(cluster) and machine.powered_on
        cluster.delete(HOSTS, NS, NAME)
        wait_for(lambda: _gone(cluster), what="deleted")
        assert machine.started["power"] == 1  # the reboot: no power-off, not even to delete


def test_a_detached_host_deleted_with_delete_action_delay_waits_for_reattachment(
    cluster: Cluster, run_controller: Any
) -> None:
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim):
        _create(cluster)
        wait_for(lambda: state_of(cluster, NAME) == "provisioned", what="provisioned")
        _annotate(cluster, **{ann.DETACHED: json.dumps({"deleteAction": "delay"})})
        wait_for(lambda: "Detached" in _history(cluster), what="detached")
        cluster.delete(HOSTS, NS, NAME)
        wait_for(
            lambda: any(e["reason"] == "DeletionDelayed" for e in events_for(cluster, NAME)),
            what="the DeletionDelayed Event",
        )
        assert not _gone(cluster)
        assert sim.machine(ADDRESS).disk_image is not None  # nothing deprovisioned
        _annotate(cluster, **{ann.DETACHED: None})
        wait_for(lambda: _gone(cluster), what="deleted")
        assert sim.machine(ADDRESS).disk_image is None  # deprovisioned, as any other
