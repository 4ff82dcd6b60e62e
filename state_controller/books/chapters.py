"""Which chapter of a host's life each provisioning state belongs to.

Every node update is a chapter of its own, named :data:`UPDATE_CHAPTER`.
"""

from __future__ import annotations

from ..api.states import ProvisioningState as S

CHAPTER_OF: dict[S, str] = {
    S.NONE: "registration",
    S.UNMANAGED: "registration",
    S.REGISTERING: "registration",
    S.INSPECTING: "inspection",
    S.PREPARING: "preparation",
    S.AVAILABLE: "preparation",
    S.PROVISIONING: "provisioning",
    S.PROVISIONED: "provisioning",
    S.EXTERNALLY_PROVISIONED: "provisioning",
    S.DEPROVISIONING: "deprovisioning",
    S.POWERING_OFF_BEFORE_DELETE: "deletion",
    S.DELETING: "deletion",
}

UPDATE_CHAPTER = "update"

SERVICING_CHAPTER = "servicing"
"""Each servicing of a provisioned host (firmware, settings, RAID) is a chapter of its own."""

BOOTSTRAP_CHAPTER = "bootstrap"
"""The first chapter of a host taken in before its cluster exists (``state-controller
bootstrap``): it holds the record of that, and ends when registration begins."""
