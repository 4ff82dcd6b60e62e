"""Servicing end to end, on the embedded store and a real kube-apiserver, with the
simulated provisioner: firmware settings, a firmware image and a RAID volume applied to a
provisioned host as one chapter of its book, step by step; a setting the BMC would refuse
failing the run before anything is sent, and a firmware URL the operator does not let
Hosts reach refused as the spec's problem; a firmware image the BMC refuses failing it,
not tried again until the spec changes; and ``onReboot`` waiting for a reboot asked by
annotation, which it takes the place of."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from state_controller.cluster.interface import HOSTS, HOSTSTATES, NODES, PDBS, PODS, Cluster
from state_controller.provisioning.fault_plan import Fault, FaultPlan
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from state_controller.simulation.fleet import create_fleet, host_manifest
from state_controller.simulation.nodes import SimulatedNode, set_budget
from state_controller.updates.signals import (
    OWN_CURRENT_CONFIG,
    OWN_DESIRED_CONFIG,
    OWN_UPDATE_STATE,
)
from testbed.clocks import HoldableClock
from testbed.scenarios import (
    NS,
    WORKER,
    allow_pods,
    condition,
    events_for,
    hoststate,
    state_of,
    wait_all_in,
)
from tests.conftest import wait_for

HOST = "host-0000"
FIRMWARE_URL = "http://firmware.example/bios-1.1.0.bin"
SERVICING = {
    "firmwareSettings": {"ProcTurboMode": "Disabled", "NumCores": 16},
    "firmwareUpdates": [{"component": "bios", "url": FIRMWARE_URL}],
    "raid": {"hardwareRAIDVolumes": [{"level": "1", "sizeGibibytes": 100}]},
    "servicingPolicy": "rolling",
}


def provisioned(cluster: Cluster) -> None:
    create_fleet(cluster, NS, 1)
    wait_for(lambda: state_of(cluster, HOST) == "provisioned", what="provisioned")


def provisioned_and_held(cluster: Cluster, sim: SimulatedProvisioner, clock: HoldableClock) -> None:
    """The host provisioned and its machine idle, then its clock held: each task ends when
    the test moves the clock, not when a poll is late."""
    provisioned(cluster)
    machine = sim.machine(str(host_manifest(NS, 0)["spec"]["bmc"]["address"]))
    wait_for(lambda: machine.busy is None, what="powered on")
    clock.hold()


def ask(cluster: Cluster, **spec: Any) -> None:
    cluster.patch(HOSTS, NS, HOST, {"spec": spec})


def servicing_of(cluster: Cluster) -> dict[str, Any]:
    return dict((hoststate(cluster, HOST).get("status") or {}).get("servicing") or {})


def step(cluster: Cluster) -> str:
    return str(servicing_of(cluster).get("step", ""))


def firmware_of(sim: SimulatedProvisioner) -> Any:
    return sim.machine(str(host_manifest(NS, 0)["spec"]["bmc"]["address"])).firmware


def last_told(cluster: Cluster) -> str:
    """Where the host's history last went."""
    history = (hoststate(cluster, HOST).get("status") or {}).get("history") or [{}]
    return str(history[-1].get("to", ""))


def records(cluster: Cluster) -> list[dict[str, Any]]:
    history = hoststate(cluster, HOST)["status"]["history"]
    return [h for h in history if h.get("chapter") == "servicing"] or [
        h for h in history if h["reason"].startswith(("Servic", "Service", "Applying"))
    ]


