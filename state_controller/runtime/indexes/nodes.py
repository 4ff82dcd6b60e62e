"""The Nodes the controller follows: what each one shows, and which book it is told in.

Kubelets update their Node every 10 s to 5 min with nothing an update is read
from (heartbeat times, images, allocatable). :meth:`NodeIndex.observe` reduces
each Node event to its :class:`~..updates.signals.NodeSignals` and answers the
work-queue keys to reconcile, or none when the signals did not change: that
filter is the whole cost of a heartbeat. A Node that leaves a pool also queues
that pool's NodePool (``pool:<pool>``).

A Node linked to a Host (see :mod:`..updates.links`) is told in the Host's
book, so its events queue the Host's key and one worker owns the book. A Node
with no Host is told in a book of its own, queued as ``node:<name>``. A Host
that appears or goes away can change a link; :meth:`NodeIndex.relink` answers
the keys whose books gain or lose their Node.

A kubelet may write its own Node's labels (NodeRestriction does not stop it), so a
link by the ``hoststate.io/host`` label, or by cluster-api-provider-metal3's
``metal3.io/uuid`` (which its kubeadm templates have the kubelet write), is only as good
as whoever wrote it last. The
index keeps the label a Node's first link by label was made with: a Node whose label
changed after that, moving it to another Host, is still followed there, but
:meth:`NodeIndex.link_doubt` says why that Host must not be power-cycled on the Node's
word (remediation asks), until the label is back or the controller restarts. The
admission policy ``hoststate-node-links`` (manifests/) keeps kubelets from writing
those labels at all; this is the second guard.
"""

from __future__ import annotations

import threading
from collections import Counter as Tally
from collections.abc import Callable, Iterable
from dataclasses import replace

from ...api.objects import Obj
from ...updates.links import host_of, label_claim, link_problem, names_read
from ...updates.pool_summary import down
from ...updates.signals import (
    DEFAULT_POOL_LABEL,
    CapiMachineSignals,
    MachineConfigNodeSignals,
    NodeSignals,
    capi_machine_signals,
    machine_config_node_signals,
    node_signals,
)
from ..machinery.keys import node_key, pool_key


def home_namespace(namespaces: tuple[str, ...] | None) -> str:
    """The namespace a bare ``hoststate.io/host`` label names a Host of: the controller's
    one watched namespace, else none (a name alone is refused; ``updates/links.py``)."""
    return namespaces[0] if namespaces is not None and len(namespaces) == 1 else ""


