"""The provisioner protocol: what a backend (simulated, Ironic) must offer.

A provisioner receives a :class:`HostView`, a frozen copy of just what it
needs to know, and answers with a :class:`~.results.Result`. It can never
touch the Host, its status or the book: the state machine records what the
answer means, and nothing else writes state.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..api.bmc import BMCAddress
from .results import Result


@dataclass(frozen=True, slots=True)
class Credentials:
    username: str
    password: str = field(repr=False)

    def __repr__(self) -> str:  # never let a password reach a log line
        return f"Credentials(username={self.username!r}, password=<hidden>)"

    __str__ = __repr__


@dataclass(frozen=True, slots=True)
class HostData:
    """What the deployed OS is given in its config drive, from the Host's data Secrets.

    Its contents never reach a log line, a status, an Event, a metric or a trace: only
    :meth:`digest` and :meth:`sizes` describe it."""

    user_data: str | None = field(default=None, repr=False)
    network_data: dict[str, Any] | None = field(default=None, repr=False)
    meta_data: dict[str, Any] | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        return f"HostData(digest={self.digest()[:12]}, sizes={self.sizes()})"

    __str__ = __repr__

    def config_drive(self) -> dict[str, Any]:
        """The config drive as Ironic takes it: only what the Host gives."""
        drive: dict[str, Any] = {}
        if self.meta_data is not None:
            drive["meta_data"] = self.meta_data
        if self.user_data is not None:
            drive["user_data"] = self.user_data
        if self.network_data is not None:
            drive["network_data"] = self.network_data
        return drive

    def digest(self) -> str:
        """sha256 of the config drive in canonical JSON: tells changes apart, reveals nothing."""
        canonical = json.dumps(self.config_drive(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def sizes(self) -> dict[str, int]:
        """Bytes of each part, as canonical JSON for the structured ones."""
        return {
            key: len(value.encode() if isinstance(value, str) else json.dumps(value).encode())
            for key, value in self.config_drive().items()
        }


@dataclass(frozen=True, slots=True)
class HostView:
    """A read-only copy of what a provisioner may know about one host."""

    namespace: str
    name: str
    provider_id: str
    bmc: BMCAddress
    bmc_address: str
    credentials: Credentials
    disable_certificate_verification: bool = False
    boot_mac_address: str | None = None
    boot_mode: str = "UEFI"
    image: dict[str, Any] | None = None
    root_device_hints: dict[str, Any] | None = None
    online: bool = False
    externally_provisioned: bool = False
    automated_cleaning: bool = True
    hardware: dict[str, Any] | None = None
    data: HostData | None = None  # the config drive's contents, given at deploy

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class Provisioner(Protocol):
    """Operations on one backend. Each is idempotent: call it again to poll."""

    backend: str

    def register(self, host: HostView, *, credentials_changed: bool) -> Result:
        """Make sure the backend knows the host and can manage it (validates credentials)."""
        ...

    def inspect(self, host: HostView, *, restart: bool) -> Result: ...

    def prepare(self, host: HostView) -> Result: ...

    def provision(self, host: HostView) -> Result: ...

    def deprovision(self, host: HostView) -> Result: ...

    def adopt(self, host: HostView) -> Result:
        """Take over a host that already runs its image, without writing to it."""
        ...

    def power(self, host: HostView, *, on: bool) -> Result: ...

    def reboot(self, host: HostView) -> Result: ...

    def detach(self, host: HostView) -> Result:
        """Forget the host in the backend without deprovisioning it."""
        ...

    def delete(self, host: HostView) -> Result: ...


class CheckedBackend(Provisioner, Protocol):
    """A backend outside this process (Ironic) that a command checks before it starts.

    ``check()`` answers ``""`` when the backend is usable, else what is wrong (the URL,
    the credentials, the version), so a command can say so at once instead of every host
    failing the same way later. ``node_names()`` lists every node the backend holds (a
    RuntimeError saying why if it cannot), so a command can refuse to start over nodes an
    earlier run left.
    """

    def check(self) -> str: ...

    def node_names(self) -> list[str]: ...
