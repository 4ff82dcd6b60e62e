"""What a provisioner answers: a semantic result, never a change to the Host.

Five answers cover every case (after metal3's semantic provisioner results):
the work goes on (:func:`continuing`), it is done (:func:`complete`), it
failed for a reason the user must see (:func:`failed`), the backend could not
be reached this time or holds the host out of our hands (:func:`transient`:
nobody's fault, retried with backoff; ``held`` tells the second from an outage),
or the backend asked us to come back later (:func:`retry_after`, e.g. a node
locked by another operation).
The state machine alone decides what each answer means for the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..api.servicing import ServiceStep
from ..books.records import HardwareHealth


class Outcome(Enum):
    CONTINUING = "continuing"
    COMPLETE = "complete"
    FAILED = "failed"
    TRANSIENT = "transient"
    RETRY_AFTER = "retry_after"


@dataclass(frozen=True, slots=True)
class Result:
    outcome: Outcome
    delay: float = 0.0
    message: str = ""
    # the backend's own words: for the operator's log, never for the host's user (they may
    # quote what a BMC, an image server or any address a tenant named answered)
    details: str = ""
    provider_id: str | None = None
    hardware: dict[str, Any] | None = None
    powered_on: bool | None = None
    adopted: bool = False  # adopt() took over a host the backend did not manage yet
    # register(): the backend already runs an image on this host ("" if it cannot say
    # which); None: nothing deployed. A host whose records were lost must not be wiped.
    deployed_image: str | None = None
    # transient(): the backend answered, but holds this one host (an Ironic node in
    # maintenance); not an outage of the backend, which is told for every host at once
    held: bool = False
    # firmware(): what the BMC reports (components and settings with their schema,
    # servicing/schema.py); service(): while continuing, the step the run is at and how
    # many of its tasks are done
    firmware: dict[str, Any] | None = None
    service_step: ServiceStep | None = None
    service_done: int = 0
    # service(), where the backend can tell: every step the run began, in order, as (tasks
    # done, step, seconds before this answer it began), so that a step that began and
    # ended between two polls is still recorded, at its own time
    service_passed: tuple[tuple[int, ServiceStep, float], ...] = ()
    # inspect() or provision() with HostView.force_reboot: the deploy ramdisk the work
    # waited on was restarted, and the work starts over (.forced_reboot)
    restarted: bool = False
    # register(): the machine's hardware health as the backend has it from the BMC (None:
    # this backend does not say; an unknown health is said as such, never as OK)
    health: HardwareHealth | None = None

    @property
    def done(self) -> bool:
        return self.outcome is Outcome.COMPLETE

    def for_operators(self) -> str:
        """Our message, followed by the backend's text when there is one: for a log or a
        command line the operator reads, never for a Host's status or Events."""
        if self.details and self.details not in self.message:
            return f"{self.message} (backend said: {self.details})"
        return self.message


def continuing(delay: float, **progress: Any) -> Result:
    return Result(Outcome.CONTINUING, delay=delay, **progress)


def complete(**facts: Any) -> Result:
    return Result(Outcome.COMPLETE, **facts)


def failed(message: str, details: str = "") -> Result:
    return Result(Outcome.FAILED, message=message, details=details)


def transient(message: str, details: str = "", *, held: bool = False) -> Result:
    return Result(Outcome.TRANSIENT, message=message, details=details, held=held)


def retry_after(delay: float, message: str = "") -> Result:
    return Result(Outcome.RETRY_AFTER, delay=delay, message=message)


@dataclass(frozen=True, slots=True)
class BackendEvent:
    """One entry of the backend's own history of a machine (Ironic's node history): what
    it recorded, when and how grave, in words a Host's user may read."""

    at: str  # the backend's own time of it (RFC 3339, to the second)
    severity: str  # as the backend grades it (Ironic: ERROR, INFO)
    kind: str  # what was going on (Ironic's event_type: deploying, cleaning, monitoring, ...)
    words: str  # what it was, told without quoting any remote server


@dataclass(frozen=True, slots=True)
class HistoryRead:
    """Entries newer than the mark a book keeps, oldest first, and the mark after them; the
    backend's raw words (scrubbed of the BMC password) for the operator's log only."""

    events: tuple[BackendEvent, ...]
    mark: str
    said: str = ""
    source: str = ""  # who keeps the history, as a sentence names it ("Ironic")
