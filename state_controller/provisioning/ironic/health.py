"""The hardware health Ironic reports of a node: its ``health`` field (API 1.109 or newer),
read into the book's facts as every source of health is.

Ironic fills the field from the BMC's Redfish ``Status.Health`` (``OK``, ``Warning``,
``Critical``) when its conductor syncs the node's power state
(``[conductor] sync_power_state_interval``, 120 s by default; ``[conductor]
enable_health_monitoring``, on by default; ``ironic/conductor/utils.py``
``node_cache_health`` in Ironic 39.0.0), and records each change in the node's history.
A driver that reports no health (fake-hardware, IPMI), a node not synced yet, or an Ironic
whose API is older than 1.109 leaves it unknown: the host is then said to have an unknown
health, never a healthy one.
"""

from __future__ import annotations

from ...api.hardware import Health
from ...books.records import HardwareHealth
from .nodes import Node

HEALTH_VERSION = (1, 109)  # node.health
# How often a host at rest is read again for it: Ironic's own default power sync interval,
# as reading it more often than Ironic refreshes it would only cost requests.
HEALTH_EVERY = 120.0
SOURCE = "Ironic node"  # who reports it, as the HardwareHealthy condition and the gauge say
KNOWN = {health.value: health for health in (Health.OK, Health.WARNING, Health.CRITICAL)}

NOT_READ = (
    "Ironic has read no health from this machine's BMC yet (it reads it at its power "
    "sync; fake-hardware and IPMI drivers report none)"
)


def node_health(node: Node, version: tuple[int, int]) -> HardwareHealth:
    """What the node's ``health`` field says, unknown where Ironic cannot say."""
    if version < HEALTH_VERSION:
        return HardwareHealth(
            Health.UNKNOWN,
            f"Ironic offers API 1.{version[1]}, which has no node health (1.109 or newer has)",
            SOURCE,
        )
    said = node.get("health")
    if said is None or said == "":
        return HardwareHealth(Health.UNKNOWN, NOT_READ, SOURCE)
    known = KNOWN.get(str(said))
    if known is None:  # a word this version does not know: not a guess
        return HardwareHealth(
            Health.UNKNOWN, "Ironic reports a health hoststate does not know", SOURCE
        )
    return HardwareHealth(known, "", SOURCE)


def node_fields(fields: str, version: tuple[int, int]) -> str:
    """The fields of a node read: ``fields``, and ``health`` where the API has it (an older
    Ironic refuses a field it does not know)."""
    return f"{fields},health" if version >= HEALTH_VERSION else fields
