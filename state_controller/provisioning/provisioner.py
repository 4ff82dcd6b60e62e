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
from typing import Any, Protocol, runtime_checkable

from ..api.bmc import BMCAddress
from ..servicing.plan import ServicePlan
from .results import HistoryRead, Result


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
    # spec.preprovisioningNetworkDataName: the deploy ramdisk's network, and the deployed
    # OS's when spec.networkData is not set
    ramdisk_network_data: dict[str, Any] | None = field(default=None, repr=False)
    # spec.image.ociAuthSecretName: base64 of username:password for the image's registry,
    # given to Ironic as instance_info.image_pull_secret; never in the config drive
    image_pull_secret: str | None = field(default=None, repr=False)

    @property
    def for_the_drive(self) -> bool:
        """Whether the Host gives anything for the config drive (not only a pull secret)."""
        drive = (self.user_data, self.network_data, self.meta_data, self.ramdisk_network_data)
        return any(part is not None for part in drive)

    def __repr__(self) -> str:
        return f"HostData(digest={self.digest()[:12]}, sizes={self.sizes()})"

    __str__ = __repr__

    def config_drive(self, default_meta_data: dict[str, Any] | None = None) -> dict[str, Any]:
        """The config drive as Ironic takes it: what the Host gives, its meta data else
        ``default_meta_data`` (see :func:`default_meta_data`)."""
        drive: dict[str, Any] = {}
        meta = self.meta_data if self.meta_data is not None else default_meta_data
        if meta is not None:
            drive["meta_data"] = meta
        if self.user_data is not None:
            drive["user_data"] = self.user_data
        network = self.network_data if self.network_data is not None else self.ramdisk_network_data
        if network is not None:
            drive["network_data"] = network
        return drive

    def digest(self) -> str:
        """sha256 of the Host's data in canonical JSON: tells changes apart, reveals nothing."""
        mine = {**self.config_drive(), "ramdisk_network_data": self.ramdisk_network_data}
        canonical = json.dumps(mine, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def sizes(self) -> dict[str, int]:
        """Bytes of each part, as canonical JSON for the structured ones."""
        return {
            key: len(value.encode() if isinstance(value, str) else json.dumps(value).encode())
            for key, value in self.config_drive().items()
        }


def default_meta_data(host: HostView) -> dict[str, Any]:
    """The meta data of a host whose spec gives none, as baremetal-operator generates it:
    the backend id as ``uuid`` and the host's name as hostname, under the keys cloud-init
    and Ignition read (``local-hostname``, ``local_hostname``, ``name``). Templates written
    for baremetal-operator read ``metal3-name`` and ``metal3-namespace``: those keys come
    too, beside ``hoststate-name`` and ``hoststate-namespace``."""
    return {
        "uuid": host.provider_id,
        "local-hostname": host.name,
        "local_hostname": host.name,
        "name": host.name,
        "hoststate-name": host.name,
        "hoststate-namespace": host.namespace,
        "metal3-name": host.name,
        "metal3-namespace": host.namespace,
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
    architecture: str | None = None  # spec.architecture, given at registration
    disable_power_off: bool = False  # never power off: reboot instead
    custom_deploy: str | None = None  # a deploy step of the ramdisk, instead of an image
    # a reboot annotation says "force": inspect() and provision() restart a deploy
    # ramdisk they wait on (.forced_reboot)
    force_reboot: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class Provisioner(Protocol):
    """Operations on one backend. Each is idempotent: call it again to poll."""

    backend: str

    def register(self, host: HostView, *, credentials_changed: bool) -> Result:
        """Make sure the backend knows the host and can manage it (validates credentials)."""
        ...

    def inspect(self, host: HostView, *, restart: bool) -> Result:
        """Inspect the hardware; not ``restart``: an inspection already finished counts."""
        ...

    def prepare(self, host: HostView) -> Result: ...

    def provision(self, host: HostView) -> Result: ...

    def deprovision(self, host: HostView) -> Result: ...

    def adopt(self, host: HostView) -> Result:
        """Take over a host that already runs its image, without writing to it."""
        ...

    def power(self, host: HostView, *, on: bool, soft: bool = False) -> Result:
        """Power the host on or off; ``soft``: ask its OS to shut down (ACPI)."""
        ...

    def reboot(self, host: HostView, *, soft: bool = False) -> Result:
        """Power-cycle the host; ``soft``: ask its OS to restart (ACPI), not the power."""
        ...

    def detach(self, host: HostView) -> Result:
        """Forget the host in the backend without deprovisioning it."""
        ...

    def firmware(self, host: HostView) -> Result:
        """What the BMC reports of the running host's firmware (``Result.firmware``)."""
        ...

    def service(self, host: HostView, plan: ServicePlan, *, started: bool) -> Result:
        """Apply ``plan`` to the provisioned host, then restart it into what was applied;
        while it runs, ``Result.service_step`` and ``service_done`` say where it is.
        ``started``: the book has a run under way, which this call polls (whatever ``plan``
        says now); else it starts one. A run that ended while nobody polled is complete."""
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


@runtime_checkable
class Versioned(Protocol):
    """A backend with an API version of its own (Ironic's microversion): shown in the
    controller's status once it is known."""

    @property
    def microversion(self) -> str | None: ...


@runtime_checkable
class HealthWatched(Protocol):
    """A backend that reads each machine's hardware health from its BMC (``register``
    answers it in ``Result.health``): a registered host at rest is looked at again every
    ``health_every`` seconds (0: never), so that a part failing on an idle machine is seen."""

    @property
    def health_every(self) -> float: ...


@runtime_checkable
class HistoryKept(Protocol):
    """A backend that keeps its own history of each machine (Ironic's node history): read
    every ``history_every`` seconds (0: never), the entries newer than ``mark`` (what the
    book last took; "" none) join the host's history once each. ``history`` answers None
    when it cannot be read now (a backend too old, an outage): it is asked again later."""

    @property
    def history_every(self) -> float: ...

    def history(self, host: HostView, mark: str) -> HistoryRead | None: ...
