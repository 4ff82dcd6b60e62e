"""A driven machine's hardware health, as its backend reads it from the BMC: noted in the
book's facts (the HostState's ``HardwareHealthy`` condition, the
``hoststate_host_hardware_unhealthy`` gauge, remediation's hold on a Critical machine
read them there) and told as an Event when it changes, so that the moment a part failed
is in the host's Events as well as in its condition.

Unknown is no change worth telling: a backend that cannot say (an older Ironic, a driver
that reports nothing, a BMC not read yet) is shown by the condition, not announced.
"""

from __future__ import annotations

from ..api.hardware import Health
from ..books.book import Book
from ..books.records import HardwareHealth

BAD = frozenset({Health.WARNING, Health.CRITICAL})
UNHEALTHY = "HardwareUnhealthy"  # Event: the BMC's rollup went Warning or Critical
HEALTHY = "HardwareHealthy"  # Event: back to OK after one of those


def note_health(book: Book, health: HardwareHealth, now: float) -> None:
    """Note ``health``; tell a change into or out of trouble (and trouble seen first)."""
    before = book.facts.health
    if not book.note(now=now, health=health):
        return
    was = before.health if before is not None else Health.UNKNOWN
    said = f": {health.message}" if health.message else ""
    if health.health in BAD and health.health != was:
        book.notice(
            "Warning",
            UNHEALTHY,
            f"the BMC's health rollup is {health.health.value} (was {was.value}), as the "
            f"{health.source} says{said}",
            now=now,
        )
    elif health.health is Health.OK and was in BAD:
        book.notice(
            "Normal",
            HEALTHY,
            f"the BMC's health rollup is OK again (was {was.value}), as the {health.source} says",
            now=now,
        )
