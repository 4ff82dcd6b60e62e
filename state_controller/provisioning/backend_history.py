"""The backend's own history of a driven machine (Ironic's node history), taken into the
host's history: each entry newer than the book's mark becomes one record, once, at a
polite pace (the backend's ``history_every`` seconds, not every reconcile), so a failure
the backend recovered from by itself (a cleaning error it retried, a power action the
BMC refused once) stays visible after its node's state forgot it.

A record moves no state: its reason is :data:`REASON` of the entry's severity, its
message says what it was, what was going on and when the backend saw it. The mark is
noted with the records (Host.status.provisioning.backendHistoryMark), so a restarted
controller asks only for what came after; a book with no mark yet starts from what the
backend has at its first read (another owner's past, or an earlier version's, is not told
again here). The backend's raw words, scrubbed of the BMC password, go to the operator's
log, as every backend text does.
"""

from __future__ import annotations

import logging

from .provisioner import HistoryKept
from .steps import StepContext

log = logging.getLogger(__name__)

REASON = {"ERROR": "BackendError", "WARNING": "BackendWarning"}
OTHER = "BackendEvent"  # an entry of any other severity (Ironic: INFO)


def take_backend_history(run: StepContext) -> None:
    """Read the backend's history of a registered host if its time has come, and record
    what is new."""
    prov, book, now = run.prov, run.book, run.now
    if not isinstance(prov, HistoryKept) or prov.history_every <= 0 or not book.facts.provider_id:
        return
    last = book.seen.history_read_at
    if last is not None and now - last < prov.history_every:
        return
    book.note_seen(now=now, history_read_at=now)
    read = prov.history(run.view(), book.facts.backend_history)
    if read is None:
        return
    for event in read.events:
        book.transition(
            now=now,
            reason=REASON.get(event.severity.upper(), OTHER),
            message=f"{read.source or prov.backend} ({event.kind}, {event.severity}, "
            f"{event.at}): {event.words}",
            always_record=True,
            chapter=book.current_chapter(),
        )
    book.note(now=now, backend_history=read.mark)
    if read.said:  # for the operator: the words the records do not quote
        log.info(
            "%s: %s's history of the machine says: %s",
            book.key,
            read.source or prov.backend,
            read.said,
            extra={"host": book.key},
        )
