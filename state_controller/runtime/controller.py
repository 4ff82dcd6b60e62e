"""The host controller: informers feed a work queue, workers reconcile books.

Like a controller-runtime manager with one controller: it waits until every
cache is synced before the first reconcile (a book must never be opened
before the HostState that holds its history is in the cache), runs N workers
that never process one book twice at a time, retries errors with per-book
backoff, and arms one timer per book for stuck detection instead of sweeping.

A queue key names a book: a Host's (``namespace/name``; a Node that runs on
the Host is followed in its reconcile) or a Node's own (``node:<name>``); an observed
metal3 BareMetalHost's (``bmh:namespace/name``); or a node pool's NodePool
(``pool:<pool>``), queued after each reconcile of a book that follows a Node of the pool.
:mod:`.machinery.keys` reads a key's kind; :meth:`HostController._kinds` is the one table of
what each kind is reconciled by.

It is the one place where every source's informer meets the queue: one handler per
source and one dispatch by kind, which is why it grows by a handler for each source it
reads. The indexes the handlers ask (machines by name and UID,
Secrets to Hosts) are in :mod:`.indexes.machines`; each reconcile is in a module of its own.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from ..api import annotations as ann
from ..api.objects import Obj
from ..books.book import Book
from ..books.records import UpdateCursor
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
    split_key,
)
from ..health.share import controller_version, share_of
from ..health.summary import ProvisionerSeen, Share
from ..provisioning.machine import HostMachine
from ..provisioning.provisioner import Provisioner
from ..sharding.leases import DRAIN_LABEL, SHARD_LABEL
from ..updates.signals import NodeSignals, pool_of
from .baremetalhosts.reconciler import BareMetalHostReconciler
from .config import ControllerConfig
from .hosts.data import secrets_read
from .hosts.reconciler import HostReconciler
from .hosts.remediator import Remediator
from .indexes.machines import MachineIndex
from .indexes.nodes import NodeIndex
from .machinery.informer import Informer, InformerSet
from .machinery.keys import Kind, bmh_key, kind_of, node_key, parse, pool_key
from .machinery.outages import log_failure
from .machinery.reporting import NOWHERE, NoReporter, Reporter, Where
from .machinery.results import ReconcileResult
from .machinery.workqueue import QueueMetricsSink, WorkQueue
from .nodes.cordoned_pods import Drains
from .nodes.reconciler import NodeFollower, NodeReconciler
from .pools.reconciler import PoolReconciler, pool_of_object
from .self_status import SelfStatus
from .servicing.drainer import ServiceDrainer
from .servicing.fleet_slots import FleetSlots
from .servicing.slots import ServiceSlots
from .shards.lead import Lead
from .writing.book_writer import BookWriter

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class KindOfBook:
    """One kind of queue key: what reconciles it, and what a worker reads of it around
    that (its book, for the span; its object's cached version, for :meth:`reconciled`;
    the Node it follows, whose pool's counts may have moved)."""

    reconcile: Callable[[str], ReconcileResult]
    book: Callable[[str], Book | None]
    version: Callable[[str], int | None]
    follows: Callable[[str], NodeSignals | None]


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
        self.queue: WorkQueue[str] = WorkQueue(sink=queue_metrics, kind_of=kind_of)
        self._draining: set[str] = set()  # Hosts with the drain label (being let go of)
        state_ns = ns
        if ns and self.config.follow_nodes and self.config.node_state_namespace not in ns:
            state_ns = (*ns, self.config.node_state_namespace)  # node-only HostStates
        # sharded: only this shard's Hosts and HostStates are watched and cached
        mine = f"{SHARD_LABEL}={self.config.shard}" if self.config.shard else ""
        self.hosts = InformerSet(cluster, HOSTS, ns, handlers=[self._on_host], label_selector=mine)
        self.hoststates = InformerSet(
            cluster, HOSTSTATES, state_ns, handlers=[self._on_hoststate], label_selector=mine
        )
        # only the Secrets labelled as BMC credentials: no other Secret is read or cached
        self.secrets = InformerSet(
            cluster,
            SECRETS,
            ns,
            handlers=[self._on_secret],
            label_selector=ann.BMC_CREDENTIALS_SELECTOR,
        )
        # and those labelled as data for a deployed OS (userData, networkData, metaData)
        self.data_secrets = InformerSet(
            cluster,
            SECRETS,
            ns,
            handlers=[self._on_secret],
            label_selector=ann.HOST_DATA_SELECTOR,
        )
        self.machines = MachineIndex(lambda key: self.hosts.get(key) is not None)
        sharded = bool(self.config.shard) and self.config.follow_nodes
        self.lead = Lead(
            cluster,
            sharded=sharded,
            node_state_namespace=self.config.node_state_namespace,
            on_node_state=self._on_hoststate,
        )
        self.node_index = NodeIndex(
            lambda name: self.lead.named(self.machines.named(name), name),
            self.config.pool_label,
            by_hostname=self.config.link_nodes_by_hostname,
            watched=self.config.namespaces,
        )
        self.drains = Drains(cluster, self._on_pods)
        # built always, started only when Nodes are followed (no node:/pool: key otherwise)
        self.nodes = Informer(cluster, NODES, None, handlers=[self._on_node])
        self.nodepools = Informer(cluster, NODEPOOLS, None, handlers=[self._on_nodepool])
        self.mcns = Informer(cluster, MACHINECONFIGNODES, None, handlers=[self._on_mcn])
        self.mcps = Informer(cluster, MACHINECONFIGPOOLS, None, handlers=[self._on_mcp])
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
                BookWriter(cluster, node_states, self.config, self.reporter)
                if node_states is not self.hoststates
                else self.reconciler.writer
            ),
            config=self.config,
            clock=clock,
        )
        # built always, started only when BareMetalHosts are observed
        self.bmhs = InformerSet(cluster, BAREMETALHOSTS, ns, handlers=[self._on_bmh])
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
            update_of=self._update_of,
            writer=self.reconciler.writer,
            label=self.config.pool_label,
            interval=self.config.pool_status_interval,
            machine_config_pools=self.mcps if self.config.observe_machineconfignodes else None,
            counts_grace=self.config.pool_counts_grace,
            others=lambda name: self.self_status.pool_shares(name),
            clock=clock,
        )
        self.kinds = self._kinds()  # one dispatch by the kind of a queue key
        self._workers: list[threading.Thread] = []
        self.active_workers: Counter[str] = Counter()  # by kind of the key worked on
        self.reconciles = 0
        # key -> the newest resourceVersion a finished reconcile of it read from the cache,
        # for the objects the cache holds (a reconcile that finds one gone drops its key)
        self._reconciled: dict[str, int] = {}
        self._counts_lock = threading.Lock()  # += on an attribute is not atomic across threads
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
            on_pools=self._on_pool_shares,
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
            found += [self.nodepools, self.nodes]
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
        for index in range(self.config.workers):
            worker = threading.Thread(target=self._work, name=f"worker-{index}", daemon=True)
            worker.start()
            self._workers.append(worker)
        self.self_status.start()

    def stop(self) -> None:
        self.self_status.stop()
        self.queue.shutdown()
        for worker in self._workers:
            worker.join(timeout=10)
        for informer in reversed(self._informers()):
            informer.stop()
        self.lead.stop()
        self.drains.stop()

    def take_lead(self, *, sync_timeout: float = 60.0) -> None:
        """Sharded, on holding the sharder's Lease: keep the Nodes with no Host and the
        NodePools too (:mod:`.shards.lead`). The sharder's watch of every Host feeds
        :meth:`on_fleet_host` from its start on."""
        self.lead.take(sync_timeout)
        for node in self.node_index.all():
            key = self.node_index.key_of(node.name)
            if key is not None and parse(key)[0] is Kind.NODE:
                self._add(key)
        for key in self.lead.node_states.keys() if self.lead.node_states else ():
            self._on_hoststate(key, None)  # closed, if its Node is gone or linked now
        for pool in {*self.node_index.pools(), *map(pool_of_object, self.nodepools.keys())}:
            self._add(pool_key(pool))

    def on_fleet_host(self, key: str, host: Obj | None) -> None:
        """A Host of any shard came, changed or went (the sharder's watch, in the lead):
        a Node may now run on a Host, or on none."""
        self._relink(self.lead.fleet.machine(key, host))

    def __enter__(self) -> HostController:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- event handlers: they only enqueue ----------------------------------------------

    def _on_host(self, key: str, host: Obj | None) -> None:
        self.machines.secret(key, secrets_read(host))
        if host is not None and DRAIN_LABEL in (host["metadata"].get("labels") or {}):
            self._draining.add(key)
        else:
            self._draining.discard(key)
        if host is None:
            self.slots.forget(key)
        self.queue.add(key)
        self._relink(self.machines.machine(key, host))

    def _on_bmh(self, key: str, bmh: Obj | None) -> None:
        relink = self.machines.machine(key, bmh, observed=True)
        self.queue.add(bmh_key(key))
        self._relink(relink)

    def _relink(self, names: list[str]) -> None:
        """Machines of these names came or went: a Node may link anew."""
        for name in names:
            for linked in self.node_index.relink(name):
                self._add(self._queue_key(linked))

    def _queue_key(self, key: str) -> str:
        """The queue key of a book a Node is linked to: a Host's is its own; an observed
        BareMetalHost's (with no Host of that key) is ``bmh:`` and the key."""
        return bmh_key(key) if self.machines.observed(key) else key

    def _add(self, key: str) -> None:
        """Queue a key the Nodes led to, if it is this replica's to reconcile (sharded:
        its own Hosts; Nodes with no Host and NodePools only as the lead)."""
        if self.lead.admits(key, own_host=self.machines.is_host(key)):
            self.queue.add(key)

    def _on_hoststate(self, key: str, state: Obj | None) -> None:
        if self.machines.is_host(key):
            self.queue.add(key)
            return
        if self.config.observe_baremetalhosts and self.bmhs.get(key) is not None:
            self.queue.add(bmh_key(key))
            return
        namespace, name = split_key(key)
        if namespace == self.config.node_state_namespace and self.node_index.key_of(name):
            self._add(node_key(name))  # a node-only HostState (the book key says whose)

    def _on_node(self, name: str, node: Obj | None) -> None:
        """Only a change of what a book reads from a Node goes further than this."""
        keys = self.node_index.observe(name, node)
        if not keys:
            return  # a heartbeat: not even the cordon changed
        for key in keys:
            self._add(self._queue_key(key))
        if self.remediator is not None and node is not None:
            pool = pool_of(node["metadata"].get("labels") or {}, self.config.pool_label)
            for held in self.remediator.held_in(pool):
                self.queue.add(held)
        cordoned = node is not None and bool((node.get("spec") or {}).get("unschedulable"))
        self.drains.follow(name, cordoned)

    def _on_mcn(self, name: str, mcn: Obj | None) -> None:
        for key in self.node_index.observe_machine_config_node(name, mcn):
            self._add(self._queue_key(key))

    def _on_mcp(self, name: str, mcp: Obj | None) -> None:
        self._add(pool_key(name))  # the NodePool of the same name shows its counts

    def _on_nodepool(self, name: str, pool: Obj | None) -> None:
        self._add(pool_key(pool_of_object(name)))  # ours to write

    def _on_pool_shares(self, names: set[str]) -> None:
        for name in names:  # another shard's part of these NodePools changed
            self._add(pool_key(pool_of_object(name)))

    def _on_pods(self, node: str) -> None:
        key = self.node_index.key_of(node)
        if key is not None:
            self._add(self._queue_key(key))

    def _on_secret(self, key: str, secret: Obj | None) -> None:
        for host in self.machines.readers(key):
            self.queue.add(host)

    # -- workers ------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            kind = kind_of(key)
            with self._counts_lock:
                self.active_workers[kind] += 1
            seen = self._cached_version(key)  # what this reconcile reads, at the latest
            started = time.perf_counter()
            with self.reporter.reconcile_span(key) as span:
                before = self._where(key) if span.recording else NOWHERE
                failure = None
                try:
                    outcome = self._reconcile(key)
                except Exception as err:
                    log_failure(
                        log,
                        err,
                        "reconcile of %s failed; retrying with backoff",
                        key,
                        extra={"host": key, "state": self._where(key).state},
                    )
                    self.queue.add_rate_limited(key)
                    result, failure = "error", err
                else:
                    result = self._requeue(key, outcome)
                finally:
                    with self._counts_lock:
                        self.active_workers[kind] -= 1
                        self.reconciles += 1
                        if seen is None:  # gone from the cache: nothing left to tell
                            self._reconciled.pop(key, None)
                        elif seen > self._reconciled.get(key, -1):
                            self._reconciled[key] = seen
                    self.queue.done(key)
                if span.recording:
                    span.finish(result, before, self._where(key), failure)
                self.reporter.reconciled(kind, result, time.perf_counter() - started)

    def _kinds(self) -> dict[Kind, KindOfBook]:
        """What each kind of queue key is reconciled by, and where its book is."""
        nodes = self.node_reconciler
        return {
            Kind.HOST: KindOfBook(
                self.reconciler.reconcile,
                self.reconciler.books.get,
                self.hosts.version,
                self.node_index.node_on,
            ),
            Kind.NODE: KindOfBook(
                nodes.reconcile,
                lambda name: nodes.books.get(nodes.key(name)),
                self.nodes.version,
                self.node_index.unlinked,
            ),
            Kind.BAREMETALHOST: KindOfBook(
                self.bmh_reconciler.reconcile,
                self.bmh_reconciler.books.get,
                self.bmhs.version,
                self.node_index.node_on,
            ),
            Kind.POOL: KindOfBook(
                self.pool_reconciler.reconcile,
                lambda name: None,
                lambda name: None,
                lambda name: None,
            ),
        }

    def _reconcile(self, key: str) -> ReconcileResult:
        kind, name = parse(key)
        handler = self.kinds[kind]
        outcome = handler.reconcile(name)
        followed = handler.follows(name)
        if followed is not None:  # its step may have moved: the pool's counts too
            self._add(pool_key(followed.pool))
        return outcome

    def _where(self, key: str) -> Where:
        """The state (and update step) of the book a key reconciles, for its span."""
        kind, name = parse(key)
        book = self.kinds[kind].book(name)
        if book is None:
            return Where()
        update = book.node_update()
        return Where(book.cursor.state.value, update.step.value if update is not None else "")

    def _update_of(self, node: str) -> UpdateCursor | None:
        """A Node's update, from the book it is told in (None: not read yet)."""
        key = self.node_index.key_of(node)
        if key is None:
            return None
        kind, name = parse(self._queue_key(key))
        book = self.kinds[kind].book(name)
        return book.update if book is not None and book.facts.node == node else None

    def _requeue(self, key: str, outcome: ReconcileResult) -> str:
        result = "success"
        if outcome.rate_limited:
            self.queue.add_rate_limited(key)
            result = "requeue"
        else:
            self.queue.forget(key)
            if outcome.requeue_after is not None:
                self.queue.add_after(key, outcome.requeue_after)
                result = "requeue" if outcome.requeue_after <= 0 else "requeue_after"
        if outcome.wake_after is not None:
            self.queue.add_after(key, outcome.wake_after + 0.001)
        return result

    def _share(self, now: float) -> Share:
        """What this replica keeps, for its entry in the controller's status. The hosts
        being let go of are counted as their events come: reading every cached Host at
        each look parsed them all (50 MB at 2,000 hosts, the controller's peak)."""
        draining = len(self._draining)
        pools = self.pool_reconciler.shares() if self.lead.sharded else ()
        return share_of(self.books.values(), self.config.stuck, now, draining=draining, pools=pools)

    # -- waiting (tests, demo) ----------------------------------------------------------

    def idle(self) -> bool:
        """Nothing queued and nothing being reconciled, asked of the queue under its lock.
        Not "reconciled": a write's watch event may not have arrived yet; wait on
        :meth:`reconciled` for that."""
        return self.queue.idle()

    def reconciled(self, key: str, resource_version: str) -> bool:
        """Whether a reconcile of ``key`` has finished that read the object at
        ``resource_version`` or later from the cache: the write under test was seen and
        acted on (or deliberately not)."""
        with self._counts_lock:
            done = self._reconciled.get(key, -1)
        return done >= int(resource_version)  # integers, as the informer relies on too

    def _cached_version(self, key: str) -> int | None:
        """The resourceVersion of the object ``key`` names, in the cache now: the cache's
        own number, no object parsed (this runs for every reconcile)."""
        kind, name = parse(key)
        return self.kinds[kind].version(name)
