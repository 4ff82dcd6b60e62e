"""``--servicing-max-unavailable`` holds for the whole fleet when it is sharded: three
replicas, each owning some Hosts of one pool, run their rolling servicing one host at a
time between them (the slots are claimed on one Lease every replica writes), and the
ledger is empty once every run is over. On the embedded store and a real kube-apiserver."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from state_controller.cluster.interface import HOSTS, LEASES, Cluster
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from state_controller.runtime.controller import HostController
from state_controller.sharding.leases import SHARD_LABEL
from state_controller.sharding.service_claims import LEDGER_LEASE, read_claims
from state_controller.simulation.fleet import create_fleet, host_manifest
from testbed.scenarios import NS, wait_all_in
from tests.conftest import wait_for
from tests.scenarios.test_servicing import SERVICING, steps_of
from tests.scenarios.test_sharded_provisioning import running_replicas

SHARDS = ("a", "b", "c")
FLEET = 6


@pytest.fixture
def machines() -> SimulatedProvisioner:
    return SimulatedProvisioner(timings=Timings(service=0.3, power=0.1))


@pytest.fixture
def replicas(
    cluster: Cluster, machines: SimulatedProvisioner
) -> Iterator[dict[str, HostController]]:
    with running_replicas(cluster, machines, servicing_max_unavailable=1) as running:
        yield running


def test_rolling_servicing_runs_one_host_of_a_pool_at_a_time_across_every_shard(
    cluster: Cluster, machines: SimulatedProvisioner, replicas: dict[str, HostController]
) -> None:
    create_fleet(cluster, NS, FLEET)
    wait_all_in(cluster, NS, "provisioned")
    names = [f"host-{i:04d}" for i in range(FLEET)]
    owners = {cluster.get(HOSTS, NS, n)["metadata"]["labels"][SHARD_LABEL] for n in names}
    assert len(owners) >= 2, owners  # the pool "" is spread over the replicas
    for name in names:  # no Node: all of them are in the pool ""
        cluster.patch(HOSTS, NS, name, {"spec": SERVICING})
    wait_for(
        lambda: all(steps_of(cluster, i) == "serviced" for i in range(FLEET)),
        timeout=60,
        what="every host serviced",
    )
    runs = sorted(
        (run.started, run.ended_at)
        for i in range(FLEET)
        if (run := machines.machine(address(i)).firmware.run) is not None
    )
    assert len(runs) == FLEET
    for (_, ended), (started, _) in itertools.pairwise(runs):
        assert ended is not None and started > ended  # one at a time, fleet-wide
    wait_for(
        lambda: read_claims(cluster.get(LEASES, NS, LEDGER_LEASE)) == {},
        what="every claim given back",
    )


def address(index: int) -> str:
    return str(host_manifest(NS, index)["spec"]["bmc"]["address"])
