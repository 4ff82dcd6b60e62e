"""Shared fixtures: clusters, controllers and fleets for the end-to-end scenarios."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest

from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, SECRETS, Cluster, NotFound
from state_controller.cluster.kube import KubeCluster
from state_controller.cluster.schema import validators
from state_controller.observability.metrics import Metrics
from state_controller.provisioning.backoff import Backoff
from state_controller.provisioning.fault_plan import Fault, FaultPlan
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.controller import HostController
from state_controller.simulation.fleet import host_manifest, secret_manifest
from state_controller.wiring import observed_controller
from testbed.metrics import sample
from testbed.scenarios import (
    HOST_DATA,
    NS,
    PASSWORD,
    RAMDISK_NETWORK_DATA,
    host_data_secret,
    wait_all_in,
)
from testbed.scenarios import NS as SCENARIO_NAMESPACE
from testbed.waiting import wait_for as wait_for  # where most tests import it from

FAST_BACKOFF = Backoff(base=0.05, cap=0.4, jitter=0.0)

# The files that take longest, longest first (seconds on one worker of a full
# scripts/test run on four workers, 2026-11-28): scripts/test hands files to its workers
# in collection order (--dist loadfile --no-loadscope-reorder), so these start first
# and the many short files fill in around them; otherwise a worker may pick up a
# minute-long file when the others have nothing left. A file not named here keeps its
# place after them; a name here that no longer exists changes nothing.
LONGEST_FIRST = (
    "tests/cluster/test_shard_replicas.py",  # 174 s (replicas as processes, Leases dying)
    "tests/unit/test_cli.py",  # 126 s
    "tests/ironic/test_ironic_outages.py",  # 108 s
    "tests/ironic/test_redfish.py",  # 106 s
    "tests/unit/test_demo_screen.py",  # 101 s
    "tests/image/test_image.py",  # 99 s (the image built with buildah)
    "tests/scenarios/test_sharded_provisioning.py",  # 92 s
    "tests/cluster/test_manifests.py",  # 83 s
    "tests/ironic/test_retire_on_ironic.py",  # 67 s (the garbage collector's 30 s resync)
    "tests/ironic/test_failures.py",  # 66 s
    "tests/monitoring/test_prometheus.py",  # 63 s
    "tests/ironic/test_lifecycle_on_ironic.py",  # 61 s
    "tests/unit/test_convert_metal3_samples.py",  # 55 s (convert and bootstrap run as users do)
    "tests/ironic/test_cli_on_ironic.py",  # 54 s
    "tests/install/test_upgrade.py",  # 54 s alone (its own control plane, three controllers)
    "tests/scenarios/test_rolling_update.py",  # 49 s
    "tests/cluster/test_observe_install.py",  # 48 s alone (its own control plane)
    "tests/ironic/test_redfish_servicing.py",  # 48 s
    "tests/scenarios/test_nodes.py",  # 45 s
    "tests/install/test_chart.py",  # 43 s
    "tests/cluster/test_bootstrap_pivot.py",  # 43 s
    "tests/unit/test_docs.py",  # 41 s
    "tests/cluster/test_outages.py",  # 40 s
    "tests/ironic/test_refusals.py",  # 39 s
    "tests/cluster/test_docs_samples.py",  # 37 s
    "tests/install/test_clusterctl_move.py",  # 35 s (two control planes)
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """:data:`LONGEST_FIRST` first (a stable sort: a file's own order is kept), on
    pytest-xdist's workers only: one process (``-x``, scripts/mutants) keeps the
    collection order, its short files first."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    rank = {path: place for place, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))


NODE_STATE_NAMESPACE = "hoststate-system"


def wait_reconciled(
    controller: HostController, cluster: Cluster, namespace: str, name: str, timeout: float = 15.0
) -> dict[str, Any]:
    """Until a reconcile of the Host has finished that read it as it is now (the write
    under test seen and acted on, or deliberately not); the Host as it was read. Waiting
    for ``idle()`` proves nothing: the write's watch event may not have arrived yet."""
    host = cluster.get(HOSTS, namespace, name)
    version = host["metadata"]["resourceVersion"]
    wait_for(
        lambda: controller.reconciled(f"{namespace}/{name}", version),
        timeout=timeout,
        what=f"a reconcile of {namespace}/{name} at resourceVersion {version}",
    )
    return host


@pytest.fixture(params=["embedded", "kube"])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """Every end-to-end scenario runs against both backends: in process, and a real
    kube-apiserver + etcd (one per session, emptied between tests)."""
    if request.param == "embedded":
        store = EmbeddedCluster(validators=validators())
        yield store
        store.close()
        return
    plane = request.getfixturevalue("control_plane")
    kube = KubeCluster.from_kubeconfig(str(plane.kubeconfig))
    yield kube
    remove_nodes(kube)
    empty_namespace(kube, SCENARIO_NAMESPACE)
    empty_namespace(kube, NODE_STATE_NAMESPACE)
    kube.close()


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """etcd + kube-apiserver + kube-controller-manager, CRDs installed: one per session."""
    from testbed.kube import started_control_plane

    with started_control_plane(tmp_path_factory.mktemp("k8s")) as plane:
        yield plane


@pytest.fixture(scope="session")
def manifests(control_plane: Any) -> Any:
    """manifests/ applied (kubectl apply -k --server-side) to the session's control plane."""
    from testbed.kube import apply_manifests

    return apply_manifests(control_plane)


def empty_namespace(cluster: Cluster, namespace: str) -> None:
    """Remove every object a scenario made, finalizers included (the controller is gone)."""
    from state_controller.cluster.interface import (
        BAREMETALHOSTS,
        EVENTS,
        HOSTS,
        HOSTSTATES,
        SECRETS,
    )

    for resource in (HOSTS, BAREMETALHOSTS, HOSTSTATES, SECRETS, EVENTS):
        try:
            found = cluster.list(resource, namespace)[0]
        except NotFound:  # a kind this server does not serve (no BareMetalHost CRD there)
            continue
        for obj in found:
            name = obj["metadata"]["name"]
            try:
                if obj["metadata"].get("finalizers"):
                    cluster.patch(resource, namespace, name, {"metadata": {"finalizers": None}})
                cluster.delete(resource, namespace, name)
            except NotFound:
                pass
    wait_for(
        lambda: all(not cluster.list(r, namespace)[0] for r in (HOSTS, HOSTSTATES, SECRETS)),
        what=f"namespace {namespace} emptied",
    )


def remove_nodes(cluster: Cluster) -> None:
    """Nodes are cluster-scoped: a session's control plane keeps them across tests."""
    from state_controller.cluster.interface import NODEPOOLS, NODES, PDBS, PODS

    for resource, namespace in ((PODS, SCENARIO_NAMESPACE), (PDBS, SCENARIO_NAMESPACE)):
        for obj in cluster.list(resource, namespace)[0]:
            with suppress(NotFound):
                cluster.delete(resource, namespace, obj["metadata"]["name"])
    for node in cluster.list(NODES)[0]:
        with suppress(NotFound):
            cluster.delete(NODES, None, node["metadata"]["name"])
    for pool in cluster.list(NODEPOOLS)[0]:
        with suppress(NotFound):
            cluster.delete(NODEPOOLS, None, pool["metadata"]["name"])
    wait_for(
        lambda: not cluster.list(NODES)[0] and not cluster.list(PODS, SCENARIO_NAMESPACE)[0],
        what="nodes and pods removed",
    )


class Running:
    """A controller with its metrics, as a test sees it."""

    def __init__(self, controller: HostController, metrics: Metrics, sim: SimulatedProvisioner):
        self.controller, self.metrics, self.sim = controller, metrics, sim

    def book(self, key: str) -> Any:
        return self.controller.books.get(key)

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float:
        """The series' value; a series that does not exist fails (testbed.metrics)."""
        return sample(self.metrics.registry, name, labels)


@pytest.fixture
def run_controller() -> Iterator[Callable[..., Any]]:
    started: list[HostController] = []

    @contextmanager
    def start(
        cluster: Cluster,
        sim: SimulatedProvisioner | None = None,
        config: ControllerConfig | None = None,
    ) -> Iterator[Running]:
        sim = sim or SimulatedProvisioner()
        config = config or ControllerConfig(workers=2, backoff=FAST_BACKOFF)
        observed = observed_controller(cluster, sim, config)
        controller, metrics = observed.controller, observed.metrics
        controller.start()
        started.append(controller)
        try:
            yield Running(controller, metrics, sim)
        finally:
            controller.stop()
            started.remove(controller)

    yield start
    for controller in started:  # a test that failed inside the block
        controller.stop()


@pytest.fixture
def observed(cluster: Cluster, caplog: pytest.LogCaptureFixture) -> Any:
    """Three hosts provisioned (two through a fault) by a controller with its metrics and
    in-memory spans; yields (metrics, spans). The reporting and metrics tests read them."""
    caplog.set_level(logging.DEBUG)
    plan = FaultPlan(
        {
            f"{NS}/host-0000": [Fault("credentials", times=1)],
            f"{NS}/host-0001": [Fault("provisioning", times=1)],
        }
    )
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF)
    observed = observed_controller(
        cluster, SimulatedProvisioner(faults=plan), config, trace="memory"
    )
    controller, metrics, spans = observed.controller, observed.metrics, observed.spans
    controller.start()
    for key in HOST_DATA:  # every host gets user, network, meta and ramdisk network data
        cluster.create(SECRETS, host_data_secret(NS, f"fleet-{key.lower()}", key))
    ramdisk = host_data_secret(NS, "fleet-ramdisk", "networkData", RAMDISK_NETWORK_DATA)
    cluster.create(SECRETS, ramdisk)
    for index in range(3):
        cluster.create(SECRETS, secret_manifest(NS, f"host-{index:04d}-bmc", "admin", PASSWORD))
        host = host_manifest(NS, index)
        host["spec"].update({key: {"name": f"fleet-{key.lower()}"} for key in HOST_DATA})
        host["spec"]["preprovisioningNetworkDataName"] = "fleet-ramdisk"
        cluster.create(HOSTS, host)
    try:
        wait_all_in(cluster, NS, "provisioned")
        wait_for(controller.idle)
        yield metrics, spans
    finally:
        controller.stop()
