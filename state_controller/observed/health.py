"""The hardware health a BareMetalHost reports: baremetal-operator's ``Healthy`` condition,
set from the BMC's health rollup (metal3-io/baremetal-operator PR #3013: status True with
reason ``Healthy``; False with ``Warning`` or ``CriticalError``; Unknown with
``Unknown``), read into the book's facts as every source of health is."""

from __future__ import annotations

from collections.abc import Iterable

from ..api.hardware import CONDITION, Health
from ..books.records import ForeignCondition, HardwareHealth

HEALTHY = "Healthy"  # the condition's type
# its reasons are the HardwareHealthy condition's own words: read back through that table
REASONS = {reason: health for health, (_, reason) in CONDITION.items()}
SOURCE = "BareMetalHost"


def health_reported(conditions: Iterable[ForeignCondition]) -> HardwareHealth | None:
    """What the ``Healthy`` condition says (None: the BareMetalHost has none, as before
    baremetal-operator wrote it). A reason this version does not know is Unknown, not
    a guess."""
    for condition in conditions:
        if condition.type != HEALTHY:
            continue
        if condition.status == "True":
            health = Health.OK
        elif condition.status == "False":
            health = REASONS.get(condition.reason, Health.UNKNOWN)
        else:
            health = Health.UNKNOWN
        return HardwareHealth(health, condition.message, SOURCE)
    return None
