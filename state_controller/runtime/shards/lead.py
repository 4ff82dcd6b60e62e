"""Sharded, what belongs to no shard: the Nodes that run on no Host, and the NodePools.

A Host's shard is its label; a Node linked to a Host is told in that Host's book, by its
shard. A Node with no Host, and a NodePool (whose Nodes run on the Hosts of every
shard), have no label to go by: they are kept by the **lead**, the replica that holds
the sharder's Lease. Losing that Lease ends the process, as losing a shard's does, so
there is never more than one lead acting.

To know that a Node runs on no Host at all (not only on none of its own), the lead links
Nodes against every Host: the sharder watches them all, and its events fill
:attr:`Lead.fleet` (names and UIDs, never objects). The node-only HostStates are cached
by an informer of their own in the controller's namespace (selected by their label,
``hoststate.io/node``), started when the replica becomes the lead, so a new lead opens
their books from them as a shard opens its Hosts'. The NodePools' counts add up every
shard's part of them, published in the controller's status
(:meth:`~..pools.reconciler.PoolReconciler.shares`).

Not sharded, the one replica is the lead from the start, and the fleet is its own.
"""

from __future__ import annotations

import threading

from ...cluster.interface import HOSTSTATES, Cluster
from ..indexes.machines import MachineIndex
from ..machinery.informer import Handler, InformerSet
from ..machinery.keys import Kind, parse
from ..nodes.reconciler import NODE_LABEL


class Lead:
    def __init__(
        self,
        cluster: Cluster,
        *,
        sharded: bool,
        node_state_namespace: str,
        on_node_state: Handler,
    ) -> None:
        self.sharded = sharded
        self._held = threading.Event()
        if not sharded:
            self._held.set()
        # every Host's name and UID, from the sharder's watch (filled only in the lead)
        self.fleet = MachineIndex(lambda key: False)
        # the node-only HostStates: sharded, no shard's label selects them
        self.node_states = (
            InformerSet(
                cluster,
                HOSTSTATES,
                (node_state_namespace,),
                handlers=[on_node_state],
                label_selector=NODE_LABEL,
            )
            if sharded
            else None
        )
        self._started = False

    def held(self) -> bool:
        return self._held.is_set()

    def take(self, sync_timeout: float) -> None:
        """Become the lead: fill the node-only HostStates' cache first (a book is never
        opened before the HostState that holds its history is cached)."""
        if self.node_states is not None and not self._started:
            self._started = True
            self.node_states.start()
            if not self.node_states.wait_synced(sync_timeout):
                raise TimeoutError(f"cache of node-only HostStates did not sync in {sync_timeout}s")
        self._held.set()

    def stop(self) -> None:
        if self.node_states is not None and self._started:
            self.node_states.stop()

    def admits(self, key: str, *, own_host: bool) -> bool:
        """Whether this replica reconciles ``key``: a Node's own book or a NodePool only as
        the lead; a Host only if it is its own (the lead links Nodes to every Host, so it
        meets the keys of other shards' Hosts)."""
        if not self.sharded:
            return True
        if parse(key)[0] in (Kind.NODE, Kind.POOL):
            return self.held()
        return own_host

    def named(self, own: list[str], name: str) -> list[str]:
        """The keys of the machines of this name: this replica's own, and as the lead every
        shard's."""
        if not self.sharded:
            return own
        fleet = self.fleet.named(name)
        return sorted(set(own) | set(fleet)) if fleet else own
