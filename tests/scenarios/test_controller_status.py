"""The controller's own status (one HostStateController per installation), on both
backends: what a replica says of itself and its hosts, written only when it changes; a
former pod's entry dropped; sharded replicas each with their share, a replica that
stopped shown Expired (Degraded, its hosts waiting) and then gone once its Lease is dead."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from state_controller.api.timefmt import rfc3339
from state_controller.cluster.interface import CONTROLLERS, HOSTS, LEASES, Cluster, NotFound
from state_controller.provisioning.backoff import Backoff
from state_controller.provisioning.fault_plan import Fault, FaultPlan
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.controller import HostController
from state_controller.sharding.leases import LEASE_PREFIX, SHARD_LABEL
from state_controller.sharding.members import Members
from state_controller.simulation.fleet import create_fleet
from state_controller.wiring import observed_controller
from testbed.scenarios import NS, state_of
from testbed.waiting import wait_for
from tests.conftest import FAST_BACKOFF

INTERVAL = 0.2  # seconds between looks at the status
LEASE_SECONDS = 15


@pytest.fixture
def status_object(cluster: Cluster) -> Iterator[str]:
    """The object's name (the installation's namespace, here the scenarios' own), removed
    after the test: it is cluster-scoped, and the real control plane outlives a test."""
    yield NS
    with contextlib.suppress(NotFound):
        cluster.delete(CONTROLLERS, None, NS)
    for lease in cluster.list(LEASES, NS)[0]:
        cluster.delete(LEASES, NS, lease["metadata"]["name"])


def status_of(cluster: Cluster, name: str) -> dict[str, Any]:
    try:
        return dict(cluster.get(CONTROLLERS, None, name).get("status") or {})
    except NotFound:
        return {}


def own_writes(registry: CollectorRegistry) -> tuple[float, float]:
    """The controller's status writes sent (written, or met a conflict), and its looks
    that found nothing to write."""

    def count(outcome: str) -> float:
        labels = {"resource": CONTROLLERS.plural, "outcome": outcome}
        return registry.get_sample_value("hoststate_status_writes_total", labels) or 0.0

    return count("written") + count("conflict"), count("unchanged")


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions") or [] if c["type"] == kind), {})


def config(**overrides: Any) -> ControllerConfig:
    settings: dict[str, Any] = {
        "workers": 2,
        "backoff": FAST_BACKOFF,
        "namespaces": (NS,),
        "follow_nodes": False,
        "lease_namespace": NS,
        "controller_status_interval": INTERVAL,
        **overrides,
    }
    return ControllerConfig(**settings)


def test_one_replica_reports_itself_and_its_hosts_and_writes_only_on_change(
    cluster: Cluster, status_object: str
) -> None:
    # an entry a former pod left: one replica that is not sharded reconciles alone
    cluster.create(
        CONTROLLERS,
        {
            "apiVersion": CONTROLLERS.api_version,
            "kind": CONTROLLERS.kind,
            "metadata": {"name": status_object},
            "spec": {},
        },
    )
    failing = FaultPlan({f"{NS}/host-0003": [Fault("provisioning", times=None)]})
    create_fleet(cluster, NS, 4)
    # the failed host is retried a minute later, not within the look at rest below: each
    # retry re-enters its state and clears its error for as long as the attempt takes
    slow_retry = Backoff(base=60.0, cap=60.0, jitter=0.0)
    observed = observed_controller(
        cluster,
        SimulatedProvisioner(faults=failing),
        config(replica="pod-1", backoff=slow_retry),
    )
    controller = observed.controller
    with ExitStack() as stack:
        controller.start()
        stack.callback(controller.stop)
        for name in ("host-0000", "host-0001", "host-0002"):
            wait_for(lambda name=name: state_of(cluster, name) == "provisioned", timeout=60)

        def settled() -> bool:
            status = status_of(cluster, status_object)
            return status.get("hosts") == 4 and status.get("failed") == 1

        wait_for(settled, timeout=30, what="the status counting 4 hosts, 1 failed")
        status = status_of(cluster, status_object)
        assert status["mode"] == "Cluster"
        assert status["replicas"] == status["readyReplicas"] == 1
        assert status["version"]
        assert [m["name"] for m in status["members"]] == ["pod-1"]
        member = status["members"][0]
        assert member["cachesSynced"] is True and member["shard"] == ""
        assert member["hosts"] == 4 and member["failed"] == 1
        assert status["provisioner"] == {
            "backend": "simulated",
            "apiVersion": "",
            "reachable": True,
        }
        assert condition(status, "Available")["status"] == "True"
        assert condition(status, "Available")["message"] == "1 replica reconciles 4 hosts"
        assert condition(status, "Progressing")["status"] == "False"
        assert condition(status, "Degraded")["status"] == "False"

        # at rest: nothing changes, nothing is written (a look every 0.2 s). A write is
        # counted just after it lands, so the count is read once a later look has been
        # counted: the looks run one after another, on one thread
        _, looks = own_writes(observed.metrics.registry)
        wait_for(
            lambda: own_writes(observed.metrics.registry)[1] > looks,
            what="a look counted after the write the status shows",
        )
        version = cluster.get(CONTROLLERS, None, status_object)["metadata"]["resourceVersion"]
        written, looks = own_writes(observed.metrics.registry)
        wait_for(  # ten looks, each finding nothing to write
            lambda: own_writes(observed.metrics.registry)[1] >= looks + 10, what="ten looks"
        )
        assert own_writes(observed.metrics.registry)[0] == written
        after = cluster.get(CONTROLLERS, None, status_object)["metadata"]["resourceVersion"]
        assert after == version

        # a host deleted: the count follows
        cluster.delete(HOSTS, NS, "host-0000")
        wait_for(lambda: status_of(cluster, status_object).get("hosts") == 3, timeout=30)


def put_lease(cluster: Cluster, shard: str, renewed: float) -> None:
    """A shard's Lease, renewed at ``renewed`` (epoch seconds, the replicas' clock)."""
    name = LEASE_PREFIX + shard
    whole, micro = divmod(round(renewed * 1_000_000), 1_000_000)
    spec = {
        "holderIdentity": f"{shard}_0123abcd",  # the form a replica writes
        "leaseDurationSeconds": LEASE_SECONDS,
        "renewTime": rfc3339(whole).removesuffix("Z") + f".{micro:06d}Z",
    }
    try:
        cluster.patch(LEASES, NS, name, {"spec": spec})
    except NotFound:
        body = {"apiVersion": LEASES.api_version, "kind": "Lease"}
        cluster.create(LEASES, {**body, "metadata": {"name": name, "namespace": NS}, "spec": spec})


def test_sharded_replicas_each_show_their_share_and_a_stopped_one_leaves_when_its_lease_dies(
    cluster: Cluster, status_object: str
) -> None:
    machines = SimulatedProvisioner()
    for shard in ("a", "b"):
        put_lease(cluster, shard, time.time())
    create_fleet(cluster, NS, 5)
    for index in range(5):  # as the sharder would: two hosts to a, three to b
        shard = "a" if index < 2 else "b"
        cluster.patch(
            HOSTS, NS, f"host-{index:04d}", {"metadata": {"labels": {SHARD_LABEL: shard}}}
        )
    replicas: dict[str, HostController] = {}
    with ExitStack() as stack:
        for shard in ("a", "b"):
            replica = observed_controller(cluster, machines, config(shard=shard)).controller
            replica.start()
            stack.callback(replica.stop)
            replicas[shard] = replica

        def shares() -> dict[str, int]:
            members = status_of(cluster, status_object).get("members") or []
            return {m["name"]: m["hosts"] for m in members}

        wait_for(lambda: shares() == {"a": 2, "b": 3}, timeout=60, what="both shares")
        status = status_of(cluster, status_object)
        assert status["replicas"] == status["readyReplicas"] == 2 and status["hosts"] == 5
        assert {m["lease"] for m in status["members"]} == {"Ready"}
        assert condition(status, "Available")["status"] == "True"

        # b stops and its Lease is not renewed for longer than its duration: Expired
        replicas["b"].stop()
        put_lease(cluster, "a", time.time() + 600)  # a stays Ready for the whole test
        put_lease(cluster, "b", time.time() - LEASE_SECONDS - 1)

        def lease_of_b() -> str:
            members = status_of(cluster, status_object).get("members") or []
            return next((m["lease"] for m in members if m["name"] == "b"), "gone")

        wait_for(lambda: lease_of_b() == "Expired", timeout=30, what="b shown Expired")
        status = status_of(cluster, status_object)
        assert condition(status, "Available")["reason"] == "ShardNotRenewed"
        assert condition(status, "Available")["status"] == "False"
        assert "3 hosts wait for shard b" in condition(status, "Available")["message"]
        assert condition(status, "Degraded")["status"] == "True"
        assert condition(status, "Progressing")["reason"] == "Rebalancing"
        assert status["readyReplicas"] == 1

        # twice its duration: Dead, and gone from the status (its hosts are moved)
        put_lease(cluster, "b", time.time() - 2 * LEASE_SECONDS - 1)
        wait_for(lambda: lease_of_b() == "gone", timeout=30, what="b gone")
        status = status_of(cluster, status_object)
        assert status["replicas"] == 1 and status["hosts"] == 2
        assert condition(status, "Available")["status"] == "True"
        assert condition(status, "Degraded")["status"] == "False"


def test_a_stopped_shard_kept_ready_by_a_lease_no_replica_wrote_is_dropped(
    cluster: Cluster, status_object: str
) -> None:
    """The status judges shard Leases as the sharder does (--shards): a stopped shard's
    entry kept Ready by a Lease someone else holds, for 68 years by its word, is dropped
    as dead, where it was shown Ready and counted for as long as the Lease said."""
    for shard in ("a", "b"):
        put_lease(cluster, shard, time.time())
    create_fleet(cluster, NS, 4)
    for index in range(4):
        shard = "a" if index < 2 else "b"
        cluster.patch(
            HOSTS, NS, f"host-{index:04d}", {"metadata": {"labels": {SHARD_LABEL: shard}}}
        )
    members = Members(frozenset({"a", "b"}), LEASE_SECONDS)
    machines = SimulatedProvisioner()
    replicas: dict[str, HostController] = {}
    with ExitStack() as stack:
        for shard in ("a", "b"):
            settings = config(shard=shard, shard_members=members)
            replica = observed_controller(cluster, machines, settings).controller
            replica.start()
            stack.callback(replica.stop)
            replicas[shard] = replica

        def shown() -> dict[str, str]:
            entries = status_of(cluster, status_object).get("members") or []
            return {m["name"]: m.get("lease", "") for m in entries}

        wait_for(lambda: set(shown()) == {"a", "b"}, timeout=60, what="both shards shown")
        replicas["b"].stop()
        put_lease(cluster, "b", time.time())
        forged = {"holderIdentity": "mallory", "leaseDurationSeconds": 2_147_483_647}
        cluster.patch(LEASES, NS, LEASE_PREFIX + "b", {"spec": forged})
        put_lease(cluster, "a", time.time())  # a renews as its replica would
        wait_for(lambda: set(shown()) == {"a"}, timeout=30, what="b dropped as dead")
        status = status_of(cluster, status_object)
        assert status["replicas"] == status["readyReplicas"] == 1 and status["hosts"] == 2
