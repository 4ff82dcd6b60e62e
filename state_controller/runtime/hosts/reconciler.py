"""Reconcile one Host: open its book, run one machine step, write what changed.

The order of work is deliberate:

1. A paused host is left alone (nothing is read into a book, nothing is
   written but its status kept in its own annotation and its HostState's in the
   HostState's, for a move that drops statuses: :mod:`..writing.saved_status`). One that
   ``clusterctl move`` deletes from here (``delete-for-move``) is left alone too,
   and its finalizer released with nothing deprovisioned: it lives on elsewhere.
2. The finalizer is added before the backend is ever asked to act, so a
   deleted host is always deprovisioned.
3. After the step, Host.status is written first (it is the machine-facing
   truth, and carries the transitions HostState has not confirmed yet), then
   HostState.status. Each is written only when its projection differs. A
   host at rest gets its Host.status written once more if it still shows
   transitions the HostState has since confirmed.
4. Reports (metrics, Events, traces) are fed from the book's journal, from
   where the host's delivery record says the last reconcile stopped.
5. Metadata changes (removing handled annotations, the finalizer) come last.

The book is the host's story; the :class:`~..writing.delivery.Delivery` beside it is
what this reconciler did with it. Both are touched only by the worker that
holds the host's key.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ...api import annotations as ann
from ...api.hoststate import Mode
from ...api.objects import Obj
from ...api.servicing import SERVICE_ACTIVE
from ...api.states import ProvisioningState
from ...books.book import Book
from ...books.chapters import BOOTSTRAP_CHAPTER
from ...books.projections import host_status, host_status_differs
from ...books.restore import confirmed_seq, restore
from ...cluster.interface import HOSTS, HOSTSTATES, SECRETS, Cluster, Conflict, NotFound, Resource
from ...durations.reading import DurationReader
from ...provisioning.machine import HostMachine
from ...remediation.policy import Action
from ..config import ControllerConfig
from ..machinery.informer import Informer, InformerSet
from ..machinery.reporting import Reporter
from ..machinery.results import DONE, ReconcileResult
from ..nodes.reconciler import NodeFollower
from ..servicing.drainer import ServiceDrainer
from ..servicing.slots import ServiceSlots
from ..shards.member import Ownership, claimed_by, decline, let_go, ownership
from ..writing.book_writer import BookWriter, hoststate_of_host
from ..writing.delivery import Delivery
from ..writing.saved_status import SavedStatus
from .data import is_host_data
from .inputs import (
    SpecCache,
    gather,
    is_bmc_credentials,
    notice_annotation_problems,
    status_annotation,
)
from .remediator import Remediator

log = logging.getLogger(__name__)

BOOTSTRAPPED = "Bootstrap"  # the record that opens the bootstrap chapter
PIVOTED = "Pivoted"  # the record of a host's arrival with its past (a pivot)
HANDED_OVER = "HandedOver"  # the record of a machine taken over from baremetal-operator


__all__ = ["HostReconciler"]


class HostReconciler:
    def __init__(
        self,
        cluster: Cluster,
        *,
        hosts: Informer | InformerSet,
        hoststates: Informer | InformerSet,
        secrets: Informer | InformerSet,
        machine: HostMachine,
        data_secrets: Informer | InformerSet | None = None,
        config: ControllerConfig,
        reporter: Reporter,
        nodes: NodeFollower | None = None,
        remediator: Remediator | None = None,
        slots: ServiceSlots | None = None,
        durations: DurationReader | None = None,
        drainer: ServiceDrainer | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cluster = cluster
        self.hosts, self.hoststates, self.secrets = hosts, hoststates, secrets
        self.data_secrets = data_secrets or secrets  # one informer holding both, in tests
        self.machine = machine
        self.config = config
        self.reporter = reporter
        self.nodes = nodes  # None: no Node is followed (the runtime alone, in tests)
        self.remediator = remediator  # None: remediation is off
        self.slots = slots  # None: servicing runs are not limited per pool (tests)
        self.drainer = drainer  # None: a serviced host's Node is not drained (tests)
        self.writer = BookWriter(cluster, hoststates, config, reporter, durations)
        self.saved = SavedStatus(cluster, hoststates, self.writer.statuses)
        self.clock = clock
        self.books: dict[str, Book] = {}
        self.deliveries: dict[str, Delivery] = {}
        self.specs = SpecCache(config.reach)

    # -- the reconcile ------------------------------------------------------------------

    def reconcile(self, key: str) -> ReconcileResult:
        host = self.hosts.get(key)
        if host is None:
            self._forget(key)
            return DONE
        meta = host["metadata"]
        if self.config.shard:
            own = self.hoststates.get(key)
            claimed = (  # asked once per host taken in: its book is open from then on
                (lambda: "") if key in self.books else lambda: claimed_by(self.cluster, own, key)
            )
            owned = ownership(host, self.config.shard, claimed)
            if owned is not Ownership.OURS:
                self._forget(key)
                if owned is Ownership.DRAINED:
                    self.hosts.mutate(let_go(self.cluster, host, self.config.shard, own))
                elif owned is Ownership.NOT_GIVEN and (gone := decline(self.cluster, host)):
                    self.hosts.mutate(gone)
                return DONE
        annotations: dict[str, str] = meta.get("annotations") or {}
        finalizers: list[str] = meta.get("finalizers") or []
        deleting = bool(meta.get("deletionTimestamp"))
        if ann.DELETE_FOR_MOVE in annotations:  # it lives on in the target: hands off
            return self._moved_away(key, host, deleting=deleting)
        if ann.PAUSED in annotations:
            self.saved.keep_host(key, host, self.hosts)  # its status, for a move
            self.saved.keep(key, annotations)  # its HostState's
            return DONE
        if deleting and ann.FINALIZER not in finalizers:
            return DONE  # not ours to clean up (or already cleaned up)
        if not deleting and ann.FINALIZER not in finalizers:
            try:
                host = self._patch(
                    HOSTS, host, {"finalizers": [*finalizers, ann.FINALIZER]}, precondition=True
                )
            except Conflict:
                # changed since the cache read it (at times its shard label, moved by the
                # sharder): read again once its event is in, as any conflict is retried,
                # not told as a failed reconcile
                log.debug("%s: changed since read; reading it again", key)
                return ReconcileResult(rate_limited=True)

        now = self.clock()
        book, delivery, from_annotation = self._open(key, host, now)
        inputs = gather(host, self.specs, self._secret, self._data_secret)
        notice_annotation_problems(book, annotations, now)
        node = self.nodes.nodes.node_on(key) if self.nodes is not None else None
        remedy, pool = self.remediator, node.pool if node is not None else ""
        asks: dict[str, Any] = {}  # what the runtime lends the machine: one copy of the inputs
        if remedy is not None and book.facts.remediation is not None:
            verdict = remedy.consider(book, node, deleting=deleting, now=now)
            if verdict is not None and verdict.action is Action.POWER_CYCLE:
                asks["power_cycle"] = verdict.why
        if self.slots is not None:
            slots = self.slots
            asks["service_slot"] = lambda: slots.may_start(key, pool)
        if self.drainer is not None and node is not None:
            drainer, linked = self.drainer, node
            asks["drain"] = lambda: drainer.drain(linked)
            asks["uncordon"] = lambda: drainer.uncordon(linked)
        if asks:
            inputs = replace(inputs, **asks)
        decision = self.machine.step(book, inputs, now, delivery.retry)
        if self.slots is not None:
            self.slots.settle(key, pool, active=book.service.step in SERVICE_ACTIVE)
        delivery.retry = decision.retry
        self._log_backend_words(key, book, delivery, decision.backend_said)
        if self.nodes is not None:
            self.nodes.follow(book, node, now)
        # after the step (an attempt counted) and the Node's reading (back, or stuck now)
        verdict = remedy.consider(book, node, deleting=deleting, now=now) if remedy else None
        self.writer.notice_timers(book, delivery, now)

        host = owner = self._write_host_status(host, book, delivery)
        if not decision.remove_finalizer:  # else the HostState is about to go with its Host
            state = self.writer.write_hoststate(
                key, book, delivery, now, lambda: hoststate_of_host(owner, self.config.shard)
            )
            self.saved.drop_spent(key, state)
        self.writer.report(host, book, delivery)

        removals = set(decision.remove_annotations)
        if from_annotation or _spent_status_annotation(host, annotations):
            removals.add(ann.STATUS)
        if removals & set(annotations):
            host = self._patch(HOSTS, host, {"annotations": {k: None for k in removals}})
        if decision.remove_finalizer:
            kept = [f for f in host["metadata"].get("finalizers") or [] if f != ann.FINALIZER]
            self._patch(HOSTS, host, {"finalizers": kept}, precondition=True)
            return DONE

        wake = _sooner(self.writer.wake_after(book, now), Remediator.wake_after(verdict, now))
        return ReconcileResult(decision.requeue_after, decision.rate_limited, wake)

    def _moved_away(self, key: str, host: Obj, *, deleting: bool) -> ReconcileResult:
        """A Host clusterctl is deleting from this cluster after copying it to another:
        nothing is done to its machine or written about it, and once deleted its finalizer
        is released without deprovisioning. Checked before the finalizer is ever added,
        so none is added between clusterctl's mark and its delete."""
        self._forget(key)
        if deleting and ann.FINALIZER in (host["metadata"].get("finalizers") or []):
            kept = [f for f in host["metadata"]["finalizers"] if f != ann.FINALIZER]
            try:
                self._patch(HOSTS, host, {"finalizers": kept}, precondition=True)
            except Conflict:
                return ReconcileResult(rate_limited=True)
            log.info("%s: moved away by clusterctl; finalizer released, not deprovisioned", key)
        return DONE

    @staticmethod
    def _log_backend_words(key: str, book: Book, delivery: Delivery, said: str) -> None:
        """The backend's own words behind a failure or refusal, for the operator only: the
        host's user reads the machine's sentence (status, Events), which never quotes what
        a remote server answered. Logged when they change, not at every retry; forgotten
        once the host is out of error, so a failure that comes back is logged again."""
        if not said:
            if not book.cursor.error_message and not book.seen.transient:
                delivery.backend_said = ""
            return
        if said != delivery.backend_said:
            cursor = book.cursor
            log.warning(
                "%s: %s; the backend said: %s",
                key,
                cursor.error_message or book.seen.transient or "refused",
                said,
                extra={"host": key, "state": cursor.state.value},
            )
        delivery.backend_said = said

    def _secret(self, key: str) -> Obj | None:
        """A cached Secret of BMC credentials (see :meth:`_labelled`)."""
        return self._labelled(self.secrets, is_bmc_credentials, key)

    def _data_secret(self, key: str) -> Obj | None:
        """A cached Secret of data for a deployed OS (see :meth:`_labelled`)."""
        return self._labelled(self.data_secrets, is_host_data, key)

    def _labelled(
        self, informer: Informer | InformerSet, labelled: Callable[[Obj], bool], key: str
    ) -> Obj | None:
        """A cached Secret; on a miss, ask the server (a cache miss is no proof of absence).

        Only a Secret with the informer's label is taken. Of one without it only its
        metadata is returned (for the error saying so) and nothing is cached: its data is
        never read.
        """
        cached = informer.get(key)
        if cached is not None and labelled(cached):
            return cached
        namespace, _, name = key.partition("/")
        try:
            found = self.cluster.get(SECRETS, namespace, name)
        except NotFound:
            return None
        if not labelled(found):
            meta = found.get("metadata") or {}
            return {"metadata": {k: meta[k] for k in ("name", "namespace", "labels") if k in meta}}
        informer.mutate(found)
        return found

    def _from_server(
        self, informer: Informer | InformerSet, resource: Resource, key: str
    ) -> Obj | None:
        """What the server holds under ``key``, put in the cache; None when nothing."""
        namespace, _, name = key.partition("/")
        try:
            found = self.cluster.get(resource, namespace, name)
        except NotFound:
            return None
        informer.mutate(found)
        return found

    # -- the book -------------------------------------------------------------------------

    def _forget(self, key: str) -> None:
        self.books.pop(key, None)
        self.deliveries.pop(key, None)
        self.specs.forget(key)
        if self.nodes is not None:
            self.nodes.forget(key)

    def _open(self, key: str, host: Obj, now: float) -> tuple[Book, Delivery, bool]:
        """The host's book and delivery record; rebuilt from the stored statuses on first use."""
        book, delivery = self.books.get(key), self.deliveries.get(key)
        if book is not None and delivery is not None:
            return book, delivery, False
        status = host.get("status") or None
        from_annotation = False
        annotations = host["metadata"].get("annotations") or {}
        if not (status or {}).get("provisioning", {}).get("state") and annotations.get(ann.STATUS):
            status, _ = status_annotation(annotations)
            from_annotation = status is not None
        state = self.hoststates.get(key)
        if state is None and status:
            # one created just before its Host (a pivot writes it, then unpauses the Host)
            # must not be taken for a lost one
            state = self._from_server(self.hoststates, HOSTSTATES, key)
        state_status = self.saved.status_of(key, state)  # its own, or what a move carried
        node = str(((state or {}).get("spec") or {}).get("node") or "")
        book = restore(key, status, state_status, now=now, limits=self.config.limits, node=node)
        delivery = Delivery(confirmed_seq=confirmed_seq(state_status), reported=book.journal.end)
        adopted = from_annotation and ann.ADOPTED_FROM in annotations
        self._take_in(book, arrived=from_annotation, adopted=adopted, now=now)
        self.books[key], self.deliveries[key] = book, delivery
        return book, delivery, from_annotation

    def _take_in(self, book: Book, *, arrived: bool, adopted: bool, now: float) -> None:
        """Record how the book came to be kept here: a host new to the books at bootstrap
        opens the bootstrap chapter; one that arrived by a pivot records its arrival; one
        taken over from baremetal-operator records the handover (its history was told
        here already, as an observed host's, so nothing is told again)."""
        mode, before = self.config.mode, book.facts.mode
        if adopted:
            book.transition(
                now=now,
                reason=HANDED_OVER,
                message="taken over from baremetal-operator, whose BareMetalHost stays paused; "
                f"status restored from the {ann.STATUS} annotation, nothing registered, "
                "inspected or deployed again",
                always_record=True,
            )
        elif arrived:
            came = "from the bootstrap controller" if before == Mode.BOOTSTRAP else "here"
            book.moved_in(
                now=now,
                reason=PIVOTED,
                message=f"moved {came} with its history; status restored from the "
                f"{ann.STATUS} annotation, nothing registered, inspected or deployed again",
            )
        elif (
            book.last_seq == 0
            and book.cursor.state == ProvisioningState.NONE
            and (mode == Mode.BOOTSTRAP)
        ):
            book.transition(
                now=now,
                reason=BOOTSTRAPPED,
                message="taken in by state-controller bootstrap, before the cluster exists",
                always_record=True,
                chapter=BOOTSTRAP_CHAPTER,
            )
        book.note(now=now, mode=mode.value)

    # -- writing ------------------------------------------------------------------------

    def _write_host_status(self, host: Obj, book: Book, delivery: Delivery) -> Obj:
        projected = host_status(book, delivery.confirmed_seq)
        written = self.writer.statuses.write(HOSTS, self.hosts, host, projected, same=_same_host)
        return written.obj

    def _patch(
        self, resource: Resource, obj: Obj, metadata: dict[str, Any], *, precondition: bool = False
    ) -> Obj:
        meta = obj["metadata"]
        patch_meta = dict(metadata)
        if precondition:
            patch_meta["resourceVersion"] = meta.get("resourceVersion", "")
        try:
            patched = self.cluster.patch(
                resource, meta.get("namespace"), meta["name"], {"metadata": patch_meta}
            )
        except NotFound:
            return obj
        if patched.get("metadata", {}).get("resourceVersion"):
            informer = self.hosts if resource == HOSTS else self.hoststates
            informer.mutate(patched)
        return patched


def _sooner(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _spent_status_annotation(host: Obj, annotations: dict[str, str]) -> bool:
    """A valid status annotation on a Host whose status is restored already (a restart
    between the status write and the annotation's removal): it has done its work."""
    state = ((host.get("status") or {}).get("provisioning") or {}).get("state")
    return bool(state) and status_annotation(annotations)[0] is not None


def _same_host(new: dict[str, Any], old: Any) -> bool:
    return not host_status_differs(new, old)