class NodeIndex:
    """Signals and links of every Node; safe to use from informer and worker threads."""

    def __init__(
        self,
        hosts_named: Callable[[str], Iterable[str]],
        pool_label: str = DEFAULT_POOL_LABEL,
        *,
        by_hostname: bool = False,
        watched: tuple[str, ...] | None = None,
    ) -> None:
        self._hosts_named = hosts_named
        self._pool_label = pool_label
        self._by_hostname = by_hostname  # a Node's hostname links it (an operator's opt-in)
        # the namespace a bare hoststate.io/host label names a Host of (None watched: all)
        self._home = home_namespace(watched)
        self._lock = threading.Lock()
        self._signals: dict[str, NodeSignals] = {}
        self._mcns: dict[str, MachineConfigNodeSignals] = {}  # node -> its MachineConfigNode
        # Cluster API Machines, by key; and the keys by status.nodeRef.name, by spec.providerID
        self._capi: dict[str, CapiMachineSignals] = {}
        self._capi_by_node: dict[str, str] = {}
        self._capi_by_provider: dict[str, str] = {}
        self._by_provider: dict[str, set[str]] = {}  # spec.providerID -> the Nodes that say it
        self._links: dict[str, str | None] = {}  # node -> Host key (None: followed on its own)
        self._nodes_of: dict[str, set[str]] = {}  # Host key -> linked nodes
        self._readers: dict[str, set[str]] = {}  # Host name -> nodes whose link reads it
        # node -> the label (name, value) its first link by a label was made with
        self._first_label: dict[str, tuple[str, str]] = {}
        self._pool_sizes: Tally[str] = Tally()  # pool -> its Nodes
        self._pool_not_ready: Tally[str] = Tally()  # pool -> its Nodes not Ready
        self._pool_down: Tally[str] = Tally()  # pool -> its Nodes not Ready or cordoned
        self.events = 0  # Node events seen
        self.dropped = 0  # of those, dropped by the filter: nothing a book reads changed

    # -- events ---------------------------------------------------------------------------

    def observe(self, name: str, node: Obj | None) -> set[str]:
        """Take a Node event; the keys to reconcile (none when nothing the books read changed)."""
        signals = None if node is None else node_signals(node, self._pool_label)
        with self._lock:
            if signals is not None and name in self._mcns:
                signals = replace(signals, mcn=self._mcns[name])
            if signals is not None:
                signals = replace(signals, capi=self._capi_of_locked(name, signals.provider_id))
            self.events += 1
            before = self._signals.get(name)
            if signals == before:
                self.dropped += 1
                return set()
            keys: set[str] = set()
            self._count_locked(before, -1)
            self._count_locked(signals, +1)
            self._index_provider_locked(name, before, signals)
            if before is not None:
                keys.add(self._key_locked(name))
                if signals is None or signals.pool != before.pool:
                    keys.add(pool_key(before.pool))  # a pool the Node left
                for host_name in names_read(before, by_hostname=self._by_hostname):
                    self._readers.get(host_name, set()).discard(name)
            if signals is None:
                self._signals.pop(name, None)
                self._set_link_locked(name, None)
                self._links.pop(name, None)
                self._first_label.pop(name, None)
                return keys
            self._signals[name] = signals
            for host_name in names_read(signals, by_hostname=self._by_hostname):
                self._readers.setdefault(host_name, set()).add(name)
            self._set_link_locked(name, self._link_locked(name, signals))
            keys.add(self._key_locked(name))
            return keys

    def observe_machine_config_node(self, name: str, mcn: Obj | None) -> set[str]:
        """Take a MachineConfigNode event (named as its Node); the keys to reconcile (none
        when nothing a book reads changed, or its Node is not known yet)."""
        shown = None if mcn is None else machine_config_node_signals(mcn)
        with self._lock:
            if shown is None:
                self._mcns.pop(name, None)
            else:
                self._mcns[name] = shown
            before = self._signals.get(name)
            if before is None or before.mcn == shown:
                return set()
            after = replace(before, mcn=shown)  # its pool may change: spec.pool.name
            self._count_locked(before, -1)
            self._count_locked(after, +1)
            self._signals[name] = after
            left = {pool_key(before.pool)} if after.pool != before.pool else set()
            return {self._key_locked(name), *left}

    def observe_capi_machine(self, key: str, machine: Obj | None) -> set[str]:
        """Take a Cluster API Machine event (``key`` is ``namespace/name``); the keys to
        reconcile. A Machine is read with the Node its ``status.nodeRef.name`` names, or
        before that is set, the Node with its ``spec.providerID`` (the field Cluster API
        itself finds the Node by); that Node's own link takes it to a Host."""
        shown = None if machine is None else capi_machine_signals(machine)
        with self._lock:
            old = self._capi.pop(key, None)
            touched = self._capi_nodes_locked(old)
            if old is not None:
                for table, value in (
                    (self._capi_by_node, old.node_name),
                    (self._capi_by_provider, old.provider_id),
                ):
                    if value and table.get(value) == key:
                        del table[value]
            if shown is not None:
                self._capi[key] = shown
                if shown.node_name:
                    self._capi_by_node[shown.node_name] = key
                if shown.provider_id:
                    self._capi_by_provider[shown.provider_id] = key
                touched |= self._capi_nodes_locked(shown)
            keys: set[str] = set()
            for name in sorted(touched):
                before = self._signals[name]
                now = self._capi_of_locked(name, before.provider_id)
                if now != before.capi:
                    self._signals[name] = replace(before, capi=now)
                    keys.add(self._key_locked(name))
            return keys

    def _capi_nodes_locked(self, machine: CapiMachineSignals | None) -> set[str]:
        """The known Nodes a Machine joins: by nodeRef, else by providerID."""
        if machine is None:
            return set()
        if machine.node_name:
            return {machine.node_name} & self._signals.keys()
        if not machine.provider_id:
            return set()
        return set(self._by_provider.get(machine.provider_id, ()))

    def _index_provider_locked(
        self, name: str, before: NodeSignals | None, after: NodeSignals | None
    ) -> None:
        """Keep the Nodes by ``spec.providerID``: how a Machine with no nodeRef yet finds
        its Node, at each of its events, without reading every Node."""
        if before is not None and before.provider_id:
            named = self._by_provider.get(before.provider_id, set())
            named.discard(name)
            if not named:
                self._by_provider.pop(before.provider_id, None)
        if after is not None and after.provider_id:
            self._by_provider.setdefault(after.provider_id, set()).add(name)

    def _capi_of_locked(self, name: str, provider_id: str) -> CapiMachineSignals | None:
        key = self._capi_by_node.get(name)
        if key is None and provider_id:
            key = self._capi_by_provider.get(provider_id)
            machine = self._capi.get(key) if key is not None else None
            # a Machine whose nodeRef names another Node is that Node's
            return machine if machine is not None and machine.node_name in ("", name) else None
        return self._capi.get(key) if key is not None else None

    def relink(self, host_name: str) -> set[str]:
        """A Host of this name appeared or went: the keys of the books whose Node changed."""
        keys: set[str] = set()
        with self._lock:
            for name in sorted(self._readers.get(host_name, ())):
                link = self._link_locked(name, self._signals[name])
                if link != self._links.get(name):
                    keys.add(self._key_locked(name))
                    self._set_link_locked(name, link)
                    keys.add(self._key_locked(name))
        return keys

    def _link_locked(self, name: str, signals: NodeSignals) -> str | None:
        current = self._links.get(name)
        return host_of(
            signals,
            self._hosts_named,
            by_hostname=self._by_hostname,
            current=current,
            home=self._home,
        )

    def _set_link_locked(self, name: str, link: str | None) -> None:
        old = self._links.get(name)
        if old is not None:
            self._nodes_of.get(old, set()).discard(name)
        self._links[name] = link
        if link is not None:
            self._nodes_of.setdefault(link, set()).add(name)
            signals = self._signals[name]
            claimed = label_claim(signals, by_hostname=self._by_hostname)
            if claimed[0]:
                self._first_label.setdefault(name, claimed)

    def _count_locked(self, signals: NodeSignals | None, by: int) -> None:
        if signals is not None:
            self._pool_sizes[signals.pool] += by
            if signals.ready != "True":
                self._pool_not_ready[signals.pool] += by
            if down(signals):
                self._pool_down[signals.pool] += by

    def _key_locked(self, name: str) -> str:
        link = self._links.get(name)
        return link if link is not None else node_key(name)

    # -- reading ----------------------------------------------------------------------------

    def node_on(self, host_key: str) -> NodeSignals | None:
        """The Node running on a Host; None for none, or when several claim it (a Node's
        hostname equal to another's label is a naming mistake, not two nodes on one host)."""
        with self._lock:
            names = self._nodes_of.get(host_key) or set()
            return self._signals[next(iter(names))] if len(names) == 1 else None

    def unlinked(self, name: str) -> NodeSignals | None:
        """A Node that runs on no Host (None when it is linked, or gone)."""
        with self._lock:
            if self._links.get(name) is not None:
                return None
            return self._signals.get(name)

    def link_doubt(self, name: str) -> str:
        """Why the Host a Node is linked to must not be power-cycled on that Node's word
        ("" when nothing speaks against it): the link rests on a label its kubelet may
        write (``hoststate.io/host``, ``metal3.io/uuid``) changed after the Node's first
        link by label was made."""
        with self._lock:
            signals, link = self._signals.get(name), self._links.get(name)
            first = self._first_label.get(name)
            if signals is None or link is None or first is None:
                return ""
            label, value = label_claim(signals, by_hostname=self._by_hostname)
            if not label or (label, value) == first:
                return ""
        was = repr(first[1]) if first[0] == label else f"{first[0]}={first[1]}"
        return (
            f"linked to Node {name} only by its {label} label, which changed after "
            f"the Node's first link was made (from {was} to {value!r}); a "
            "kubelet may write its own Node's labels, so that word alone power-cycles "
            "nothing: link the Node by spec.providerID, or set the label back"
        )

    def link_problem(self, name: str) -> str:
        """Why a Node's ``hoststate.io/host`` label links it to nothing, with the fix ("")."""
        with self._lock:
            signals = self._signals.get(name)
        return "" if signals is None else link_problem(signals, self._home)

    def key_of(self, name: str) -> str | None:
        """The key of the book a Node is told in; None for a Node not (or no longer) known."""
        with self._lock:
            return self._key_locked(name) if name in self._signals else None

    def pool_health(self, pool: str) -> tuple[int, int]:
        """A pool's Nodes, and how many of them are not Ready (counted as events arrive:
        asking costs nothing, however large the fleet)."""
        with self._lock:
            return self._pool_sizes[pool], self._pool_not_ready[pool]

    def pool(self, name: str) -> str:
        """The pool a Node is counted in (its MachineConfigNode's, else its labels'); ""
        for a Node not known."""
        with self._lock:
            signals = self._signals.get(name)
            return signals.pool if signals is not None else ""

    def pool_counts(self, pool: str) -> tuple[int, int]:
        """A pool's Nodes, and how many of them are not Ready or cordoned."""
        with self._lock:
            return self._pool_sizes[pool], self._pool_down[pool]

    def pools(self) -> list[str]:
        """The pools with a Node in them."""
        with self._lock:
            return [pool for pool, size in self._pool_sizes.items() if size > 0]

    def all(self) -> list[NodeSignals]:
        with self._lock:
            return list(self._signals.values())
