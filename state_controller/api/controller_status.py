"""The ``HostStateController`` resource: the controller's own health, as one object.

One per installation, cluster-scoped, named after the controller's namespace, written
only by the controller. Where a HostState says how a machine is, this says how the
controller that keeps them is: in which mode it runs, its replicas (each shard with its
share of the hosts and since when it holds them), whether its provisioner answers and
when it last did not, whether its caches are filled, how many hosts and nodes it follows
and how many of them are stuck or failed, and its version. Its conditions, Available,
Progressing and Degraded, say at a glance whether anything is wrong with the controller
itself, as a ClusterOperator does for an OpenShift operator, apart from the machines'.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from .base import (
    CONDITIONS_MAX_ITEMS,
    MESSAGE_MAX,
    NAME_MAX,
    WORD_MAX,
    Condition,
    Count,
    SpecModel,
    StatusModel,
    Timestamp,
)
from .hoststate import Mode

MEMBERS_MAX_ITEMS = 64  # far more replicas than one API server serves a fleet with
POOLS_MAX_ITEMS = 64  # node pools a member counts in (a fleet has a handful)
CONFIGS_MAX_ITEMS = 16  # configurations its Nodes are at, during a rollout one or two


class ControllerCondition(StrEnum):
    AVAILABLE = "Available"
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"


class HostStateControllerSpec(SpecModel):
    """Nothing to set: the controller creates the object and writes its status."""


class LastOutage(StatusModel):
    started: Timestamp = Field(description="When calls to the provisioner began to fail.")
    ended: Timestamp | None = Field(
        default=None, description="When it answered again (absent: the outage goes on)."
    )
    message: Annotated[str, Field(max_length=MESSAGE_MAX)] = Field(
        default="", description="The last failure, as the provisioner's client reported it."
    )


class ProvisionerHealth(StatusModel):
    backend: Annotated[str, Field(max_length=WORD_MAX)] = Field(description="simulated or ironic.")
    api_version: Annotated[str, Field(max_length=WORD_MAX)] = Field(
        default="",
        description="The API version in use (Ironic's negotiated microversion); empty "
        "until the first call, and for the simulated backend.",
    )
    reachable: bool = Field(
        default=True,
        description="False while calls fail for want of an answer (not while they are "
        "refused: a refusal is an answer, told on the host it concerns).",
    )
    last_outage: LastOutage | None = Field(
        default=None, description="The last time it did not answer, since the replica started."
    )


class ConfigCount(StatusModel):
    config: Annotated[str, Field(max_length=NAME_MAX)] = Field(
        description="A configuration (a MachineConfig's name, or what the agent reports)."
    )
    machines: Count = Field(description="Its Nodes at rest at this configuration.")


class PoolShare(StatusModel):
    """A shard's part of a node pool's rollout: the counts its own books can tell. The
    replica that keeps the NodePools adds up every shard's (the Nodes' readiness and
    cordons it reads itself: every replica sees every Node)."""

    pool: Annotated[str, Field(max_length=NAME_MAX)] = Field(
        description="The NodePool's name (the pool label's value)."
    )
    target: Annotated[str, Field(max_length=NAME_MAX)] = Field(
        default="", description="The configuration the last update begun among its Nodes went to."
    )
    target_since: Annotated[str, Field(max_length=WORD_MAX)] = Field(
        default="", description="When that update began (milliseconds: the latest one wins)."
    )
    updated: list[ConfigCount] = Field(
        default_factory=list,
        max_length=CONFIGS_MAX_ITEMS,
        description="Its Nodes at rest, by the configuration they are at.",
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["config"],
        },
    )
    updating: Count = Field(default=0, description="Its Nodes updating (not degraded).")
    degraded: Count = Field(default=0, description="Its Nodes whose update is degraded.")
    busy: Count = Field(
        default=0,
        description="Its Nodes Ready and schedulable but unavailable all the same: updating.",
    )


class Member(StatusModel):
    name: Annotated[str, Field(max_length=NAME_MAX)] = Field(
        description="The shard's name, or for a replica that is not sharded its hostname."
    )
    shard: Annotated[str, Field(max_length=NAME_MAX)] = Field(
        default="", description="The shard (hoststate.io/shard label) it owns; empty: every host."
    )
    lease: Annotated[str, Field(max_length=WORD_MAX)] = Field(
        default="",
        description="A shard's Lease: Ready, or Expired (not renewed for its duration: it "
        "keeps its hosts but is given no new ones). A shard whose Lease is Dead is no "
        "longer listed: its hosts are moved.",
    )
    since: Timestamp = Field(description="Since when it reconciles (holds its Lease).")
    caches_synced: bool = Field(default=False, description="Its informers have listed.")
    hosts: Count = Field(default=0, description="Hosts it keeps a book for: driven or observed.")
    nodes: Count = Field(default=0, description="Nodes it follows.")
    draining: Count = Field(
        default=0, description="Its hosts the sharder has asked it to let go of."
    )
    stuck: Count = Field(default=0, description="Its hosts and nodes stuck in a state or step.")
    failed: Count = Field(default=0, description="Its hosts in error.")
    version: Annotated[str, Field(max_length=WORD_MAX)] = ""
    provisioner: ProvisionerHealth
    pools: list[PoolShare] = Field(
        default_factory=list,
        max_length=POOLS_MAX_ITEMS,
        description="Sharded: its part of each node pool's counts, added up into the "
        "NodePools by the replica that keeps them.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["pool"]},
    )


class HostStateControllerStatus(StatusModel):
    mode: Mode = Field(
        description="Bootstrap: before the cluster exists; Cluster: running in this cluster."
    )
    mode_since: Timestamp | None = None
    version: Annotated[str, Field(max_length=WORD_MAX)] = Field(
        default="", description="The version of the replica that wrote this status last."
    )
    replicas: Count = Field(default=0, description="Replicas reconciling (members listed).")
    ready_replicas: Count = Field(
        default=0, description="Of those, the ones with caches synced and a live Lease."
    )
    hosts: Count = Field(default=0, description="Hosts followed, driven or observed.")
    nodes: Count = Field(default=0, description="Nodes followed.")
    stuck: Count = Field(default=0, description="Hosts and nodes stuck in a state or step.")
    failed: Count = Field(default=0, description="Hosts in error.")
    provisioner: ProvisionerHealth | None = Field(
        default=None,
        description="The provisioner as the replicas see it: reachable only if it is "
        "from every replica; the latest outage any of them saw.",
    )
    members: list[Member] = Field(
        default_factory=list,
        max_length=MEMBERS_MAX_ITEMS,
        description="Each replica that reconciles, with its share.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    conditions: list[Condition] = Field(
        default_factory=list,
        max_length=CONDITIONS_MAX_ITEMS,
        description="Available (every host has a live owner), Progressing (hosts are "
        "moving between shards), Degraded (the provisioner does not answer, or a shard "
        "stopped renewing its Lease), each with a reason.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
