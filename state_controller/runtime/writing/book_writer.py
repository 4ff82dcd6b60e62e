"""What every reconcile of a book ends with: its HostState written, its journal reported.

A Host's book and a Node's own book are reconciled by different code (one runs
the provisioning machine, the other only follows its Node), but what they show
leaves by the same way: :class:`BookWriter` writes the HostState's status through
the one status writer (:mod:`.status_writer`: only when its projection differs,
and over a conflict, since the book is the truth for status), announces a stuck
step once, hands the journal's new entries to the reporter, and says when the
stuck timer must fire.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ...api import API_VERSION
from ...api import annotations as ann
from ...api.objects import Obj
from ...api.servicing import ServiceStep
from ...books.book import Book
from ...books.estimates import usual, usual_of_step
from ...books.journal import SLOW, STUCK
from ...books.projections import hoststate_status
from ...books.stuck import human_duration
from ...cluster.interface import HOSTSTATES, AlreadyExists, Cluster, NotFound, Resource
from ...durations.reading import DurationReader
from ...sharding.leases import SHARD_LABEL
from ..config import ControllerConfig
from ..machinery.informer import Informer, InformerSet
from ..machinery.reporting import Reporter
from .delivery import Delivery
from .status_writer import StatusWriter

log = logging.getLogger(__name__)


def hoststate_body(
    namespace: str, name: str, *, spec: dict[str, str], label: str, owner: dict[str, Any]
) -> Obj:
    """A new HostState: labelled with whose it is (``label``: ``name``) and owned by
    ``owner`` (a Host, or for a node-only one its Node), so it goes when its owner goes."""
    return {
        "apiVersion": API_VERSION,
        "kind": "HostState",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {label: name},
            "ownerReferences": [{**owner, "blockOwnerDeletion": False}],
        },
        "spec": spec,
    }


def hoststate_of_host(host: Obj, shard: str = "") -> Obj:
    """A new HostState for a Host: same namespace and name, labelled and owned by it (and
    labelled with its shard, when sharded, so that only its owner caches it)."""
    meta = host["metadata"]
    owner = {
        "apiVersion": API_VERSION,
        "kind": "Host",
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
    }
    spec = {"host": meta["name"], "node": ""}
    body = hoststate_body(
        meta["namespace"], meta["name"], spec=spec, label=ann.HOST_LABEL, owner=owner
    )
    if shard:
        body["metadata"]["labels"][SHARD_LABEL] = shard
    return body


class BookWriter:
    def __init__(
        self,
        cluster: Cluster,
        hoststates: Informer | InformerSet,
        config: ControllerConfig,
        reporter: Reporter,
        durations: DurationReader | None = None,
    ) -> None:
        self.cluster = cluster
        self.hoststates = hoststates
        self.config = config
        self.reporter = reporter
        self.durations = durations  # learns how long each step took, from the same journal
        self.statuses = StatusWriter(cluster, reporter)  # every status it writes

    # -- the HostState --------------------------------------------------------------------

    def write_hoststate(
        self, key: str, book: Book, delivery: Delivery, now: float, new: Callable[[], Obj]
    ) -> Obj:
        """Create the HostState (``new()`` is its body) if needed, keep ``spec.node`` naming
        the book's Node, and write the status when its projection differs."""
        state = self.hoststates.get(key)
        projected = hoststate_status(book, self.config.stuck, now)
        if state is None:
            state = self.create(HOSTSTATES, self.hoststates, new())
        if (state.get("spec") or {}).get("node", "") != book.facts.node:
            state = self._patch_spec(state, {"node": book.facts.node})
        state = self.statuses.write(HOSTSTATES, self.hoststates, state, projected).obj
        delivery.confirmed_seq = book.last_seq
        return state

    def create(self, resource: Resource, informer: Informer | InformerSet, body: Obj) -> Obj:
        """Create an object the controller owns (or take the one already there), cached."""
        meta = body["metadata"]
        try:
            created = self.cluster.create(resource, body)
        except AlreadyExists:
            created = self.cluster.get(resource, meta.get("namespace"), meta["name"])
        informer.mutate(created)
        return created

    def _patch_spec(self, state: Obj, spec: dict[str, Any]) -> Obj:
        meta = state["metadata"]
        try:
            patched = self.cluster.patch(
                HOSTSTATES, meta.get("namespace"), meta["name"], {"spec": spec}
            )
        except NotFound:
            return state
        self.hoststates.mutate(patched)
        return patched

    # -- stuck ------------------------------------------------------------------------------

    def notice_timers(self, book: Book, delivery: Delivery, now: float) -> None:
        """Before the HostState is written: keep what to expect of the step the book is in
        (durations/), and tell once per step that it is slow, or stuck."""
        if self.durations is not None:
            self.durations.expect(book, now)
        self.notice_slow(book, delivery, now)
        self.notice_stuck(book, delivery, now)

    def notice_stuck(self, book: Book, delivery: Delivery, now: float) -> None:
        """Tell a stuck host's (or node's) user once per state or update step it is stuck in."""
        update = book.node_update()
        clock = self.config.stuck.clock_of(book)
        if delivery.stuck_announced == clock.entered_at:
            return
        if clock.deadline is None or now < clock.deadline:
            return
        delivery.stuck_announced = clock.entered_at
        held = f"for {human_duration(now - clock.entered_at)}, longer than "
        held += self.config.stuck.limit_words(clock, book.facts.pool)
        where = clock.step.value if clock.step is not None else book.cursor.state.value
        held += usual_of_step(book.seen.expected, where, clock.entered_at)
        if isinstance(clock.step, ServiceStep):
            detail = f": {book.service.message}" if book.service.message else ""
            message = f"host has been {clock.step.value} {held}"
            book.notice("Warning", STUCK, message + detail, now=now, state=clock.step.value)
            return
        if update is not None and clock.step is not None:
            detail = f": {update.message}" if update.message else ""
            message = f"node {book.facts.node or book.key} has been {clock.step.value} {held}"
            book.notice("Warning", STUCK, message + detail, now=now, state=clock.step.value)
            return
        cursor = book.cursor
        detail = f"; last error: {cursor.error_message}" if cursor.error_message else ""
        message = f"host has been {cursor.state.value} {held}{detail}"
        book.notice("Warning", STUCK, message, now=now)

    def notice_slow(self, book: Book, delivery: Delivery, now: float) -> None:
        """Tell once per step that it runs past its usual late bound (a Normal Event: one
        step in ten does; Stuck is the warning)."""
        expected = book.seen.expected
        if expected is None or now < expected.step_late_at:
            return
        if delivery.slow_announced == expected.entered_at:
            return
        delivery.slow_announced = expected.entered_at
        message = f"{expected.step} for longer than usual: {usual(expected)}"
        book.notice("Normal", SLOW, message, now=now, state=expected.step)

    def wake_after(self, book: Book, now: float) -> float | None:
        """Seconds until the book's current state or step is stuck, or slow (None: never,
        or already)."""
        stuck = self.config.stuck
        deadline = stuck.clock_of(book).deadline
        expected = book.seen.expected
        times = [t for t in (deadline, expected and expected.step_late_at) if t and t > now]
        return min(times) - now if times else None

    # -- reporting ------------------------------------------------------------------------

    def report(self, about: Obj, book: Book, delivery: Delivery) -> None:
        """Hand the reporter what the journal gained since the last reconcile."""
        entries, missed = book.journal.since(delivery.reported)
        delivery.reported = book.journal.end
        if missed:
            log.warning(
                "book %s: %d journal entries were trimmed before reporting", book.key, missed
            )
        if entries:
            self.reporter.report(about, entries)
        if self.durations is not None:
            self.durations.read(book, entries, delivery.learned)