def test_a_servicing_run_is_a_chapter_of_steps_and_what_it_applied_reads_back(
    cluster: Cluster, run_controller: Any
) -> None:
    clock = HoldableClock()
    sim = SimulatedProvisioner(timings=Timings(service=0.3, power=0.2), clock=clock)
    with run_controller(cluster, sim) as running:
        provisioned_and_held(cluster, sim, clock)
        ask(cluster, **SERVICING)
        for shown, seconds in [
            ("applying settings", 0.3),
            ("updating firmware", 0.3),
            ("configuring RAID", 0.3),
            ("service rebooting", 0.2),
        ]:
            wait_for(lambda: last_told(cluster) == shown, timeout=30, what=shown)  # noqa: B023
            clock.advance(seconds)
        clock.release()
        wait_for(lambda: servicing_of(cluster).get("done") == 3 and step(cluster) == "serviced",
                 timeout=30, what="serviced")  # fmt: skip
        wait_for(running.controller.idle)
        state = hoststate(cluster, HOST)
        history = state["status"]["history"]
        started = next(i for i, h in enumerate(history) if h["reason"] == "ServicingStarted")
        run = history[started:]
        assert [(h["from"], h["to"]) for h in run] == [
            ("provisioned", "applying settings"),
            ("applying settings", "updating firmware"),
            ("updating firmware", "configuring RAID"),
            ("configuring RAID", "service rebooting"),
            ("service rebooting", "verifying service"),
            ("verifying service", "provisioned"),
        ]
        assert all(a["to"] == b["from"] for a, b in itertools.pairwise(history))
        assert run[0]["message"] == (
            "servicing: applying 2 settings, updating firmware bios (1 of 1), "
            "configuring RAID: 1 volume"
        )
        assert run[-1]["reason"] == "ServicingComplete"
        assert run[-1]["message"].endswith(": bios 1.0.0 -> 1.1.0")
        chapter = state["status"]["chapters"][-1]
        assert (chapter["name"], chapter["outcome"]) == ("servicing", "completed")
        shown = state["status"]["firmware"]
        assert {"component": "bios", "version": "1.1.0"} in shown["components"]
        turbo = next(s for s in shown["settings"] if s["name"] == "ProcTurboMode")
        assert turbo["value"] == "Disabled" and turbo["allowableValues"] == ["Enabled", "Disabled"]
        assert condition(state, "Ready")["status"] == "True"
        host = cluster.get(HOSTS, NS, HOST)["status"]
        assert host["operationalStatus"] == "OK"
        assert len(host["provisioning"]["servicedDigest"]) == 64
        machine = firmware_of(sim)
        assert (
            machine.settings["ProcTurboMode"] == "Disabled" and machine.settings["NumCores"] == 16
        )
        assert machine.versions["bios"] == "1.1.0" and len(machine.volumes) == 1
        told = [e["reason"] for e in events_for(cluster, HOST)]
        wait_for(lambda: "ServicingComplete" in [e["reason"] for e in events_for(cluster, HOST)])
        told = [e["reason"] for e in events_for(cluster, HOST)]
        assert "ServicingStarted" in told and "UpdatingFirmware" not in told

    with run_controller(cluster, sim) as running:  # a restart applies nothing again
        wait_for(running.controller.idle)
        assert firmware_of(sim).runs == 1


def test_steps_begun_and_ended_between_two_polls_are_recorded_in_order_at_their_own_times(
    cluster: Cluster, run_controller: Any
) -> None:
    """The machine goes through every task and its restart while the controller looks
    away; the next answer names the steps it passed, and each one joins the history."""
    clock = HoldableClock()
    sim = SimulatedProvisioner(timings=Timings(service=0.3, power=0.2), clock=clock)
    with run_controller(cluster, sim) as running:
        provisioned_and_held(cluster, sim, clock)
        ask(cluster, **SERVICING)
        wait_for(lambda: last_told(cluster) == "applying settings", timeout=30, what="started")
        clock.advance(0.3 * 3 + 0.2)  # all three tasks and the restart, before any poll
        clock.release()
        wait_for(lambda: step(cluster) == "serviced", timeout=30, what="serviced")
        wait_for(running.controller.idle)
        history = hoststate(cluster, HOST)["status"]["history"]
        started = next(i for i, h in enumerate(history) if h["reason"] == "ServicingStarted")
        run = history[started:]
        assert [h["to"] for h in run] == [
            "applying settings",
            "updating firmware",
            "configuring RAID",
            "service rebooting",
            "verifying service",
            "provisioned",
        ]
        assert [h["reason"] for h in run[1:4]] == [
            "UpdatingFirmware", "ConfiguringRAID", "ServiceRebooting"
        ]  # fmt: skip
        times = [h["at"] for h in run]
        assert times == sorted(times)  # RFC 3339 in UTC with milliseconds: ordered as text


