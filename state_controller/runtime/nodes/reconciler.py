"""Reconcile what a Node shows into the book it is told in.

A Node linked to a Host is followed inside the Host's reconcile
(:meth:`NodeFollower.follow`, called by the host reconciler after the
machine's step), so a host has one book and one worker at a time. A Node with
no Host is reconciled here, in a node-only book whose HostState lives in the
controller's namespace, named after the Node and owned by it (so the garbage
collector removes it with the Node). Such a HostState lasts while its Node runs
on no Host: when the Node goes, or a Host for it appears, the book closes and
the HostState is deleted (the Host's own HostState tells the story from then
on).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

from ...api.objects import Obj
from ...books.book import Book
from ...books.restore import confirmed_seq, restore
from ...cluster.interface import HOSTSTATES, Cluster, NotFound
from ...updates.agreement import disagreement
from ...updates.progression import progress
from ...updates.signals import NodeSignals
from ..config import ControllerConfig
from ..indexes.nodes import NodeIndex
from ..machinery.informer import Informer, InformerSet
from ..machinery.results import DONE, ReconcileResult
from ..writing.book_writer import BookWriter, hoststate_body
from ..writing.delivery import Delivery
from .cordoned_pods import Drains

log = logging.getLogger(__name__)

NODE_LABEL = "hoststate.io/node"
LINK_REFUSED = "NodeLinkRefused"  # Event: a bare hoststate.io/host name links nothing
LINK_DOUBTED = "NodeLinkDoubted"  # Event: a relabelled Node is not remediated on its word
NAMESPACE_RETRY = 30.0  # seconds: a missing node_state_namespace is looked for again


class NodeFollower:
    """Brings a book's update cursor to what its Node shows."""

    def __init__(self, nodes: NodeIndex, drains: Drains) -> None:
        self.nodes = nodes
        self.drains = drains
        self._warned: dict[str, str] = {}  # book key -> the link warning last told in it

    def follow(self, book: Book, node: NodeSignals | None, now: float) -> None:
        """Record the book's Node (or that it has none) and the step its update is at."""
        if node is None:
            book.note(now=now, node="", pool="")
        else:
            book.note(now=now, node=node.name, pool=node.pool)
        book.note_seen(now=now, sources_disagree=disagreement(node) if node is not None else None)
        if node is not None:
            progress(book, node, self.drains.status(node.name), now)
        self._warn_of_link(book, node, now)

    def forget(self, key: str) -> None:
        """A book closed: nothing of it is kept."""
        self._warned.pop(key, None)

    def _warn_of_link(self, book: Book, node: NodeSignals | None, now: float) -> None:
        """A Warning Event, once per change, when the Node's link is refused (a bare
        ``hoststate.io/host`` name) or in doubt (its label moved it here)."""
        reason, warning = "", ""
        if node is not None:
            if doubt := self.nodes.link_doubt(node.name):
                reason, warning = LINK_DOUBTED, f"the Host is {doubt}"
            elif problem := self.nodes.link_problem(node.name):
                reason, warning = LINK_REFUSED, problem
        if warning == self._warned.get(book.key, ""):
            return
        if warning:
            self._warned[book.key] = warning
            book.notice("Warning", reason, warning, now=now)
        else:
            self._warned.pop(book.key, None)


class NodeReconciler:
    def __init__(
        self,
        cluster: Cluster,
        *,
        hosts: Informer | InformerSet,
        hoststates: Informer | InformerSet,
        follower: NodeFollower,
        writer: BookWriter,
        config: ControllerConfig,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cluster = cluster
        self.hosts, self.hoststates = hosts, hoststates
        self.follower = follower
        self.writer = writer
        self.config = config
        self.clock = clock
        self.books: dict[str, Book] = {}
        self.deliveries: dict[str, Delivery] = {}
        self._collisions: set[str] = set()
        self._namespace_missing = False  # told that node_state_namespace does not exist

    def key(self, name: str) -> str:
        """The node-only HostState's key: the controller's namespace, the Node's name."""
        return f"{self.config.node_state_namespace}/{name}"

    def reconcile(self, name: str) -> ReconcileResult:
        key = self.key(name)
        node = self.follower.nodes.unlinked(name)
        if node is None:  # gone, or runs on a Host now
            self._close(key, name)
            return DONE
        if self.hosts.get(key) is not None:
            if key not in self._collisions:
                self._collisions.add(key)
                log.warning(
                    "node %s runs on no Host, but a Host %s holds the HostState name it would "
                    "get; not followed until it is linked (label it hoststate.io/host)",
                    name,
                    key,
                )
            return DONE
        now = self.clock()
        book, delivery = self._open(key, name, now)
        self.follower.follow(book, node, now)
        self.writer.notice_timers(book, delivery, now)
        creating = self.hoststates.get(key) is None
        try:
            state = self.writer.write_hoststate(key, book, delivery, now, lambda: _body(key, node))
        except NotFound:
            if not creating:
                raise
            self._tell_namespace_missing()  # a create is refused so only for its namespace
            return ReconcileResult(requeue_after=NAMESPACE_RETRY)
        self._namespace_missing = False
        self.writer.report(state, book, delivery)
        return ReconcileResult(wake_after=self.writer.wake_after(book, now))

    def _tell_namespace_missing(self) -> None:
        """One line, once (again only after a HostState could be written there since),
        saying what to do: not a traceback at every reconcile of every lone Node."""
        if self._namespace_missing:
            return
        self._namespace_missing = True
        namespace = self.config.node_state_namespace
        log.error(
            "the namespace %s for the HostStates of Nodes that run on no Host does not exist: "
            "create it (kubectl create namespace %s) or set --node-state-namespace to one that "
            "does; those Nodes are not reported until then (tried again every %.0f s)",
            namespace,
            namespace,
            NAMESPACE_RETRY,
        )

    def _open(self, key: str, name: str, now: float) -> tuple[Book, Delivery]:
        book, delivery = self.books.get(key), self.deliveries.get(key)
        if book is not None and delivery is not None:
            return book, delivery
        state = self.hoststates.get(key)
        status = state.get("status") if state else None
        book = restore(
            key, None, status, now=now, limits=self.config.limits, node=name, node_only=True
        )
        delivery = Delivery(confirmed_seq=confirmed_seq(status), reported=book.journal.end)
        self.books[key], self.deliveries[key] = book, delivery
        return book, delivery

    def _close(self, key: str, name: str) -> None:
        self.books.pop(key, None)
        self.follower.forget(key)
        self.deliveries.pop(key, None)
        state = self.hoststates.get(key)
        if state is None or (state.get("spec") or {}).get("host"):
            return  # none, or not a node-only one
        if (state.get("spec") or {}).get("node") != name:
            return
        with contextlib.suppress(NotFound):  # already gone
            self.cluster.delete(HOSTSTATES, *key.split("/", 1))
        self.hoststates.forget(key)


def _body(key: str, node: NodeSignals) -> Obj:
    namespace, _, name = key.partition("/")
    owner = {"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": node.uid}
    spec = {"host": "", "node": name}
    return hoststate_body(namespace, name, spec=spec, label=NODE_LABEL, owner=owner)
