"""A restarted controller rebuilds every book from the statuses and writes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from state_controller.cluster.interface import HOSTS, HOSTSTATES, Cluster
from state_controller.provisioning.hardware_file import HardwareFile
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from state_controller.simulation.fleet import create_fleet
from testbed.clocks import Clock
from testbed.scenarios import state_of, wait_all_in, writes
from tests.conftest import wait_for, wait_reconciled

NS = "fleet"


def test_restart_over_settled_hosts_writes_nothing(cluster: Cluster, run_controller: Any) -> None:
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim) as first:
        create_fleet(cluster, NS, 20)
        wait_all_in(cluster, NS, "provisioned")
        wait_for(first.controller.idle)
        histories = {
            o["metadata"]["name"]: o["status"]["history"] for o in cluster.list(HOSTSTATES, NS)[0]
        }
    before = writes(cluster)
    with run_controller(cluster, sim) as second:
        for i in range(20):  # each host reconciled as the restarted controller listed it
            wait_reconciled(second.controller, cluster, NS, f"host-{i:04d}")
        assert len(second.controller.books) == 20
        assert writes(cluster) == before
        for obj in cluster.list(HOSTSTATES, NS)[0]:
            assert obj["status"]["history"] == histories[obj["metadata"]["name"]]
        assert second.sample("hoststate_hosts", {"namespace": NS, "state": "provisioned"}) == 20
    assert (
        sim.machine("redfish://bmc-0000.demo.example/redfish/v1/Systems/1").started["provision"]
        == 1
    )


def test_restart_mid_provisioning_continues_the_same_history(
    cluster: Cluster, run_controller: Any
) -> None:
    held = Clock()  # the simulated hardware's time stands still: no deploy ends early
    sim = SimulatedProvisioner(timings=Timings(provision=0.6), clock=held)
    with run_controller(cluster, sim):
        create_fleet(cluster, NS, 3)
        wait_all_in(cluster, NS, "provisioning")
    held.advance(0.6)  # the deploys end while no controller runs
    with run_controller(cluster, sim):
        wait_all_in(cluster, NS, "provisioned")
        for obj in cluster.list(HOSTSTATES, NS)[0]:
            seqs = [h["seq"] for h in obj["status"]["history"]]
            assert seqs == list(range(1, len(seqs) + 1))  # no gap, nothing twice
            assert [h["to"] for h in obj["status"]["history"]][-2:] == [
                "provisioning",
                "provisioned",
            ]
    address = "redfish://bmc-0001.demo.example/redfish/v1/Systems/1"
    assert sim.machine(address).started["provision"] == 1  # polled, never restarted


def test_deleted_hoststate_is_recreated_with_its_history(
    cluster: Cluster, run_controller: Any
) -> None:
    with run_controller(cluster):
        create_fleet(cluster, NS, 1)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned")
        history = cluster.get(HOSTSTATES, NS, "host-0000")["status"]["history"]
        cluster.delete(HOSTSTATES, NS, "host-0000")
        wait_for(lambda: cluster.get(HOSTSTATES, NS, "host-0000")["status"]["history"] == history)
        assert (
            cluster.get(HOSTS, NS, "host-0000")["status"]["provisioning"]["state"] == "provisioned"
        )


def test_simulated_hardware_outlives_the_process(
    cluster: Cluster, run_controller: Any, tmp_path: Path
) -> None:
    """A restart with a new simulated backend over the same hardware file finds the
    machines deployed and powered: nothing is adopted, powered on or deployed again, and
    a deploy that was in progress is polled to its end instead of started again."""
    hardware = tmp_path / "hardware.db"
    first_sim = SimulatedProvisioner(  # its time stands still: no deploy ends while it runs
        timings=Timings(provision=0.8), hardware=HardwareFile(hardware), clock=Clock()
    )
    with run_controller(cluster, first_sim):
        create_fleet(cluster, NS, 4)
        wait_all_in(cluster, NS, "provisioning")
    assert first_sim.hardware is not None
    first_sim.hardware.close()
    second_sim = SimulatedProvisioner(
        timings=Timings(provision=0.8), hardware=HardwareFile(hardware)
    )
    with run_controller(cluster, second_sim) as second:
        wait_all_in(cluster, NS, "provisioned")
        wait_for(second.controller.idle)
    third_sim = SimulatedProvisioner(hardware=HardwareFile(hardware))
    with run_controller(cluster, third_sim) as third:
        for i in range(4):  # each host reconciled as the restarted controller listed it
            wait_reconciled(third.controller, cluster, NS, f"host-{i:04d}")
        for obj in cluster.list(HOSTSTATES, NS)[0]:
            reasons = [h["reason"] for h in obj["status"]["history"]]
            assert reasons.count("ProvisioningComplete") == 1, reasons
            assert "Adopted" not in reasons and "PoweredOn" not in reasons, reasons
    for address, machine in third_sim.machines().items():
        assert machine.started["provision"] == 1, address  # polled across the restart
        assert machine.started["inspect"] == 1, address
        assert machine.node_active and machine.powered_on, address