def test_a_setting_the_bmc_would_refuse_or_a_firmware_url_out_of_reach_is_never_sent(
    cluster: Cluster, run_controller: Any
) -> None:
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim) as running:
        provisioned(cluster)
        ask(cluster, firmwareSettings={"NumCores": 128}, servicingPolicy="rolling")
        wait_for(lambda: step(cluster) == "service failed", what="refused")
        message = "spec.firmwareSettings.NumCores: 128 is above the BMC's upper bound 64"
        assert servicing_of(cluster)["message"] == message
        host = cluster.get(HOSTS, NS, HOST)["status"]
        assert (host["operationalStatus"], host["errorType"]) == ("error", "servicing error")
        assert host["errorMessage"] == message
        assert firmware_of(sim).runs == 0
        ask(cluster, firmwareSettings={"NumCores": 16})  # the fix
        wait_for(lambda: step(cluster) == "serviced", what="serviced")
        wait_for(running.controller.idle)
        assert firmware_of(sim).settings["NumCores"] == 16
        assert cluster.get(HOSTS, NS, HOST)["status"]["operationalStatus"] == "OK"

        # a firmware URL naming the metadata service is refused before anything is sent
        runs = firmware_of(sim).runs
        metadata = [{"component": "bmc", "url": "http://169.254.169.254/latest/meta-data/"}]
        ask(cluster, firmwareUpdates=metadata)
        refused = wait_for(
            lambda: (
                (s := cluster.get(HOSTS, NS, HOST)["status"])
                .get("errorMessage", "")
                .startswith("spec.firmwareUpdates[0].url: 169.254.169.254 is a link-local address")
                and s
            ),
            what="the firmware URL refused",
        )
        assert "--allow-image-host" in refused["errorMessage"], refused
        wait_for(running.controller.idle)
        assert firmware_of(sim).runs == runs and firmware_of(sim).versions["bmc"] == "1.00"


def test_a_refused_firmware_image_is_not_flashed_again_until_the_spec_changes(
    cluster: Cluster, run_controller: Any
) -> None:
    sim = SimulatedProvisioner(faults=FaultPlan({f"{NS}/{HOST}": [Fault("firmware", times=1)]}))
    with run_controller(cluster, sim) as running:
        provisioned(cluster)
        updates = [{"component": "bios", "url": FIRMWARE_URL}]
        ask(cluster, firmwareUpdates=updates, servicingPolicy="rolling")
        wait_for(lambda: step(cluster) == "service failed", what="failed")
        wait_for(running.controller.idle)
        shown = servicing_of(cluster)
        assert shown["failedStep"] == "updating firmware"
        assert shown["message"].startswith("the BMC refused the firmware image")
        assert firmware_of(sim).runs == 1 and firmware_of(sim).versions["bios"] == "1.0.0"
        wait_for(lambda: "ServicingFailed" in [e["reason"] for e in events_for(cluster, HOST)])
        ready = condition(hoststate(cluster, HOST), "Ready")
        assert (ready["status"], ready["reason"]) == ("False", "ServicingFailed")

        fixed = [{"component": "bios", "url": FIRMWARE_URL.replace("1.1.0", "1.1.1")}]
        ask(cluster, firmwareUpdates=fixed)
        wait_for(lambda: step(cluster) == "serviced", what="serviced")
        assert firmware_of(sim).runs == 2 and firmware_of(sim).versions["bios"] == "1.1.0"


