"""What a HostState says its host is expected to do (``status.estimate``): when the step
under way, and the operation it is in, are expected to end, from how long the same step
took on machines like it (docs/durations.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .base import REASON_MAX, WORD_MAX, Count, StatusModel, Timestamp


class EstimateShown(StatusModel):
    """When the step under way, and the operation it is in, are expected to end: made
    once, when the step began, from how long the same step took on machines of the same
    pool and hardware class (docs/durations.md). Absent at rest, while waiting for a
    turn, and when too few past durations are known to say."""

    kind: Literal["provisioning", "update", "servicing"] = Field(
        description="Which operation: a provisioning state, a node update step or a servicing step."
    )
    step: Annotated[str, Field(max_length=WORD_MAX)] = Field(description="The step timed.")
    entered_at: Timestamp = Field(description="When the step began: the estimate is for it.")
    step_ends_at: Timestamp = Field(description="The step's expected end: its median.")
    step_late_at: Timestamp = Field(
        description="The step's late bound: nine in ten of its past durations ended by then."
    )
    ends_at: Timestamp = Field(
        description="The operation's expected end: the medians of this step and those left."
    )
    late_at: Timestamp = Field(
        description="The operation's late bound: the steps' spreads added in quadrature."
    )
    ends_by: Annotated[str, Field(max_length=8)] = Field(
        description="endsAt as HH:MM in UTC, for kubectl get (>24h beyond a day)."
    )
    late_by: Annotated[str, Field(max_length=8)] = Field(
        description="lateAt as HH:MM in UTC (>24h beyond a day)."
    )
    samples: Count = Field(description="Past durations of the step the estimate rests on.")
    basis: Annotated[str, Field(max_length=REASON_MAX)] = Field(
        description="Which machines they were taken on: a pool and a hardware class, or "
        "wider (any pool, any hardware, the fleet) when those had too few."
    )
