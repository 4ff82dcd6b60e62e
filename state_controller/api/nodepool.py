"""The ``NodePool`` resource: a pool's rollout at a glance, as a MachineConfigPool shows it.

One per node pool (the value of the pool label, by default the Node's role),
cluster-scoped, written only by the controller: how many machines the pool
has, and how many are updated, updating, degraded and unavailable, so that
``kubectl get nodepools`` answers "how far is the rollout" without a dashboard.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .base import NAME_MAX, REASON_MAX, Count, SpecModel, StatusModel

UNLABELED_POOL = "unlabeled"  # the NodePool of Nodes the pool label puts in no pool


class NodePoolSpec(SpecModel):
    label: Annotated[str, Field(max_length=NAME_MAX)] = Field(
        default="",
        description="The Node label whose value names this pool (prefix/* takes the role "
        "from a prefix/<role> label); set by the controller from --node-pool-label.",
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
