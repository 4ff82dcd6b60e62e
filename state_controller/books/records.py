"""The records a book is made of: cursor, facts, transitions, chapters."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, TypedDict

import orjson

from ..api.base import MESSAGE_MAX
from ..api.hardware import Health
from ..api.objects import to_json
from ..api.servicing import ServiceStep
from ..api.states import ErrorType, OperationalStatus, ProvisioningState
from ..api.timefmt import parse_rfc3339, rfc3339_ms
from ..api.updates import UpdateStep


def cut(text: str, limit: int) -> str:
    """``text`` within a schema's maxLength, which the API server counts in characters.

    A backend's error can be any length; a status the API server refuses for one long
    message would report nothing at all.
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


@lru_cache(maxsize=1024)
def camel(words: str) -> str:
    """``registration error`` -> ``RegistrationError``: a value usable as a condition reason."""
    return "".join(w[:1].upper() + w[1:] for w in words.replace("-", " ").split())


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where the host is in provisioning, and how its last attempt went.

    Immutable: the book replaces it whole, in one assignment, so a reader on
    another thread (the metrics scrape) always sees a state together with the
    time it was entered and the errors of that same moment, never a mix of two
    reconciles, and without taking a lock a slow backend call could hold.
    """

    state: ProvisioningState = ProvisioningState.NONE
    entered_at: float = 0.0
    operational_status: OperationalStatus = OperationalStatus.OK
    error_type: ErrorType | None = None
    error_message: str = ""
    error_count: int = 0


@dataclass(frozen=True, slots=True)
class UpdateCursor:
    """Where the host's node is in its update, and what the update started from.

    Immutable and replaced whole, like :class:`Cursor`. ``boot_id`` remembers
    the boot the update began in: a reboot is a new boot ID.
    """

    step: UpdateStep = UpdateStep.UPDATED
    entered_at: float = 0.0
    desired: str = ""  # the configuration the node is going to ("" while none is known)
    current: str = ""  # the configuration it runs
    source: str = ""  # the adapter that read it: mco, agent, kubelet
    started_at: float | None = None  # when the update in progress began
    boot_id: str = ""
    failed_step: UpdateStep | None = None  # for a degraded update: the step it failed in
    message: str = ""  # what is happening, in words an operator can act on
    visited: frozenset[UpdateStep] = frozenset()  # the steps the update in progress showed
    # while draining: the PodDisruptionBudget that allows no eviction ("" when none does):
    # a drain that fails, not one that runs, though both are the step "draining"
    drain_blocked_by: str = ""


@dataclass(frozen=True, slots=True)
class ServiceCursor:
    """Where the host is in its servicing (firmware settings, firmware updates, RAID).

    Immutable and replaced whole, like :class:`UpdateCursor`. ``tasks`` are the labels of
    the run's tasks in order (``applying 2 settings``, ``updating firmware bios (1 of
    2)``, …); ``done`` counts those finished.
    """

    step: ServiceStep = ServiceStep.SERVICED
    entered_at: float = 0.0
    started_at: float | None = None  # when the run in progress (or the last one) began
    tasks: tuple[str, ...] = ()
    done: int = 0
    message: str = ""
    digest: str = ""  # the plan of the run in progress, or of the last one
    failed_step: ServiceStep | None = None  # for a failed run: the step it failed in


@dataclass(frozen=True, slots=True)
class ForeignCondition:
    """A condition another controller wrote on the object a book observes (a
    BareMetalHost's, as baremetal-operator sets it): shown as written, never derived."""

    type: str
    status: str  # True, False or Unknown
    reason: str
    message: str
    at: float  # its lastTransitionTime


@dataclass(frozen=True, slots=True)
class BareMetalHostFacts:
    """What an observed BareMetalHost shows besides its state and status fields: who
    asked for what (``spec.online``, the detached annotation) and baremetal-operator's
    own conditions. Immutable: replaced whole, so it is written only when it differs."""

    online: bool = False  # spec.online: whether the host is wanted powered on
    detached: str | None = None  # the detached annotation's value; None without it
    conditions: tuple[ForeignCondition, ...] = ()


@dataclass(frozen=True, slots=True)
class HardwareHealth:
    """The machine's hardware health as its BMC rolls it up, and who reported it (the
    observed BareMetalHost's ``Healthy`` condition, a driven host's Ironic node, the
    simulated BMC). Immutable: replaced whole."""

    health: Health
    message: str  # the reporter's words ("" none)
    source: str  # who reported it: BareMetalHost, Ironic node, simulated BMC


POWER_CYCLED = "PowerCycled"  # the record of one remediation attempt
REMEDIATED = "Remediated"  # the record of a Node back after remediation


@dataclass(frozen=True, slots=True)
class Remediation:
    """A machine whose Node is unhealthy, and what was done about it (remediation/).

    Immutable, replaced whole; kept in the HostState's status, so the attempts made survive
    a restart of the controller. Gone (None in :class:`Facts`) while the Node is healthy.
    """

    trouble: str  # RebootLost or NotReady
    since: float  # when the Node entered its rebooting step, or went NotReady
    attempts: int = 0  # power-cycles made for this trouble
    last_attempt_at: float | None = None
    action: str = ""  # what remediation does now: Wait, PowerCycle, Held, Blocked, Exhausted
    message: str = ""  # why, in an operator's words


@dataclass(frozen=True, slots=True)
class Expected:
    """When the step a host is in, and the operation it is part of, are expected to end:
    made once, when the step began, from the durations learned by then (durations/), so
    that what was said can be held against what happened, and a status is not rewritten
    each time another machine teaches a new duration. Times are absolute."""

    kind: str  # provisioning, update or servicing
    step: str
    entered_at: float  # when the step began: an estimate is for one step's stay
    step_ends_at: float  # the median
    step_late_at: float  # the late bound
    ends_at: float  # the operation's end: the median of this step and those after it
    late_at: float
    samples: int  # past durations of this step the estimate rests on
    basis: str  # which machines they were: "pool worker, Dell Inc. PowerEdge R750", …


@dataclass(slots=True)
class Facts:
    """What the controller learned about the machine (not states; no history).

    The hardware inventory is kept as its JSON (:attr:`hardware` reads and writes it as a
    dict): it is read only when a status is written, and a dict of a few dozen values
    took 650 bytes of every host's 8.5 KB at 2,000 hosts, its JSON (sized by
    :func:`~..api.objects.to_json`: orjson's own answer would keep 4 KB) 370."""

    provider_id: str = ""
    node: str = ""  # the Kubernetes Node running on the host ("" while none is known)
    pool: str = ""  # its Node's pool (updates.signals.NodeSignals.pool; "" without a Node)
    powered_on: bool = False
    hardware_json: bytes | None = None
    image: dict[str, Any] | None = None
    custom_deploy: str | None = None  # the deploy step run instead of an image
    root_device_hints: dict[str, Any] | None = None
    boot_mode: str | None = None
    credentials: tuple[str, str] | None = None  # (secret name, secret resourceVersion)
    # digest of the user, network and meta data given at the last deploy ("" none);
    # None: not known (deployed before this was kept in the status, or never)
    deployed_data: str | None = None
    observed_generation: int = 0
    last_updated: float | None = None
    mode: str = ""  # who keeps the book: Bootstrap (before the cluster exists) or Cluster
    consumer: str = ""  # who uses the host ("Kind namespace/name"; "" while nobody does)
    # an observed BareMetalHost's spec-side facts and conditions; None for a driven host,
    # or a book restored from a HostState that did not hold them yet
    bare_metal_host: BareMetalHostFacts | None = None
    # its Node is unhealthy and remediation follows it (None: healthy, or not remediated)
    remediation: Remediation | None = None
    # digest of the firmware settings, updates and RAID last applied by servicing ("" none)
    serviced: str = ""
    # what the BMC reports of its firmware: settings with their schema, component versions
    firmware: dict[str, Any] | None = None
    # its hardware's health by its BMC's rollup (None: nothing reports it)
    health: HardwareHealth | None = None
    # the last entry of the backend's own history of the machine taken into the book
    # (Ironic's node history: "<created_at> <uuid>"; "" none yet)
    backend_history: str = ""

    @property
    def hardware(self) -> dict[str, Any] | None:
        if self.hardware_json is None:
            return None
        inventory: dict[str, Any] = orjson.loads(self.hardware_json)
        return inventory

    @hardware.setter
    def hardware(self, value: dict[str, Any] | None) -> None:
        self.hardware_json = None if value is None else to_json(value)


@dataclass(slots=True)
class Observations:
    """What the controller noticed that is neither state nor fact: input problems, outages."""

    goal: ProvisioningState = ProvisioningState.AVAILABLE
    spec_problem: str = ""
    spec_problem_reason: str = ""
    transient: str = ""
    annotation_problems: dict[str, str] = field(default_factory=dict)
    data_change_told: str = ""  # the data digest a HostDataChanged notice was told for
    # a reboot.metal3.io/ hold-off on a host that may not power off was answered with a
    # reboot (once per hold-off; after a restart, once more)
    hold_off_rebooted: bool = False
    delete_delayed_told: bool = False  # deleted while detached with deleteAction delay
    # asked to detach mid-operation without "force": the wait was told (once per request)
    detach_waiting_told: bool = False
    # another controller holds the host still (metal3's paused annotation): who, or why
    paused_by: str = ""
    # two accounts of the node's update (updates.agreement): how they differ; "" when
    # they agree; None when the node has not both
    sources_disagree: str | None = None
    # when the step under way is expected to end (None: not in a timed step, or too few
    # durations learned to say)
    expected: Expected | None = None
    # when the backend's own history of the machine was last read (None: not since start)
    history_read_at: float | None = None


class FactChanges(TypedDict, total=False):
    """What :meth:`~.book.Book.note` may change of :class:`Facts`, by name and type (the
    hardware as the dict it reads as)."""

    provider_id: str
    node: str
    pool: str
    powered_on: bool
    hardware: dict[str, Any] | None
    image: dict[str, Any] | None
    custom_deploy: str | None
    root_device_hints: dict[str, Any] | None
    boot_mode: str | None
    credentials: tuple[str, str] | None
    deployed_data: str | None
    observed_generation: int
    last_updated: float | None
    mode: str
    consumer: str
    bare_metal_host: BareMetalHostFacts | None
    remediation: Remediation | None
    serviced: str
    firmware: dict[str, Any] | None
    health: HardwareHealth | None
    backend_history: str


class SeenChanges(TypedDict, total=False):
    """What :meth:`~.book.Book.note_seen` may change of :class:`Observations`."""

    goal: ProvisioningState
    spec_problem: str
    spec_problem_reason: str
    transient: str
    annotation_problems: dict[str, str]
    data_change_told: str
    hold_off_rebooted: bool
    delete_delayed_told: bool
    detach_waiting_told: bool
    paused_by: str
    sources_disagree: str | None
    expected: Expected | None
    history_read_at: float | None


@dataclass(slots=True)
class Transition:
    """One change of a host's provisioning state or operational status."""

    seq: int
    chapter: str
    from_state: str
    to_state: str
    at: float
    reason: str
    message: str
    recorded: bool = True
    time_in_previous_state: float | None = None
    error_type: ErrorType | None = None
    replayed: bool = False  # a copy of a past record, journaled again for new reporters

    def wire(self) -> dict[str, Any]:
        """The API form, made anew each time: a dict per transition would cost more memory
        than the rest of the book (see benchmarks/scale.py), and even the formatted time
        (73 bytes a record, 4.4 MB at 10,000 hosts) more than formatting it again, 1.5 µs."""
        return {
            "seq": self.seq,
            "chapter": self.chapter,
            "from": self.from_state,
            "to": self.to_state,
            "at": rfc3339_ms(self.at),
            "reason": self.reason,
            "message": cut(self.message, MESSAGE_MAX),
        }

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Transition:
        return cls(
            seq=int(data.get("seq", 0)),
            chapter=str(data.get("chapter", "")),
            from_state=str(data.get("from", "")),
            to_state=str(data.get("to", "")),
            at=parse_rfc3339(data.get("at")) or 0.0,
            reason=str(data.get("reason", "")),
            message=str(data.get("message", "")),
        )


@dataclass(slots=True)
class Chapter:
    """A stage of a host's life: registration, inspection, provisioning, …"""

    name: str
    started_at: float
    ended_at: float | None = None
    outcome: str = ""
    transitions: int = 0

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "startedAt": rfc3339_ms(self.started_at),
            "transitions": self.transitions,
        }
        if self.ended_at is not None:
            out["endedAt"] = rfc3339_ms(self.ended_at)
            out["outcome"] = self.outcome
        return out

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Chapter:
        return cls(
            name=str(data.get("name", "")),
            started_at=parse_rfc3339(data.get("startedAt")) or 0.0,
            ended_at=parse_rfc3339(data.get("endedAt")),
            outcome=str(data.get("outcome", "")),
            transitions=int(data.get("transitions", 0)),
        )