def test_on_reboot_servicing_waits_for_a_reboot_and_takes_its_place(
    cluster: Cluster, run_controller: Any
) -> None:
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim) as running:
        provisioned(cluster)
        ask(cluster, firmwareSettings={"ProcTurboMode": "Disabled"}, servicingPolicy="onReboot")
        wait_for(lambda: step(cluster) == "service pending", what="pending")
        wait_for(running.controller.idle)
        assert servicing_of(cluster)["message"] == (
            "waits for a reboot asked by annotation (spec.servicingPolicy onReboot)"
        )
        assert firmware_of(sim).runs == 0
        cluster.patch(HOSTS, NS, HOST, {"metadata": {"annotations": {"reboot.metal3.io": ""}}})
        wait_for(lambda: step(cluster) == "serviced", what="serviced")
        wait_for(
            lambda: (
                "reboot.metal3.io"
                not in (cluster.get(HOSTS, NS, HOST)["metadata"].get("annotations") or {})
            ),
            what="the reboot annotation taken",
        )
        machine = sim.machine(str(host_manifest(NS, 0)["spec"]["bmc"]["address"]))
        assert machine.firmware.runs == 1 and machine.reboots == []  # serviced, not rebooted


def test_rolling_runs_one_host_of_a_pool_at_a_time(cluster: Cluster, run_controller: Any) -> None:
    sim = SimulatedProvisioner(timings=Timings(service=0.3, power=0.1))
    with run_controller(cluster, sim) as running:
        create_fleet(cluster, NS, 3)
        wait_all_in(cluster, NS, "provisioned")
        for index in range(3):  # no Node: all three are in the pool ""
            cluster.patch(HOSTS, NS, f"host-{index:04d}", {"spec": SERVICING})
        wait_for(
            lambda: all(steps_of(cluster, i) == "serviced" for i in range(3)),
            timeout=30,
            what="all three serviced",
        )
        wait_for(running.controller.idle)
        runs = sorted(
            (run.started, run.ended_at)
            for run in (sim.machine(address(i)).firmware.run for i in range(3))
            if run is not None
        )
        assert len(runs) == 3
        for (_, ended), (started, _) in itertools.pairwise(runs):
            assert ended is not None and started > ended  # one at a time
        waited = [
            h["message"]
            for i in range(3)
            for h in cluster.get(HOSTSTATES, NS, f"host-{i:04d}")["status"]["history"]
            if h["reason"] == "ServicePending"
        ]
        assert waited and set(waited) == {
            "waits for a free servicing slot in its pool (--servicing-max-unavailable)"
        }


def address(index: int) -> str:
    return str(host_manifest(NS, index)["spec"]["bmc"]["address"])


def steps_of(cluster: Cluster, index: int) -> str:
    status = cluster.get(HOSTSTATES, NS, f"host-{index:04d}").get("status") or {}
    return str((status.get("servicing") or {}).get("step", ""))


