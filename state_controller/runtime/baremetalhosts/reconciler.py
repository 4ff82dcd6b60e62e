"""Reconcile one observed metal3 BareMetalHost: read it, record what changed, report.

baremetal-operator drives the machine; this reconciler only tells its story, through
the same book, HostState, metrics, Events and stuck detection as a driven Host:

1. The BareMetalHost is read from the cache and never written, nor anything else of
   metal3's (the RBAC of the observe mode has no verb that could).
2. Its book is rebuilt, on first use, from its HostState alone
   (:func:`~..books.restore.observed_host_status`), so a restart records nothing new;
   and again when the HostState holds records the book does not (handed back to
   baremetal-operator after a handover, with what the Host's controller added).
3. :func:`~..observed.baremetalhost.observe` records what the BareMetalHost shows that
   the book does not hold; the goal (``Ready``) follows its spec as BMO reads it. Its
   Node (linked by cluster-api-provider-metal3's ``spec.providerID``, or the
   ``hoststate.io/host`` label) is followed in the same book: its updates are
   chapters of the same history.
4. The HostState (same namespace and name, owned by the BareMetalHost so it goes with
   it) is written when its projection differs; Events are told about the BareMetalHost.
5. For ``clusterctl move``: while the BareMetalHost is paused its HostState's status is
   kept in the HostState's annotation, and none is created for it
   (:mod:`..writing.saved_status`); one that arrived with no status is read from
   baremetal-operator's status annotation (:func:`as_restored`); one clusterctl is
   deleting from here (``delete-for-move``) is not told: it lives on elsewhere.

A Host of the same namespace and name is driven by this controller, and its story is
the Host's: the BareMetalHost is then not reported on (a handover in progress), except
that its pause taken away is told (:mod:`.handed_over`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from ...api import annotations as ann
from ...api.baremetalhost import API_VERSION, KIND, PAUSED
from ...api.objects import Obj
from ...api.states import ProvisioningState
from ...books.book import Book
from ...books.restore import confirmed_seq, observed_host_status, restore
from ...observed.baremetalhost import bmo_words, observe
from ..config import ControllerConfig
from ..machinery.informer import Informer, InformerSet
from ..machinery.results import DONE, ReconcileResult
from ..nodes.reconciler import NodeFollower
from ..writing.book_writer import BookWriter, hoststate_body
from ..writing.delivery import Delivery
from ..writing.saved_status import SavedStatus
from .handed_over import UnpauseWatch

log = logging.getLogger(__name__)

STATUS = "baremetalhost.metal3.io/status"  # baremetal-operator's StatusAnnotation (v0.13.2)


class BareMetalHostReconciler:
    def __init__(
        self,
        *,
        bmhs: Informer | InformerSet,
        hosts: Informer | InformerSet | None,
        hoststates: Informer | InformerSet,
        writer: BookWriter,
        config: ControllerConfig,
        nodes: NodeFollower | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.bmhs, self.hosts, self.hoststates = bmhs, hosts, hoststates
        self.writer = writer
        self.nodes = nodes  # None: no Node is followed
        self.config = config
        self.clock = clock
        self.books: dict[str, Book] = {}
        self.deliveries: dict[str, Delivery] = {}
        self.unpaused = UnpauseWatch(writer.reporter, clock)
        self.saved = SavedStatus(writer.cluster, hoststates, writer.statuses)

    def reconcile(self, key: str) -> ReconcileResult:
        bmh = self.bmhs.get(key)
        if self.hosts is not None:  # a handed-over one unpaused: two controllers, one machine
            self.unpaused.look(key, bmh, self.hosts.get(key))
        if bmh is None or not self._tells(key) or self._not_now(key, bmh):
            self.books.pop(key, None)
            self.deliveries.pop(key, None)
            return DONE  # gone (its HostState goes with it), or a Host of ours tells it
        now = self.clock()
        book, delivery = self._open(key, now)
        observe(book, as_restored(bmh), now)
        _log_bmo_words(key, bmh, delivery, bmo_words(bmh))
        book.note(now=now, observed_generation=_generation(bmh))
        book.note_seen(now=now, goal=goal_of(bmh))
        if self.nodes is not None:  # its Node's updates: chapters of the same story
            self.nodes.follow(book, self.nodes.nodes.node_on(key), now)
        self.writer.notice_timers(book, delivery, now)
        state = self.writer.write_hoststate(key, book, delivery, now, lambda: _hoststate_of(bmh))
        notes = bmh["metadata"].get("annotations") or {}
        if PAUSED in notes:
            self.saved.keep(key, notes)  # the HostState's status, for a move that drops it
        else:
            self.saved.drop_spent(key, state)
        self.writer.report(bmh, book, delivery)
        return ReconcileResult(None, False, self.writer.wake_after(book, now))

    def _tells(self, key: str) -> bool:
        """Whether this BareMetalHost's story is told here: not once a Host of the same
        name drives the machine, nor once its HostState was handed to one (``adopt``)."""
        if self.hosts is not None and self.hosts.get(key) is not None:
            return False
        state = self.hoststates.get(key)
        return state is None or bool((state.get("spec") or {}).get("bareMetalHost"))

    def _not_now(self, key: str, bmh: Obj) -> bool:
        """Not told while clusterctl deletes it from this cluster (it lives on in the
        target), nor while it is paused with no HostState here: a paused host's HostState
        is never created, as one arriving by a move is on its way with its history, and
        one deleted for a move must not come back."""
        notes = bmh["metadata"].get("annotations") or {}
        if ann.DELETE_FOR_MOVE in notes:
            return True
        return PAUSED in notes and self.hoststates.get(key) is None

    def _open(self, key: str, now: float) -> tuple[Book, Delivery]:
        book, delivery = self.books.get(key), self.deliveries.get(key)
        state = self.hoststates.get(key)
        stored = self.saved.status_of(key, state)  # its own, or what a move carried
        # a HostState that holds more than this book was written by another (a Host it
        # was handed over to, and handed back from): its story goes on from there
        if book is not None and delivery is not None and confirmed_seq(stored) <= book.last_seq:
            return book, delivery
        node = str(((state or {}).get("spec") or {}).get("node") or "")
        book = restore(
            key,
            observed_host_status(stored) if stored else None,
            stored,
            now=now,
            limits=self.config.limits,
            node=node,
        )
        delivery = Delivery(confirmed_seq=confirmed_seq(stored), reported=book.journal.end)
        self.books[key], self.deliveries[key] = book, delivery
        return book, delivery


def as_restored(bmh: Obj) -> Obj:
    """The BareMetalHost as baremetal-operator will restore it: one with no status (none
    has its ``lastUpdated``: ``hostHasStatus``) read from its
    ``baremetalhost.metal3.io/status`` annotation, as ``reconcileHostData`` restores it
    (v0.13.2, ``internal/controller/metal3.io/baremetalhost_controller.go``); Cluster API
    Provider Metal3 writes that annotation as it pauses the host for a move. Else a host
    just moved in would read as one with no state at all."""
    if (bmh.get("status") or {}).get("lastUpdated"):
        return bmh
    raw = (bmh["metadata"].get("annotations") or {}).get(STATUS)
    try:
        saved = json.loads(raw) if raw else None
    except ValueError:
        return bmh
    return {**bmh, "status": saved} if isinstance(saved, dict) else bmh


def _log_bmo_words(key: str, bmh: Obj, delivery: Delivery, said: str) -> None:
    """BMO's ``errorMessage`` (Ironic's ``last_error``), for the operator only: the
    HostState and Events say which failure it was, never what a remote server answered.
    Logged when it changes, and again when an error comes back after the host was out of
    it."""
    if said and said != delivery.backend_said:
        error_type = str((bmh.get("status") or {}).get("errorType") or "error")
        log.warning(
            "%s: baremetal-operator reports a %s; its errorMessage: %s",
            key,
            error_type,
            said,
            extra={"host": key, "error_type": error_type},
        )
    delivery.backend_said = said


def goal_of(bmh: Obj) -> ProvisioningState:
    """Where baremetal-operator takes the host, as its spec says: deleted, externally
    provisioned, provisioned (an image), else available; unmanaged without a BMC."""
    spec: dict[str, Any] = bmh.get("spec") or {}
    if bmh["metadata"].get("deletionTimestamp"):
        return ProvisioningState.NONE
    if not (spec.get("bmc") or {}).get("address"):
        return ProvisioningState.UNMANAGED
    if spec.get("externallyProvisioned"):
        return ProvisioningState.EXTERNALLY_PROVISIONED
    if (spec.get("image") or {}).get("url") or spec.get("customDeploy"):
        return ProvisioningState.PROVISIONED
    return ProvisioningState.AVAILABLE


def _generation(bmh: Obj) -> int:
    return int(bmh["metadata"].get("generation") or 0)


def _hoststate_of(bmh: Obj) -> Obj:
    """A new HostState for a BareMetalHost: same namespace and name, owned by it."""
    meta = bmh["metadata"]
    owner = {"apiVersion": API_VERSION, "kind": KIND, "name": meta["name"], "uid": meta["uid"]}
    spec = {"bareMetalHost": meta["name"], "node": ""}
    return hoststate_body(
        meta["namespace"], meta["name"], spec=spec, label=ann.BAREMETALHOST, owner=owner
    )
