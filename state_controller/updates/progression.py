"""One step of a node's update progression: read the Node, record what changed.

:func:`progress` is to a Node what ``HostMachine.step`` is to a Host: it asks
the adapter of the node's agent which step the node is at, and records a
change of step through ``Book.update_to``. It writes nothing
itself and never touches provisioning. A reading that changes only the
message (one pod fewer left) updates the cursor without a history record.
"""

from __future__ import annotations

from ..api.updates import (
    UPDATE_COMPLETE,
    UPDATE_DEGRADED,
    UPDATE_STARTED,
    UpdateStep,
    in_progress,
)
from ..books.book import Book
from ..books.records import UpdateCursor, camel
from ..books.stuck import human_duration
from .adapters import DrainStatus, Reading, adapter_for, never_back
from .signals import NodeSignals


def progress(book: Book, node: NodeSignals, drain: DrainStatus, now: float) -> bool:
    """Bring the book's update cursor to what ``node`` shows; True when a step was recorded."""
    before = book.update
    adapter = adapter_for(node)
    reading = never_back(before, adapter.read(node, before, drain))
    updating = in_progress(before.step)
    # The boot the update began in: kept while it runs, the node's own at rest — taken in
    # the write that ends an update, not left for the next Node event to write.
    boot = before.boot_id if updating and in_progress(reading.step) else node.info.boot_id
    seq = book.last_seq
    if (
        not updating
        and not in_progress(reading.step)
        and before.current
        and reading.current != before.current
        and before.source == adapter.name  # an agent that starts reporting is no update
    ):
        # Updated in place (a kubelet or runtime upgrade with no cordon, no agent):
        # one update, of one step, so that the history says it happened.
        in_place = f"{before.current} -> {reading.current}, in place"
        applied = Reading(UpdateStep.APPLYING, reading.current, before.current, in_place)
        _record(book, adapter.name, boot, applied, now)
    blocked = drain.blocked_by if reading.step == UpdateStep.DRAINING else ""
    _record(book, adapter.name, boot, reading, now, blocked)
    return book.last_seq != seq


def _record(
    book: Book, source: str, boot: str, reading: Reading, now: float, blocked: str = ""
) -> None:
    before = book.update
    desired = reading.desired or (reading.current if reading.step == UpdateStep.UPDATED else "")
    shown = UpdateCursor(
        step=reading.step,
        desired=desired,
        current=reading.current,
        source=source,
        boot_id=boot,
        message=reading.message,
        drain_blocked_by=blocked,
    )
    if shown.step == before.step and _same(shown, before):
        return
    reason, message = _why(before, shown, now)
    book.update_to(shown, now=now, reason=reason, message=message)


def _same(shown: UpdateCursor, before: UpdateCursor) -> bool:
    return (
        shown.desired,
        shown.current,
        shown.source,
        shown.boot_id,
        shown.message,
        shown.drain_blocked_by,
    ) == (
        before.desired,
        before.current,
        before.source,
        before.boot_id,
        before.message,
        before.drain_blocked_by,
    )


def _why(before: UpdateCursor, after: UpdateCursor, now: float) -> tuple[str, str]:
    """The reason and message of a change of step, as history and Events tell it."""
    if after.step == before.step:
        return camel(after.step.value), after.message
    if after.step == UpdateStep.DEGRADED:
        return UPDATE_DEGRADED, after.message
    if after.step == UpdateStep.UPDATED:
        took = f"done in {human_duration(now - before.started_at)}" if before.started_at else "done"
        return UPDATE_COMPLETE, f"{took}, now running {after.current}" if after.current else took
    if not in_progress(before.step):
        target = f"to {after.desired}" if after.desired else ""
        source = f"from {before.current} " if before.current else ""
        told = f"updating {source}{target}".strip()
        return UPDATE_STARTED, f"{told}: {after.message}" if after.message else told
    return camel(after.step.value), after.message