def test_a_serviced_hosts_node_is_drained_first_and_uncordoned_after(
    cluster: Cluster, run_controller: Any
) -> None:
    allow_pods(cluster)
    sim = SimulatedProvisioner(timings=Timings(service=0.2, power=0.1))
    with run_controller(cluster, sim) as running:
        provisioned(cluster)
        node = SimulatedNode(
            cluster, "worker-0", labels=WORKER, provider_id=f"metal3://{NS}/{HOST}/m-0"
        )
        node.register()
        node.annotate({OWN_DESIRED_CONFIG: "a", OWN_CURRENT_CONFIG: "a", OWN_UPDATE_STATE: "Done"})
        wait_for(lambda: hoststate(cluster, HOST)["spec"].get("node") == "worker-0", what="linked")
        node.run_pod(NS, "web-0", {"app": "web"})
        running_and_ready(cluster, node.run_pod(NS, "db-0", {"app": "db"}))
        set_budget(cluster, NS, "db", {"app": "db"}, allowed=0)
        ask(cluster, firmwareUpdates=[{"component": "bios", "url": FIRMWARE_URL}],
            servicingPolicy="rolling")  # fmt: skip
        blocked = "draining: 1 pod left, eviction blocked by PodDisruptionBudget fleet/db"
        wait_for(
            lambda: (
                step(cluster) == "service draining"
                and servicing_of(cluster)["message"].startswith(blocked)
            ),
            what="held by the budget",
        )
        assert cluster.get(NODES, None, "worker-0")["spec"]["unschedulable"] is True
        assert [p["metadata"]["name"] for p in pods_on(cluster)] == ["db-0"]  # web-0 evicted
        assert firmware_of(sim).runs == 0  # nothing is flashed under running pods

        cluster.delete(PDBS, NS, "db")  # the application's owner lets it go
        wait_for(lambda: step(cluster) == "serviced", timeout=30, what="serviced")
        wait_for(
            lambda: not cluster.get(NODES, None, "worker-0")["spec"].get("unschedulable"),
            what="uncordoned",
        )
        wait_for(running.controller.idle)
        assert pods_on(cluster) == [] and firmware_of(sim).runs == 1
        annotations = cluster.get(NODES, None, "worker-0")["metadata"].get("annotations") or {}
        assert "hoststate.io/cordoned-for" not in annotations
        history = hoststate(cluster, HOST)["status"]["history"]
        run = history[next(i for i, h in enumerate(history) if h["reason"] == "ServicingStarted") :]
        assert [(h["from"], h["to"]) for h in run][:2] == [
            ("provisioned", "service draining"),
            ("service draining", "updating firmware"),
        ]
        assert "update" not in [c["name"] for c in hoststate(cluster, HOST)["status"]["chapters"]]


def running_and_ready(cluster: Cluster, pod: dict[str, Any]) -> None:
    """The pod's status as its kubelet would write it: the API server evicts a pod that is
    not running whatever its budget says, so only a running pod can be held by one."""
    pod["status"] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    cluster.update_status(PODS, pod)


def pods_on(cluster: Cluster) -> list[dict[str, Any]]:
    return [p for p in cluster.list(PODS, NS)[0] if p["spec"].get("nodeName") == "worker-0"]


def test_software_raid_is_built_by_a_run_and_a_volume_set_linux_md_cannot_build_is_refused(
    cluster: Cluster, run_controller: Any
) -> None:
    """Two Linux md volumes, the first a mirror, built by one run and read back; a spec
    mixing both kinds, one whose first volume is no mirror, or one naming a single disk
    is refused by the API, the message naming the field and the fix."""
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim):
        provisioned(cluster)
        refused = {
            r"give hardwareRAIDVolumes or softwareRAIDVolumes, not both": {
                "hardwareRAIDVolumes": [{"level": "1"}],
                "softwareRAIDVolumes": [{"level": "1"}],
            },
            r"softwareRAIDVolumes: the first volume holds the OS and must be a mirror": {
                "softwareRAIDVolumes": [{"level": "0"}]
            },
            r"physicalDisks needs at least two disks": {
                "softwareRAIDVolumes": [{"level": "1", "physicalDisks": [{"deviceName": "/a"}]}]
            },
        }
        for message, raid in refused.items():
            with pytest.raises(Exception, match=message):
                ask(cluster, raid=raid, servicingPolicy="rolling")
        mirror = {
            "level": "1",
            "sizeGibibytes": 50,
            "physicalDisks": [{"deviceName": "/dev/sda"}, {"deviceName": "/dev/sdb"}],
        }
        ask(
            cluster,
            raid={"softwareRAIDVolumes": [mirror, {"level": "0"}]},
            servicingPolicy="rolling",
        )
        wait_for(lambda: step(cluster) == "serviced", what="serviced")
        volumes = firmware_of(sim).volumes
        assert [(v["level"], v["controller"]) for v in volumes] == [
            ("1", "software"),
            ("0", "software"),
        ]
        assert volumes[0]["physicalDisks"] == mirror["physicalDisks"]
        said = [r["message"] for r in records(cluster)]
        assert any(m.endswith("configuring RAID: 2 software volumes") for m in said), said
