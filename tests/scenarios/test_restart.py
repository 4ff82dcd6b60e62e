"""A restarted controller rebuilds every book from the statuses and writes nothing."""

from __future__ import annotations

from typing import Any

from state_controller.cluster.interface import HOSTS, HOSTSTATES, Cluster
from state_controller.demo import create_fleet
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from tests.conftest import wait_for
from tests.scenarios.test_annotations import writes
from tests.scenarios.test_lifecycle import state_of

NS = "fleet"


def test_restart_over_settled_hosts_writes_nothing(cluster: Cluster, run_controller: Any) -> None:
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim) as first:
        create_fleet(cluster, NS, 20)
        wait_for(
            lambda: all(state_of(cluster, f"host-{i:04d}") == "provisioned" for i in range(20))
        )
        wait_for(first.controller.idle)
        histories = {
            o["metadata"]["name"]: o["status"]["history"] for o in cluster.list(HOSTSTATES, NS)[0]
        }
    before = writes(cluster)
    with run_controller(cluster, sim) as second:
        wait_for(lambda: second.controller.reconciles >= 20 and second.controller.idle())
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
    sim = SimulatedProvisioner(timings=Timings(provision=0.6))
    with run_controller(cluster, sim):
        create_fleet(cluster, NS, 3)
        wait_for(
            lambda: all(state_of(cluster, f"host-{i:04d}") == "provisioning" for i in range(3))
        )
    with run_controller(cluster, sim):
        wait_for(lambda: all(state_of(cluster, f"host-{i:04d}") == "provisioned" for i in range(3)))
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
