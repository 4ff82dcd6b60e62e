"""The host reconciler driven by hand, for the tests of one reconcile at a time: no watch,
no queue, no worker; the test writes, shows the cache what it wrote, and reconciles."""

from __future__ import annotations

import time
from collections.abc import Callable

from state_controller.api.objects import Obj
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, HOSTSTATES, SECRETS
from state_controller.provisioning.machine import HostMachine
from state_controller.provisioning.provisioner import Provisioner
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.hosts.reconciler import HostReconciler
from state_controller.runtime.machinery.informer import Informer
from state_controller.runtime.machinery.reporting import NoReporter, Reporter


class HandDriven:
    """A ``HostReconciler`` over an embedded store (no schema: anything may be stored) and
    its three informers, which hold only what the test shows them. ``add_secret``,
    ``create`` and ``patch`` give the store's answer to the cache, as the controller does
    with its own writes; a write made straight to ``store`` stays unseen (a stale cache)
    until the test calls ``mutate`` or ``forget`` on the informer itself."""

    def __init__(
        self,
        store: EmbeddedCluster | None = None,
        *,
        provisioner: Provisioner | None = None,
        config: ControllerConfig | None = None,
        reporter: Reporter | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store if store is not None else EmbeddedCluster()
        self.hosts = Informer(self.store, HOSTS)
        self.hoststates = Informer(self.store, HOSTSTATES)
        self.secrets = Informer(self.store, SECRETS)
        self.reconciler = HostReconciler(
            self.store,
            hosts=self.hosts,
            hoststates=self.hoststates,
            secrets=self.secrets,
            machine=HostMachine(provisioner or SimulatedProvisioner()),
            config=config or ControllerConfig(),
            reporter=reporter or NoReporter(),
            clock=clock,
        )

    def add_secret(self, manifest: Obj) -> Obj:
        created = self.store.create(SECRETS, manifest)
        self.secrets.mutate(created)
        return created

    def create(self, manifest: Obj) -> Obj:
        """A Host created, and seen by the cache."""
        created = self.store.create(HOSTS, manifest)
        self.hosts.mutate(created)
        return created

    def patch(self, key: str, body: Obj) -> Obj:
        """The Host ``namespace/name`` patched, and seen by the cache."""
        namespace, _, name = key.partition("/")
        patched = self.store.patch(HOSTS, namespace, name, body)
        self.hosts.mutate(patched)
        return patched

    def reconcile(self, key: str, times: int = 1) -> None:
        for _ in range(times):
            self.reconciler.reconcile(key)

    def close(self) -> None:
        self.store.close()


class StatusWrites(NoReporter):
    """Reports nothing but the status writes, as (resource, outcome) in their order."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str]] = []

    def status_write(self, resource: str, outcome: str) -> None:
        self.writes.append((resource, outcome))
