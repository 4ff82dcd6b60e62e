"""The manager: the one place where the caches, the indexes, the reconcilers by kind and
the workers are assembled, and started in order.

As a controller-runtime manager: every cache is synced before the first reconcile (a
book is never opened before the HostState that holds its history is in the cache); then
N workers (:mod:`.machinery.workers`) reconcile, never one book twice at a time, errors
retried with per-book backoff, one timer per book for stuck detection. A queue key names
a book: a Host's (``namespace/name``, its Node followed in its reconcile), a Node's own
(``node:``), an observed BareMetalHost's (``bmh:``) or a NodePool (``pool:``, queued
after each reconcile of a book that follows a Node of the pool);
:meth:`HostController._kinds` is the one table of what each kind is reconciled by. Whom
an event concerns is :mod:`.routes`.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from ..api import annotations as ann
from ..books.book import Book
from ..cluster.interface import (
    BAREMETALHOSTS,
    HOSTS,
    HOSTSTATES,
    MACHINECONFIGNODES,
    MACHINECONFIGPOOLS,
    NODEPOOLS,
    NODES,
    SECRETS,
    Cluster,
)
from ..durations.learned import Learned
from ..durations.reading import DurationReader
from ..health.share import controller_version, share_of
from ..health.summary import ProvisionerSeen, Share
from ..provisioning.machine import HostMachine
from ..provisioning.provisioner import Provisioner
from ..sharding.leases import SHARD_LABEL
from ..updates.signals import NodeSignals
from .baremetalhosts.reconciler import BareMetalHostReconciler
from .config import ControllerConfig
from .hosts.reconciler import HostReconciler
from .hosts.remediator import Remediator
from .indexes.machines import MachineIndex
from .indexes.node_books import NodeBooks
from .indexes.nodes import NodeIndex
from .machinery.informer import Informer, InformerSet
from .machinery.keys import Kind, kind_of, parse, pool_key
from .machinery.reporting import NoReporter, Reporter
from .machinery.results import ReconcileResult
from .machinery.workers import KindOfBook, Workers
from .machinery.workqueue import QueueMetricsSink, WorkQueue
from .nodes.capi_machines import CapiMachines
from .nodes.cordoned_pods import Drains
from .nodes.reconciler import NodeFollower, NodeReconciler
from .pools.reconciler import PoolReconciler, pool_of_object
from .routes import EventRoutes
from .self_status import SelfStatus
from .servicing.drainer import ServiceDrainer
from .servicing.fleet_slots import FleetSlots
from .servicing.slots import ServiceSlots
from .shards.lead import Lead
from .writing.book_writer import BookWriter


class HostController:
    def __init__(
        self,
        cluster: Cluster,
        provisioner: Provisioner,
        *,
        config: ControllerConfig | None = None,
        reporter: Reporter | None = None,
        queue_metrics: QueueMetricsSink | None = None,
        provisioner_seen: Callable[[], ProvisionerSeen] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config or ControllerConfig()
        self.reporter = reporter or NoReporter()
        self.cluster = cluster
        ns = self.config.namespaces
        limit = self.config.event_workers  # one worker kept for polls that come due
        self.queue = WorkQueue[str](sink=queue_metrics, kind_of=kind_of, event_limit=limit)
        # the informers' handlers: bound late, as the routes ask the caches built here
        routes: Callable[[], EventRoutes] = lambda: self.routes  # noqa: E731
        state_ns = ns
        if not (self.config.drive_hosts or self.config.observe_baremetalhosts):
            # Nodes alone (OpenShift's install): every HostState is a node-only one, and
            # reading them needs no grant beyond their namespace
            state_ns = (self.config.node_state_namespace,)
        elif ns and self.config.follow_nodes and self.config.node_state_namespace not in ns:
            state_ns = (*ns, self.config.node_state_namespace)  # node-only HostStates
        # sharded: only this shard's Hosts and HostStates are watched and cached
        mine = f"{SHARD_LABEL}={self.config.shard}" if self.config.shard else ""
        self.hosts = InformerSet(
            cluster, HOSTS, ns, handlers=[lambda *e: routes().on_host(*e)], label_selector=mine
        )
        self.hoststates = InformerSet(
            cluster,
            HOSTSTATES,
            state_ns,
            handlers=[lambda *e: routes().on_hoststate(*e)],
            label_selector=mine,
        )
        # only the Secrets labelled as BMC credentials: no other Secret is read or cached
        self.secrets = InformerSet(
            cluster,
            SECRETS,
            ns,
            handlers=[lambda *e: routes().on_secret(*e)],
            label_selector=ann.BMC_CREDENTIALS_SELECTOR,
        )
        # and those labelled as data for a deployed OS (userData, networkData, metaData)
        self.data_secrets = InformerSet(
            cluster,
            SECRETS,
            ns,
            handlers=[lambda *e: routes().on_secret(*e)],
            label_selector=ann.HOST_DATA_SELECTOR,
        )
        self.machines = MachineIndex(lambda key: self.hosts.get(key) is not None)
        sharded = bool(self.config.shard) and self.config.follow_nodes
        self.lead = Lead(
            cluster,
            sharded=sharded,
            node_state_namespace=self.config.node_state_namespace,
            on_node_state=lambda *e: routes().on_hoststate(*e),
        )
        self.node_index = NodeIndex(
            lambda name: self.lead.named(self.machines.named(name), name),
            self.config.pool_label,
            by_hostname=self.config.link_nodes_by_hostname,
            watched=self.config.namespaces,
        )
        self.drains = Drains(cluster, lambda node: routes().on_pods(node))
        # built always, started only when Nodes are followed (no node:/pool: key otherwise)
        self.nodes = Informer(cluster, NODES, None, handlers=[lambda *e: routes().on_node(*e)])
        self.nodepools = Informer(
            cluster, NODEPOOLS, None, handlers=[lambda *e: routes().on_nodepool(*e)]
        )
        self.mcns = Informer(
            cluster, MACHINECONFIGNODES, None, handlers=[lambda *e: routes().on_mcn(*e)]
        )
        self.mcps = Informer(
            cluster, MACHINECONFIGPOOLS, None, handlers=[lambda *e: routes().on_mcp(*e)]
        )
        self.capi_machines = CapiMachines(cluster, lambda *e: routes().on_capi_machine(*e))
        follower = NodeFollower(self.node_index, self.drains)
        # sharded: a pool's slots are counted across every replica, on one Lease
        self.fleet_slots = (
            FleetSlots(
                cluster,
                namespace=self.config.lease_namespace,
                shard=self.config.shard,
                members=self.config.shard_members,
                per_pool=self.config.servicing_max_unavailable,
                on_change=lambda: self.slots.wake_freed(),
            )
            if self.config.shard
            else None
        )
        self.slots = ServiceSlots(
            self.config.servicing_max_unavailable, self.queue.add, fleet=self.fleet_slots
        )
        self.remediator = (
            Remediator(self.config, self.node_index)
            if self.config.remediation is not None and self.config.follow_nodes
            else None
        )
        self.learned = Learned()  # how long each step takes, per pool and hardware class
        self.node_books = NodeBooks(self.node_index, routes, lambda: self.kinds)
        self.durations = DurationReader(self.learned, self.node_books.pool_of)
        self.reconciler = HostReconciler(
            cluster,
            hosts=self.hosts,
            hoststates=self.hoststates,
            secrets=self.secrets,
            data_secrets=self.data_secrets,
            machine=HostMachine(provisioner, backoff=self.config.backoff),
            config=self.config,
            reporter=self.reporter,
            nodes=follower if self.config.follow_nodes else None,
            remediator=self.remediator,
            slots=self.slots,
            durations=self.durations,
            drainer=ServiceDrainer(cluster, self.drains) if self.config.follow_nodes else None,
            clock=clock,
        )
        node_states = self.lead.node_states or self.hoststates
        self.node_reconciler = NodeReconciler(
            cluster,
            hosts=self.hosts,
            hoststates=node_states,
            follower=follower,
            writer=(
                BookWriter(cluster, node_states, self.config, self.reporter, self.durations)
                if node_states is not self.hoststates
                else self.reconciler.writer
            ),
            config=self.config,
            clock=clock,
        )
        # built always, started only when BareMetalHosts are observed
        self.bmhs = InformerSet(
            cluster, BAREMETALHOSTS, ns, handlers=[lambda *e: routes().on_bmh(*e)]
        )
        self.bmh_reconciler = BareMetalHostReconciler(
            bmhs=self.bmhs,
            hosts=self.hosts if self.config.drive_hosts else None,
            hoststates=self.hoststates,
            writer=self.reconciler.writer,
            nodes=follower if self.config.follow_nodes else None,
            config=self.config,
            clock=clock,
        )
        self.pool_reconciler = PoolReconciler(
            cluster,
            pools=self.nodepools,
            nodes=self.node_index,
            update_of=self.node_books.update_of,
            writer=self.reconciler.writer,
            label=self.config.pool_label,
            interval=self.config.pool_status_interval,
            machine_config_pools=self.mcps if self.config.observe_machineconfignodes else None,
            counts_grace=self.config.pool_counts_grace,
            others=lambda name: self.self_status.pool_shares(name),
            learned=self.learned,
            class_of=self.node_books.class_of,
            clock=clock,
        )
        self.routes = EventRoutes(
            self.config,
            self.queue,
            machines=self.machines,
            node_index=self.node_index,
            lead=self.lead,
            slots=self.slots,
            drains=self.drains,
            remediator=self.remediator,
            bmh_cached=lambda key: self.bmhs.get(key) is not None,
        )
        self.kinds = self._kinds()  # one dispatch by the kind of a queue key
        self.workers = Workers(self.queue, self.kinds, self.reporter, count=self.config.workers)
        self.synced = False
        self.self_status = SelfStatus(
            cluster,
            name=self.config.lease_namespace,
            member=self.config.shard or self.config.replica or socket.gethostname(),
            shard=self.config.shard,
            lease_namespace=self.config.lease_namespace,
            members=self.config.shard_members,
            share=self._share,
            synced=lambda: self.synced,
            provisioner=provisioner_seen or (lambda: ProvisionerSeen(provisioner.backend)),
            mode=self.config.mode,
            version=controller_version(),
            reporter=self.reporter,
            interval=self.config.controller_status_interval,
            on_pools=lambda names: self.routes.on_pool_shares(names),
            clock=clock,
        )

    @property
    def books(self) -> dict[str, Book]:
        """Every book: the Hosts', the observed BareMetalHosts' and the Nodes' own (keyed by
        their HostState's key)."""
        return {
            **self.bmh_reconciler.books,
            **self.reconciler.books,
            **self.node_reconciler.books,
        }

    # -- lifecycle ----------------------------------------------------------------------

    def start(self, *, sync_timeout: float = 60.0) -> None:
        self.start_caches(sync_timeout=sync_timeout)
        self.start_workers()

    def _informers(self) -> list[Informer | InformerSet]:
        # Hosts before Nodes: a Node is linked to a Host already known.
        found: list[Informer | InformerSet] = [self.hoststates]
        if self.config.drive_hosts:
            found += [self.secrets, self.data_secrets, self.hosts]
            if self.fleet_slots is not None:
                found.append(self.fleet_slots.leases)
        if self.config.observe_baremetalhosts:
            found.append(self.bmhs)
        if self.config.follow_nodes:
            if self.config.observe_machineconfignodes:  # before the Nodes they describe
                found += [self.mcns, self.mcps]
            found += [*self.capi_machines.informers(), self.nodepools, self.nodes]
        return found

    def start_caches(self, *, sync_timeout: float = 60.0) -> None:
        """Fill the caches (a standby replica does this too, to take over at once)."""
        for informer in self._informers():
            informer.start()
            if informer is self.hosts or informer is self.bmhs:
                informer.wait_synced(sync_timeout)
        for informer in self._informers():
            if not informer.wait_synced(sync_timeout):
                raise TimeoutError(f"cache of {informer.resource} did not sync in {sync_timeout}s")
        self.synced = True

    def start_workers(self) -> None:
        self.workers.start()
        self.self_status.start()

    def stop(self) -> None:
        self.self_status.stop()
        self.queue.shutdown()
        self.workers.join(timeout=10)
        for informer in reversed(self._informers()):
            informer.stop()
        self.lead.stop()
        self.drains.stop()

    def take_lead(self, *, sync_timeout: float = 60.0) -> None:
        """Sharded, on holding the sharder's Lease: keep the Nodes with no Host and the
        NodePools too (:mod:`.shards.lead`). The sharder's watch of every Host feeds
        :meth:`.routes.EventRoutes.on_fleet_host` from its start on."""
        self.lead.take(sync_timeout)
        for node in self.node_index.all():
            key = self.node_index.key_of(node.name)
            if key is not None and parse(key)[0] is Kind.NODE:
                self.routes.add(key)
        for key in self.lead.node_states.keys() if self.lead.node_states else ():
            self.routes.on_hoststate(key, None)  # closed, if its Node is gone or linked now
        for pool in {*self.node_index.pools(), *map(pool_of_object, self.nodepools.keys())}:
            self.routes.add(pool_key(pool))

    def __enter__(self) -> HostController:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _kinds(self) -> dict[Kind, KindOfBook]:
        """What each kind of queue key is reconciled by, and where its book is."""
        nodes = self.node_reconciler
        return {
            Kind.HOST: KindOfBook(
                self._then_its_pool(self.reconciler.reconcile, self.node_index.node_on),
                self.reconciler.books.get,
                self.hosts.version,
            ),
            Kind.NODE: KindOfBook(
                self._then_its_pool(nodes.reconcile, self.node_index.unlinked),
                lambda name: nodes.books.get(nodes.key(name)),
                self.nodes.version,
            ),
            Kind.BAREMETALHOST: KindOfBook(
                self._then_its_pool(self.bmh_reconciler.reconcile, self.node_index.node_on),
                self.bmh_reconciler.books.get,
                self.bmhs.version,
            ),
            Kind.POOL: KindOfBook(
                self.pool_reconciler.reconcile, lambda name: None, lambda name: None
            ),
        }

    def _then_its_pool(
        self,
        reconcile: Callable[[str], ReconcileResult],
        follows: Callable[[str], NodeSignals | None],
    ) -> Callable[[str], ReconcileResult]:
        """Reconcile a book, then queue its Node's pool: its step may move the counts."""

        def reconciled(name: str) -> ReconcileResult:
            outcome = reconcile(name)
            followed = follows(name)
            if followed is not None:
                self.routes.add(pool_key(followed.pool))
            return outcome

        return reconciled

    def _share(self, now: float) -> Share:
        """What this replica keeps, for its entry in the controller's status. The hosts
        being let go of are counted as their events come: reading every cached Host at
        each look parsed them all (50 MB at 2,000 hosts, the controller's peak)."""
        draining = len(self.routes.draining)
        pools = self.pool_reconciler.shares() if self.lead.sharded else ()
        return share_of(self.books.values(), self.config.stuck, now, draining=draining, pools=pools)

    # -- waiting (tests, demo) ----------------------------------------------------------

    def idle(self) -> bool:
        """Nothing queued or being reconciled, asked of the queue under its lock; not
        "reconciled": a write's watch event may yet come (:meth:`reconciled` waits for it)."""
        return self.queue.idle()

    def reconciled(self, key: str, resource_version: str) -> bool:
        """Whether a reconcile of ``key`` has finished that read the object at
        ``resource_version`` or later from the cache (:meth:`.Workers.reconciled`)."""
        return self.workers.reconciled(key, resource_version)
