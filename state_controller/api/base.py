"""Shared pydantic configuration and small types used by every API model."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


class SpecModel(BaseModel):
    """What users write: unknown fields are an error the controller reports by name."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class StatusModel(BaseModel):
    """What the controller writes: parsed leniently so a newer status never breaks restore."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(StatusModel):
    """A condition as the Kubernetes API conventions define it (metav1.Condition)."""

    type: Annotated[str, Field(max_length=316)]
    status: ConditionStatus
    reason: Annotated[str, Field(max_length=1024, pattern=REASON_PATTERN)]
    message: Annotated[str, Field(max_length=32768)] = ""
    last_transition_time: str
    observed_generation: Annotated[int, Field(ge=0)] | None = None


class ObjectReference(StatusModel):
    name: str
    namespace: str | None = None
