"""``HostController.reconciled``: true only once a reconcile that read the object at (or
after) the version asked for has finished, so a test waits for the reconcile that
matters, not for an empty queue."""

from __future__ import annotations

from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS
from state_controller.cluster.schema import validators
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.controller import HostController
from state_controller.runtime.machinery.workqueue import WorkQueue
from state_controller.simulation.fleet import create_fleet
from tests.conftest import wait_for, wait_reconciled


def test_a_write_is_reconciled_only_after_a_reconcile_read_it() -> None:
    cluster = EmbeddedCluster(validators=validators())
    controller = HostController(cluster, SimulatedProvisioner())
    controller.start()
    try:
        create_fleet(cluster, "ns", 1)
        seen = wait_reconciled(controller, cluster, "ns", "host-0000")
        version = int(seen["metadata"]["resourceVersion"])
        assert controller.reconciled("ns/host-0000", str(version))
        assert not controller.reconciled("ns/host-0000", str(version + 10_000))
        assert not controller.reconciled("ns/host-0001", "1")  # never reconciled
        controller.stop()  # no worker left: a new write is not reconciled
        cluster.patch(HOSTS, "ns", "host-0000", {"metadata": {"labels": {"a": "b"}}})
        now = cluster.get(HOSTS, "ns", "host-0000")["metadata"]["resourceVersion"]
        assert not controller.reconciled("ns/host-0000", now)
    finally:
        controller.stop()
        cluster.close()


def test_hosts_created_and_deleted_leave_nothing_behind() -> None:
    """Under churn the record of what was reconciled follows the Hosts that exist: it once
    kept every key ever reconciled, growing without end."""
    cluster = EmbeddedCluster(validators=validators())
    controller = HostController(cluster, SimulatedProvisioner())
    controller.start()
    try:
        for round_ in range(3):
            namespace = f"churn-{round_}"
            create_fleet(cluster, namespace, 20)
            wait_for(
                lambda ns=namespace: (
                    sum(key.startswith(ns + "/") for key in controller.workers.remembered()) == 20
                ),
                timeout=60,
                what=f"the 20 Hosts of {namespace} reconciled",
            )
            for index in range(20):
                cluster.delete(HOSTS, namespace, f"host-{index:04d}")
        wait_for(
            lambda: not any(cluster.list(HOSTS, f"churn-{round_}")[0] for round_ in range(3)),
            timeout=60,
            what="every Host gone, its finalizer taken off",
        )
        wait_for(
            lambda: not controller.workers.remembered(),
            timeout=30,
            what="the reconciled record emptied with the Hosts gone",
        )
    finally:
        controller.stop()
        cluster.close()


def test_the_queue_is_idle_only_with_nothing_ready_and_nothing_processing() -> None:
    queue: WorkQueue[str] = WorkQueue()
    assert queue.idle()
    queue.add("a")
    assert not queue.idle()
    assert queue.get(timeout=1) == "a"
    assert not queue.idle()  # taken, not done: still busy
    queue.done("a")
    wait_for(queue.idle, timeout=1)
    queue.shutdown()
