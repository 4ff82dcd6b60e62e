"""Whom an event concerns: one handler per watched source, and each only queues keys.

Every informer's handler is here, so that the one place a change enters the queue reads
as one table of sources: a Host, a BareMetalHost, a HostState, a Node, a
MachineConfigNode or MachineConfigPool, a Cluster API Machine, a NodePool, another
shard's share of a pool, a cordoned node's pods, a Secret. What they ask to know whom a
change concerns (the machines by name and UID, the Secrets Hosts read, the Nodes and
their links) is in :mod:`.indexes`; what a key then means is :mod:`.machinery.keys`'s to
say.

Sharded, a key the Nodes lead to is queued only if it is this replica's to reconcile
(:meth:`.shards.lead.Lead.admits`): its own Hosts, and Nodes with no Host and NodePools
only as the lead.
"""

from __future__ import annotations

from collections.abc import Callable

from ..api.objects import Obj
from ..cluster.interface import split_key
from ..sharding.leases import DRAIN_LABEL
from .config import ControllerConfig
from .hosts.data import secrets_read
from .hosts.remediator import Remediator
from .indexes.machines import MachineIndex
from .indexes.nodes import NodeIndex
from .machinery.keys import bmh_key, node_key, pool_key
from .machinery.workqueue import WorkQueue
from .nodes.cordoned_pods import Drains
from .pools.reconciler import pool_of_object
from .servicing.slots import ServiceSlots
from .shards.lead import Lead


class EventRoutes:
    def __init__(
        self,
        config: ControllerConfig,
        queue: WorkQueue[str],
        *,
        machines: MachineIndex,
        node_index: NodeIndex,
        lead: Lead,
        slots: ServiceSlots,
        drains: Drains,
        remediator: Remediator | None,
        bmh_cached: Callable[[str], bool],
    ) -> None:
        self.config = config
        self.queue = queue
        self.machines = machines
        self.node_index = node_index
        self.lead = lead
        self.slots = slots
        self.drains = drains
        self.remediator = remediator
        self.bmh_cached = bmh_cached  # is an observed BareMetalHost of this key cached
        self.draining: set[str] = set()  # Hosts with the drain label (being let go of)

    # -- what keys mean ------------------------------------------------------------------

    def add(self, key: str) -> None:
        """Queue a key the Nodes led to, if it is this replica's to reconcile."""
        if self.lead.admits(key, own_host=self.machines.is_host(key)):
            self.queue.add(key)

    def queue_key(self, key: str) -> str:
        """The queue key of a book a Node is linked to: a Host's is its own; an observed
        BareMetalHost's (with no Host of that key) is ``bmh:`` and the key."""
        return bmh_key(key) if self.machines.observed(key) else key

    def relink(self, names: list[str]) -> None:
        """Machines of these names came or went: a Node may link anew."""
        for name in names:
            for linked in self.node_index.relink(name):
                self.add(self.queue_key(linked))

    # -- one handler per source ----------------------------------------------------------

    def on_host(self, key: str, host: Obj | None) -> None:
        self.machines.secret(key, secrets_read(host))
        if host is not None and DRAIN_LABEL in (host["metadata"].get("labels") or {}):
            self.draining.add(key)
        else:
            self.draining.discard(key)
        if host is None:
            self.slots.forget(key)
        self.queue.add(key)
        self.relink(self.machines.machine(key, host))

    def on_fleet_host(self, key: str, host: Obj | None) -> None:
        """A Host of any shard came, changed or went (the sharder's watch, in the lead):
        a Node may now run on a Host, or on none."""
        self.relink(self.lead.fleet.machine(key, host))

    def on_bmh(self, key: str, bmh: Obj | None) -> None:
        relink = self.machines.machine(key, bmh, observed=True)
        self.queue.add(bmh_key(key))
        self.relink(relink)

    def on_hoststate(self, key: str, state: Obj | None) -> None:
        if self.machines.is_host(key):
            self.queue.add(key)
            return
        if self.config.observe_baremetalhosts and self.bmh_cached(key):
            self.queue.add(bmh_key(key))
            return
        namespace, name = split_key(key)
        if namespace == self.config.node_state_namespace and self.node_index.key_of(name):
            self.add(node_key(name))  # a node-only HostState (the book key says whose)

    def on_node(self, name: str, node: Obj | None) -> None:
        """Only a change of what a book reads from a Node goes further than this."""
        was = self.node_index.pool(name) if self.node_index.key_of(name) else None
        keys = self.node_index.observe(name, node)
        if not keys:
            return  # a heartbeat: not even the cordon changed
        for key in keys:
            self.add(self.queue_key(key))
        self.wake_held(name, was, gone=node is None)
        cordoned = node is not None and bool((node.get("spec") or {}).get("unschedulable"))
        self.drains.follow(name, cordoned)

    def on_mcn(self, name: str, mcn: Obj | None) -> None:
        """A MachineConfigNode's ``spec.pool.name`` is its Node's pool: a change of it
        moves the Node between pools as a change of its role labels does."""
        was = self.node_index.pool(name) if self.node_index.key_of(name) else None
        keys = self.node_index.observe_machine_config_node(name, mcn)
        for key in keys:
            self.add(self.queue_key(key))
        if keys:
            self.wake_held(name, was, gone=False)

    def on_capi_machine(self, key: str, machine: Obj | None) -> None:
        """A Cluster API Machine's in-place update is its Node's: the book of the Node it
        joins is reconciled (and remediation looks again at a host it held for it)."""
        for book_key in self.node_index.observe_capi_machine(key, machine):
            self.add(self.queue_key(book_key))

    def wake_held(self, name: str, was: str | None, *, gone: bool) -> None:
        """Queue the hosts remediation holds in the pool of a Node that changed, and in
        the pool it left (``was``): its change may free them (:meth:`.Remediator.held_in`)."""
        if self.remediator is None:
            return
        pools = [] if gone else [self.node_index.pool(name)]
        if was is not None and was not in pools:
            pools.append(was)
        for pool in pools:
            for held in self.remediator.held_in(pool):
                self.queue.add(held)

    def on_mcp(self, name: str, mcp: Obj | None) -> None:
        self.add(pool_key(name))  # the NodePool of the same name shows its counts

    def on_nodepool(self, name: str, pool: Obj | None) -> None:
        self.add(pool_key(pool_of_object(name)))  # ours to write

    def on_pool_shares(self, names: set[str]) -> None:
        for name in names:  # another shard's part of these NodePools changed
            self.add(pool_key(pool_of_object(name)))

    def on_pods(self, node: str) -> None:
        key = self.node_index.key_of(node)
        if key is not None:
            self.add(self.queue_key(key))

    def on_secret(self, key: str, secret: Obj | None) -> None:
        for host in self.machines.readers(key):
            self.queue.add(host)
