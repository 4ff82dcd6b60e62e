"""The ``NodePool`` resource: a pool's rollout at a glance, as a MachineConfigPool shows it.

One per node pool (the value of the pool label, by default the Node's role),
cluster-scoped, written only by the controller: how many machines the pool
has, and how many are updated, updating, degraded and unavailable, so that
``kubectl get nodepools`` answers "how far is the rollout" without a dashboard.
Where OpenShift's MachineConfigPool of the same name exists (and MachineConfigNodes
are read), the NodePool also shows the operator's own counts beside these, and its
``SourcesAgree`` condition says whether its degraded count matches the Nodes'.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .base import (
    CONDITIONS_MAX_ITEMS,
    MESSAGE_MAX,
    NAME_MAX,
    REASON_MAX,
    WORD_MAX,
    Condition,
    Count,
    SpecModel,
    StatusModel,
    Timestamp,
)

UNLABELED_POOL = "unlabeled"  # the NodePool of Nodes the pool label puts in no pool


class NodePoolSpec(SpecModel):
    label: Annotated[str, Field(max_length=NAME_MAX)] = Field(
        default="",
        description="The Node label whose value names this pool (prefix/* takes the role "
        "from a prefix/<role> label); set by the controller from --node-pool-label.",
    )


class MachineConfigPoolCondition(StatusModel):
    type: Annotated[str, Field(max_length=WORD_MAX)] = Field(
        description="Updated, Updating or Degraded."
    )
    status: Annotated[str, Field(max_length=WORD_MAX)] = Field(
        description="True, False or Unknown, as the operator wrote it."
    )
    reason: Annotated[str, Field(max_length=REASON_MAX)] = ""
    message: Annotated[str, Field(max_length=MESSAGE_MAX)] = Field(
        default="", description="The operator's message (its first 4096 characters)."
    )
    last_transition_time: Timestamp | None = None


class MachineConfigPoolCounts(StatusModel):
    """A MachineConfigPool's status as the Machine Config Operator writes it, read only."""

    name: Annotated[str, Field(max_length=NAME_MAX)] = Field(
        description="The MachineConfigPool's name (the same as the NodePool's)."
    )
    configuration: Annotated[str, Field(max_length=NAME_MAX)] = Field(
        default="",
        description="status.configuration.name: the rendered configuration of the pool "
        "(the operator moves it to the target once every machine is updated).",
    )
    machine_count: Count = Field(default=0, description="Machines the operator counts.")
    updated_machine_count: Count = Field(
        default=0, description="Machines at the pool's target configuration, as it counts."
    )
    ready_machine_count: Count = Field(
        default=0, description="Updated machines that are Ready and schedulable."
    )
    unavailable_machine_count: Count = Field(
        default=0, description="Machines not Ready, cordoned or updating, as it counts."
    )
    degraded_machine_count: Count = Field(
        default=0,
        description="Machines it counts degraded (or unreconcilable); compared with this "
        "NodePool's degradedMachineCount by the SourcesAgree condition.",
    )
    conditions: list[MachineConfigPoolCondition] = Field(
        default_factory=list,
        max_length=3,
        description="Its Updated, Updating and Degraded conditions, those written.",
    )


class RolloutEstimate(StatusModel):
    """When the pool's rollout is expected to finish (docs/durations.md): the machines
    left, how many update at once and the durations learned of this pool's machines, the
    rollout played out from them. Kept as said until the rollout moves from it; absent
    with no rollout, or too few updates learned to say."""

    ends_at: Timestamp = Field(description="The expected end: the median of the plays.")
    late_at: Timestamp = Field(description="The late bound: the plays' 90th percentile.")
    ends_by: Annotated[str, Field(max_length=8)] = Field(
        description="endsAt as HH:MM in UTC, for kubectl get (>24h beyond a day)."
    )
    made_at: Timestamp = Field(description="When this estimate was made.")
    machines_left: Count = Field(description="Machines not at the desired config then.")
    at_once: Count = Field(
        description="Machines updating at once: the most seen under way at two looks in a "
        "row (a moment's overlap as one machine ends and the next begins is not counted)."
    )
    machine_seconds: Annotated[float, Field(ge=0, le=10**9)] = Field(
        description="One machine's whole update in this pool on average, in seconds."
    )
    samples: Count = Field(description="Past durations the least known step rests on.")
    first_ends_at: Timestamp = Field(description="The end first said for this rollout.")
    first_late_at: Timestamp = Field(
        description="The late bound first said: past it, OnSchedule turns False."
    )


class NodePoolStatus(StatusModel):
    desired_config: Annotated[str, Field(max_length=REASON_MAX)] = Field(
        default="",
        description="The configuration the pool is rolling to: the desired configuration of "
        "the update that began last; empty while no update named one.",
    )
    machine_count: Count = Field(default=0, description="Nodes in the pool.")
    updated_machine_count: Count = Field(
        default=0,
        description="Nodes at the pool's desiredConfig (or, while it is empty, at their own "
        "desired configuration) with no update under way.",
    )
    updating_machine_count: Count = Field(
        default=0, description="Nodes with an update in progress (not degraded)."
    )
    degraded_machine_count: Count = Field(
        default=0, description="Nodes whose update agent reports the update degraded."
    )
    unavailable_machine_count: Count = Field(
        default=0,
        description="Nodes that cannot take work now: not Ready, cordoned, or updating "
        "(degraded included), as a MachineConfigPool counts them.",
    )
    estimate: RolloutEstimate | None = None
    machine_config_pool: MachineConfigPoolCounts | None = Field(
        default=None,
        description="OpenShift's MachineConfigPool of the same name, as the Machine Config "
        "Operator counts it; only while MachineConfigNodes are read (run "
        "--sources=...,machineconfignodes) and the pool exists.",
    )
    conditions: list[Condition] = Field(
        default_factory=list,
        max_length=CONDITIONS_MAX_ITEMS,
        description="SourcesAgree, beside a MachineConfigPool: False (reason "
        "PoolCountsDisagree, both counts in the message) when its degradedMachineCount has "
        "differed from this pool's for longer than the grace (run "
        "--node-pool-counts-grace). OnSchedule, while the rollout has an estimate: False "
        "(reason RolloutLate) once it is expected to end after the late bound first said.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
