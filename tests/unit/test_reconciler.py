"""The host reconciler's writes: only when needed, and through conflicts."""

from __future__ import annotations

from typing import Any

from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, HOSTSTATES, SECRETS
from state_controller.provisioning.machine import HostMachine
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.host_reconciler import HostReconciler
from state_controller.runtime.informer import Informer
from state_controller.runtime.reporting import NoReporter
from state_controller.simulation.fleet import host_manifest, secret_manifest


class Recorder(NoReporter):
    def __init__(self) -> None:
        self.writes: list[tuple[str, str]] = []

    def status_write(self, resource: str, outcome: str) -> None:
        self.writes.append((resource, outcome))


def setup() -> tuple[EmbeddedCluster, Informer, HostReconciler, Recorder]:
    store = EmbeddedCluster()
    hosts, states, secrets = (
        Informer(store, HOSTS),
        Informer(store, HOSTSTATES),
        Informer(store, SECRETS),
    )
    secrets.mutate(store.create(SECRETS, secret_manifest("ns", "host-0000-bmc", "admin", "pw")))
    hosts.mutate(store.create(HOSTS, host_manifest("ns", 0)))
    recorder = Recorder()
    reconciler = HostReconciler(
        store,
        hosts=hosts,
        hoststates=states,
        secrets=secrets,
        machine=HostMachine(SimulatedProvisioner()),
        config=ControllerConfig(),
        reporter=recorder,
    )
    return store, hosts, reconciler, recorder


def test_second_reconcile_writes_nothing() -> None:
    store, _, reconciler, recorder = setup()
    reconciler.reconcile("ns/host-0000")
    # Host.status carries the transitions until the HostState holds them; the host
    # is at rest then, so Host.status is written once more without them.
    assert recorder.writes == [
        ("hosts", "written"),
        ("hoststates", "written"),
        ("hosts", "written"),
    ]
    assert store.get(HOSTS, "ns", "host-0000")["status"]["recentTransitions"] == []
    before: dict[str, Any] = dict(store.stats)
    reconciler.reconcile("ns/host-0000")
    assert recorder.writes[3:] == [("hosts", "unchanged"), ("hoststates", "unchanged")]
    assert store.stats["update_status"] == before["update_status"]
    assert store.stats["patch"] == before["patch"]


def test_a_stale_cache_costs_one_retry_and_is_counted_as_conflict() -> None:
    store, hosts, reconciler, recorder = setup()
    reconciler.reconcile("ns/host-0000")
    # the user powers the host off; the cache sees that, but not a later label change
    hosts.mutate(store.patch(HOSTS, "ns", "host-0000", {"spec": {"online": False}}))
    store.patch(HOSTS, "ns", "host-0000", {"metadata": {"labels": {"rack": "r7"}}})
    reconciler.reconcile("ns/host-0000")
    assert ("hosts", "conflict") in recorder.writes
    stored = store.get(HOSTS, "ns", "host-0000")
    assert stored["status"]["poweredOn"] is False
    assert stored["metadata"]["labels"] == {"rack": "r7"}  # the other change survived


def test_the_answer_to_the_last_finalizer_removal_does_not_resurrect_the_host() -> None:
    store, hosts, reconciler, _ = setup()
    reconciler.reconcile("ns/host-0000")
    store.delete(HOSTS, "ns", "host-0000")
    hosts.mutate(store.get(HOSTS, "ns", "host-0000"))  # the cache sees the deletionTimestamp
    reconciler.reconcile("ns/host-0000")  # deprovisions, then removes the finalizer
    assert store.list(HOSTS)[0] == []
    assert hosts.get("ns/host-0000") is None  # the PATCH answer must not bring it back
