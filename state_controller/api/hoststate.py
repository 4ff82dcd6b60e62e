"""The ``HostState`` resource: what is happening to a host and what happened.

Written only by the controller, read by people (``kubectl get hoststates``),
dashboards and alerts. Its status is the human-facing projection of the
host's book: a phase, the current cursors, Kubernetes-style conditions and a
bounded history of transitions grouped into chapters.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from .base import Condition, SpecModel, StatusModel


class Phase(StrEnum):
    """One word for where a host is, for the table and for dashboards."""

    PENDING = "Pending"
    UNMANAGED = "Unmanaged"
    REGISTERING = "Registering"
    INSPECTING = "Inspecting"
    PREPARING = "Preparing"
    AVAILABLE = "Available"
    PROVISIONING = "Provisioning"
    PROVISIONED = "Provisioned"
    EXTERNALLY_PROVISIONED = "ExternallyProvisioned"
    DEPROVISIONING = "Deprovisioning"
    DELETING = "Deleting"
    FAILED = "Failed"
    DETACHED = "Detached"
    UPDATING = "Updating"


class ConditionType(StrEnum):
    # summaries
    READY = "Ready"
    PROGRESSING = "Progressing"
    STUCK = "Stuck"
    DEGRADED = "Degraded"
    SPEC_VALID = "SpecValid"
    # provisioning stages
    REGISTERED = "Registered"
    INSPECTED = "Inspected"
    PREPARED = "Prepared"
    PROVISIONED = "Provisioned"
    DEPROVISIONED = "Deprovisioned"
    POWERED_ON = "PoweredOn"


class HostStateSpec(SpecModel):
    host: Annotated[str, Field(description="Name of the Host this state belongs to.")] = ""
    node: Annotated[str, Field(description="Name of the Kubernetes Node on this host.")] = ""


class ProvisioningCursor(StatusModel):
    state: str = ""
    operational_status: str = ""
    entered_at: str | None = None
    error_type: str = ""
    error_message: str = ""
    error_count: int = 0


class HistoryEntry(StatusModel):
    seq: int
    chapter: str
    from_: Annotated[str, Field(alias="from")] = ""
    to: str = ""
    at: str
    reason: str = ""
    message: str = ""


class ChapterSummary(StatusModel):
    name: str
    started_at: str
    ended_at: str | None = None
    outcome: str = ""
    transitions: int = 0


class HostStateStatus(StatusModel):
    phase: Phase = Phase.PENDING
    provisioning: ProvisioningCursor = Field(default_factory=ProvisioningCursor)
    stuck: bool = False
    conditions: list[Condition] = Field(default_factory=list)
    chapters: list[ChapterSummary] = Field(default_factory=list)
    history: list[HistoryEntry] = Field(default_factory=list)
    history_dropped: int = Field(
        default=0, description="Transitions that fell off the bounded history."
    )
    last_seq: int = 0
    observed_generation: int = 0
