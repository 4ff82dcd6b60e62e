"""The ``HostState`` resource: what is happening to a host and what happened.

Written only by the controller, read by people (``kubectl get hoststates``),
dashboards and alerts. Its status is the human-facing projection of the
host's book: a phase, the current cursors, Kubernetes-style conditions and a
bounded history of transitions grouped into chapters.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field
from pydantic.config import JsonDict

from .base import (
    CHAPTERS_MAX_ITEMS,
    CONDITIONS_MAX_ITEMS,
    HISTORY_MAX_ITEMS,
    MESSAGE_MAX,
    NAME_MAX,
    REASON_MAX,
    WORD_MAX,
    Condition,
    ConditionStatus,
    Count,
    SpecModel,
    StatusModel,
    Timestamp,
)
from .estimates import EstimateShown
from .host_status import ERROR_TYPE_DESCRIPTION, STATE_DESCRIPTION
from .inventory import InventoryShown
from .servicing import SETTINGS_MAX, ServiceStep
from .states import ErrorType, OperationalStatus, ProvisioningState
from .updates import UpdateStep

Bound = Annotated[int, Field(ge=-(2**53), le=2**53)]  # a BMC's integer setting's limit
TASKS_MAX = 32  # a run's tasks: settings, up to 16 firmware images, RAID
SETTINGS_SHOWN_MAX = SETTINGS_MAX


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
    SERVICING = "Servicing"  # a provisioned host's firmware, settings or RAID changing
    UPDATING = "Updating"
    UPDATED = "Updated"  # a Node with no Host, at its desired configuration


class Source(StrEnum):
    """What a HostState follows, so that ``kubectl get hoststates -o wide`` tells a
    machine hoststate drives from one it observes (its name is the followed object's)."""

    HOST = "Host"  # a Host: hoststate drives the machine
    BARE_METAL_HOST = "BareMetalHost"  # a metal3 BareMetalHost: baremetal-operator drives it
    NODE = "Node"  # a Node with neither: only its updates are followed


class Mode(StrEnum):
    """Who keeps a host's book: the phase of the cluster's life it is in."""

    BOOTSTRAP = "Bootstrap"  # state-controller bootstrap, before the cluster exists
    CLUSTER = "Cluster"  # a controller in the cluster (after a pivot, or from the start)


class ConditionType(StrEnum):
    # summaries
    READY = "Ready"
    PROGRESSING = "Progressing"
    STUCK = "Stuck"
    SLOW = "Slow"  # past the late bound of its step on machines like it (while estimated)
    DEGRADED = "Degraded"
    SPEC_VALID = "SpecValid"
    # provisioning stages
    REGISTERED = "Registered"
    INSPECTED = "Inspected"
    PREPARED = "Prepared"
    PROVISIONED = "Provisioned"
    POWERED_ON = "PoweredOn"
    # a node's two accounts of its update (MCO annotations, MachineConfigNode) agree
    SOURCES_AGREE = "SourcesAgree"
    # the machine's hardware, by its BMC's health rollup (where something reports it)
    HARDWARE_HEALTHY = "HardwareHealthy"


class HostStateSpec(SpecModel):
    host: Annotated[
        str, Field(max_length=NAME_MAX, description="Name of the Host this state belongs to.")
    ] = ""
    node: Annotated[
        str, Field(max_length=NAME_MAX, description="Name of the Kubernetes Node on this host.")
    ] = ""
    bare_metal_host: Annotated[
        str,
        Field(
            max_length=NAME_MAX,
            description="Name of the metal3 BareMetalHost this state observes (another "
            "controller, baremetal-operator, drives it; hoststate only reports).",
        ),
    ] = ""


class ProvisioningCursor(StatusModel):
    state: ProvisioningState = Field(default=ProvisioningState.NONE, description=STATE_DESCRIPTION)
    operational_status: OperationalStatus | Literal[""] = ""
    entered_at: Timestamp | None = None
    error_type: ErrorType | Literal[""] = Field(default="", description=ERROR_TYPE_DESCRIPTION)
    error_message: Annotated[str, Field(max_length=MESSAGE_MAX)] = Field(
        default="", description=f"What went wrong, cut to {MESSAGE_MAX} characters."
    )
    error_count: Count = 0


class UpdateProgress(StatusModel):
    """Where the host's Node is in its update (present once a Node is followed)."""

    step: UpdateStep = Field(
        default=UpdateStep.UPDATED,
        description="The update step: " + ", ".join(f"`{s.value}`" for s in UpdateStep) + ".",
    )
    entered_at: Timestamp | None = None
    started_at: Timestamp | None = Field(
        default=None, description="When the update in progress (or the last one) began."
    )
    desired_config: Annotated[str, Field(max_length=REASON_MAX)] = Field(
        default="", description="The configuration the node is going to, as its agent names it."
    )
    current_config: Annotated[str, Field(max_length=REASON_MAX)] = Field(
        default="",
        description="The configuration it runs; with no agent, its kubelet, OS image, kernel "
        "and container runtime.",
    )
    source: Literal["", "mcn", "mco", "agent", "capi", "kubelet"] = Field(
        default="",
        description="Who reports the update: OpenShift's MachineConfigNode, the Machine "
        "Config Operator's annotations, an agent's hoststate.io/ annotations, the Node's "
        "Cluster API Machine (its Updating condition: an update in place), or the "
        "kubelet's nodeInfo alone.",
    )
    message: Annotated[str, Field(max_length=MESSAGE_MAX)] = ""
    visited_steps: list[UpdateStep] = Field(
        default_factory=list,
        max_length=len(UpdateStep),
        description="The steps the update in progress (or the last one) went through.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    failed_step: UpdateStep | Literal[""] = ""
    boot_id: Annotated[str, Field(max_length=WORD_MAX)] = Field(
        default="",
        alias="bootID",  # spelt as the Node's status.nodeInfo.bootID
        description="The node's boot when the update began: a new one is a reboot.",
    )


class ServicingProgress(StatusModel):
    """Where the host is in its servicing (present once servicing was asked of it)."""

    step: ServiceStep = Field(
        default=ServiceStep.SERVICED,
        description="The servicing step: " + ", ".join(f"`{s.value}`" for s in ServiceStep) + ".",
    )
    entered_at: Timestamp | None = None
    started_at: Timestamp | None = Field(
        default=None, description="When the run in progress (or the last one) began."
    )
    tasks: list[Annotated[str, Field(max_length=REASON_MAX)]] = Field(
        default_factory=list,
        max_length=TASKS_MAX,
        description="The run's tasks in order, e.g. `updating firmware bios (1 of 2)`.",
    )
    done: Count = Field(default=0, description="How many of the tasks are finished.")
    message: Annotated[str, Field(max_length=MESSAGE_MAX)] = ""
    failed_step: ServiceStep | Literal[""] = ""
    digest: Annotated[str, Field(max_length=WORD_MAX)] = Field(
        default="", description="sha256 of what the run applies (settings, images, volumes)."
    )


class FirmwareSetting(StatusModel):
    name: Annotated[str, Field(max_length=REASON_MAX)]
    value: Annotated[str, Field(max_length=REASON_MAX)] = ""
    attribute_type: Annotated[str, Field(max_length=WORD_MAX)] = Field(
        default="", description="Enumeration, Integer, String or Boolean, as the BMC says."
    )
    allowable_values: list[Annotated[str, Field(max_length=REASON_MAX)]] = Field(
        default_factory=list, max_length=64
    )
    lower_bound: Bound | None = None
    upper_bound: Bound | None = None
    read_only: bool = False


class FirmwareComponent(StatusModel):
    component: Annotated[str, Field(max_length=REASON_MAX)]
    version: Annotated[str, Field(max_length=REASON_MAX)] = ""


class FirmwareShown(StatusModel):
    """What the BMC reports of the machine's firmware, read when servicing begins and ends."""

    components: list[FirmwareComponent] = Field(
        default_factory=list, max_length=32, description="Firmware components and versions."
    )
    settings: list[FirmwareSetting] = Field(
        default_factory=list,
        max_length=SETTINGS_SHOWN_MAX,
        description="The settings spec.firmwareSettings names, with their values and the "
        "schema the BMC reports for them.",
    )
    settings_count: Count = Field(default=0, description="How many settings the BMC has.")


class RemediationShown(StatusModel):
    """A Node that is unhealthy, and what remediation does about it (present only while it
    is unhealthy, on a host whose pool is remediated: docs/servicing.md)."""

    trouble: Literal["RebootLost", "NotReady"] = Field(
        description="RebootLost: its update's rebooting step is stuck (the Node never came "
        "back); NotReady: its Ready condition is not True."
    )
    since: Timestamp | None = Field(
        default=None, description="When the rebooting step began, or the Node went NotReady."
    )
    attempts: Count = Field(default=0, description="Power-cycles made for this trouble.")
    last_attempt_at: Timestamp | None = None
    action: Literal["Wait", "PowerCycle", "Held", "Blocked", "Exhausted"] = Field(
        description="Wait (not yet, or between attempts), PowerCycle (now), Held (too much "
        "of the pool is unhealthy), Blocked (the host is paused, detached, deleting, in "
        "error, being serviced), Exhausted (every attempt made: a person must look)."
    )
    message: Annotated[str, Field(max_length=MESSAGE_MAX)] = ""


class HistoryEntry(StatusModel):
    seq: Count
    chapter: Annotated[str, Field(max_length=WORD_MAX)]
    from_: Annotated[str, Field(alias="from", max_length=WORD_MAX)] = ""
    to: Annotated[str, Field(max_length=WORD_MAX)] = ""
    at: Timestamp
    reason: Annotated[str, Field(max_length=REASON_MAX)] = ""
    message: Annotated[str, Field(max_length=MESSAGE_MAX)] = ""


class ChapterSummary(StatusModel):
    name: Annotated[str, Field(max_length=WORD_MAX)]
    started_at: Timestamp
    ended_at: Timestamp | None = None
    outcome: Annotated[str, Field(max_length=WORD_MAX)] = ""
    transitions: Count = 0


_MAP_BY_TYPE: JsonDict = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}

BMH_CONDITIONS_MAX = 16
"""The most BareMetalHost conditions shown (baremetal-operator v0.13 sets six; its
schema allows 32)."""
BMH_CONDITION_MESSAGE_MAX = 1024
"""A BareMetalHost condition's message, as shown (its schema allows 32768)."""
DETACHED_VALUE_MAX = 256
CONSUMER_MAX = 600
"""``Kind namespace/name``: each part as long as Kubernetes allows, and the spaces."""


class BareMetalHostCondition(StatusModel):
    """One of the BareMetalHost's own conditions, as baremetal-operator wrote it."""

    type: Annotated[str, Field(max_length=316)]
    status: ConditionStatus
    reason: Annotated[str, Field(max_length=REASON_MAX)] = ""
    message: Annotated[str, Field(max_length=BMH_CONDITION_MESSAGE_MAX)] = Field(
        default="", description=f"Cut to {BMH_CONDITION_MESSAGE_MAX} characters."
    )
    last_transition_time: Timestamp


class BareMetalHostShown(StatusModel):
    """What an observed BareMetalHost shows besides its provisioning fields (present
    only on the HostState of a BareMetalHost)."""

    online: bool = Field(
        default=False, description="Its spec.online: whether the host is wanted powered on."
    )
    detached: Annotated[str, Field(max_length=DETACHED_VALUE_MAX)] | None = Field(
        default=None,
        description='The value of its baremetalhost.metal3.io/detached annotation ("" '
        "when it has none); absent while the host is not asked to be detached.",
    )
    conditions: list[BareMetalHostCondition] = Field(
        default_factory=list,
        max_length=BMH_CONDITIONS_MAX,
        description="Its own conditions, as baremetal-operator set them (Manageable, "
        "AvailableForProvisioning, Provisioned, Ready, Progressing, Healthy in v0.13): "
        f"the first {BMH_CONDITIONS_MAX}, each message cut to "
        f"{BMH_CONDITION_MESSAGE_MAX} characters. They are shown, not interpreted: "
        "hoststate's own conditions are in status.conditions.",
        json_schema_extra=_MAP_BY_TYPE,
    )


class HostStateStatus(StatusModel):
    phase: Phase = Phase.PENDING
    source: Source | Literal[""] = Field(
        default="",
        description="What this HostState follows, of the same name: Host (a machine "
        "hoststate drives), BareMetalHost (one baremetal-operator drives; hoststate only "
        "reports) or Node (a Node with neither: its updates only).",
    )
    mode: Mode | Literal[""] = Field(
        default="",
        description="Who keeps the host's book: Bootstrap (state-controller bootstrap, "
        "before the cluster exists) or Cluster (a controller in this cluster; after a pivot "
        "the history still begins with the bootstrap chapter).",
    )
    provisioning: ProvisioningCursor = Field(default_factory=ProvisioningCursor)
    update: UpdateProgress | None = None
    consumer: Annotated[str, Field(max_length=CONSUMER_MAX)] = Field(
        default="",
        description="Who uses the host, as `Kind namespace/name` (an observed "
        "BareMetalHost's spec.consumerRef, e.g. a Metal3Machine); absent while nobody does.",
    )
    bare_metal_host: BareMetalHostShown | None = Field(
        default=None,
        description="What the observed BareMetalHost shows besides its provisioning "
        "fields: spec.online, the detached annotation and its own conditions.",
    )
    servicing: ServicingProgress | None = None
    firmware: FirmwareShown | None = None
    remediation: RemediationShown | None = Field(
        default=None,
        description="While the host's Node is unhealthy and its pool is remediated: why, "
        "the power-cycles made, and what is done now.",
    )
    estimate: EstimateShown | None = None
    inventory: InventoryShown | None = None
    stuck: bool = False
    conditions: list[Condition] = Field(
        default_factory=list,
        max_length=CONDITIONS_MAX_ITEMS,
        description="Kubernetes-style conditions, one per type.",
        json_schema_extra=_MAP_BY_TYPE,
    )
    chapters: list[ChapterSummary] = Field(
        default_factory=list,
        max_length=CHAPTERS_MAX_ITEMS,
        description="The stages of the host's life, oldest first: the last 20 by default "
        "(the controller's limit is set in code only); the schema allows up to "
        f"{CHAPTERS_MAX_ITEMS} so that a raised limit still fits.",
    )
    history: list[HistoryEntry] = Field(
        default_factory=list,
        max_length=HISTORY_MAX_ITEMS,
        description="The last transitions, oldest first: the last 50 by default (the "
        "controller's limit is set in code only; historyDropped counts what fell off); the "
        f"schema allows up to {HISTORY_MAX_ITEMS} so that a raised limit still fits.",
    )
    history_dropped: Count = Field(
        default=0, description="Transitions that fell off the bounded history."
    )
    last_seq: Count = 0
    observed_generation: Count = 0
