"""What the state machine reads about a host, gathered by the reconciler.

The machine never sees the Host object: it gets these values (and the book),
so it cannot write anything the reconciler would not know about.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..api.host import HostSpec
from .provisioner import Credentials, HostData


@dataclass(frozen=True)
class SpecProblem:
    reason: str  # condition reason: UnknownField, InvalidField, …
    message: str  # names the field and the fix


@dataclass(frozen=True)
class HostInput:
    namespace: str
    name: str
    generation: int
    spec: HostSpec | None
    spec_problem: SpecProblem | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)
    deleting: bool = False
    credentials: Credentials | None = None
    credentials_version: tuple[str, str] | None = None
    credentials_problem: str | None = None
    hardware_details: dict[str, object] | None = None  # from the annotation, validated
    data: HostData | None = None  # the config drive's contents (user, network, meta data)
    data_versions: tuple[tuple[str, str], ...] = ()  # (Secret name, resourceVersion) read
    data_problem: str | None = None  # names the field and the fix
    data_problem_field: str = ""  # the spec field it is about, e.g. "userData"
    # remediation asks for a power-cycle through the BMC, and says why ("" it does not):
    # asked again at every step until the backend has done it (a repeat polls)
    power_cycle: str = ""
    # whether a servicing run with spec.servicingPolicy rolling may start now (its pool has
    # a free slot, which is then the host's): asked only when the run would start
    service_slot: Callable[[], bool] = field(default=lambda: True)
    # the host's Node, cordoned and drained before a servicing run: whether no pod is left,
    # and what the drain waits for (None: the host has no Node); and uncordoned after
    drain: Callable[[], tuple[bool, str]] | None = None
    uncordon: Callable[[], None] | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"
