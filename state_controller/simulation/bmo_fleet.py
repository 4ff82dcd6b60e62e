"""A fleet that baremetal-operator drives, played for the observe-mode demo
(``state-controller demo --observe``): BareMetalHosts created as a person would create
them, then walked by a played baremetal-operator through the states it moves a host
through (registering → inspecting → preparing → available → provisioning →
provisioned), claimed on the way by a played cluster-api-provider-metal3, with their
status written as BMO writes it (:class:`.baremetal_operator.PlayedBMO`).

Faults are BMO-shaped, so a baremetal-operator user meets the failures they know:

* ``provisioning-error``: Ironic's deploy fails; BMO writes operationalStatus ``error``,
  errorType ``provisioning error`` and Ironic's last error, counts it in errorCount,
  and after its backoff tries again (its clearError empties errorType and errorMessage
  but leaves the count, which per the CRD counts the errors since the last successful
  operation);
* ``stuck-inspecting``: inspection never answers (BMO issues #1706 and #1284);
* ``health-critical`` and ``health-warning``: the BMC's health rollup says a part
  failed or is failing; BMO's ``Healthy`` condition goes False with reason
  ``CriticalError`` or ``Warning`` (metal3-io/baremetal-operator PR #3013) while the
  host carries on provisioning, as BMO does.

Each host's steps take its own time (a seeded spread around :class:`BmoTimings`), so the
fleet does not move in lockstep. What inspection finds is written in ``status.hardware``
(BMO's HardwareDetails: vendor, model, BIOS, CPU, memory, NICs, disks), which a
HostState's inventory reads.
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
import time
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from ..cluster.interface import Cluster
from ..provisioning.simulated_machines import model_of
from .baremetal_operator import PlayedBMO
from .fleet import IMAGE as HOST_IMAGE

# the driven demo's image, in BMO's Image fields (its format is ``format``)
IMAGE = {
    "url": HOST_IMAGE["url"],
    "checksum": HOST_IMAGE["checksum"],
    "checksumType": "sha256",
    "format": "qcow2",
}

LOG = logging.getLogger(__name__)


class BmoFault(StrEnum):
    PROVISIONING_ERROR = "provisioning-error"
    STUCK_INSPECTING = "stuck-inspecting"
    HEALTH_CRITICAL = "health-critical"
    HEALTH_WARNING = "health-warning"


BMO_FAULTS = tuple(BmoFault)
# the reason of BMO's Healthy condition for each health fault (PR #3013's words)
HEALTH = {BmoFault.HEALTH_CRITICAL: "CriticalError", BmoFault.HEALTH_WARNING: "Warning"}
# what Ironic's last_error says of a deploy that could not fetch its image, as BMO
# copies it into errorMessage
DEPLOY_ERROR = (
    "Deploy step deploy.write_image failed: Error downloading image: Download of image "
    f"{IMAGE['url']} failed: HTTP 503 Service Unavailable"
)


@dataclass(frozen=True)
class BmoTimings:
    """How long each state lasts (seconds, at ``--speed 1``), before each host's spread."""

    registering: float = 1.5
    inspecting: float = 4.0
    preparing: float = 1.5
    available: float = 1.0  # until cluster-api-provider-metal3 claims the host
    provisioning: float = 5.0
    retry: float = 2.0  # BMO's backoff before it deploys a failed host again
    spread: float = 0.4  # each duration is drawn within ±40 % of its value

    def faster(self, speed: float) -> BmoTimings:
        return replace(
            self,
            registering=self.registering / speed,
            inspecting=self.inspecting / speed,
            preparing=self.preparing / speed,
            available=self.available / speed,
            provisioning=self.provisioning / speed,
            retry=self.retry / speed,
        )


def choose_bmo_faults(
    names: list[str], rate: float, kinds: tuple[BmoFault, ...], seed: int
) -> dict[str, BmoFault]:
    """``rate`` of the hosts, drawn by ``seed``, each with a fault; the kinds dealt in
    turn, so that every kind asked for is shown once enough hosts have a fault."""
    if not kinds:
        return {}
    rng = random.Random(f"bmo-faults:{seed}")
    chosen = rng.sample(names, round(len(names) * rate))
    return {name: kinds[i % len(kinds)] for i, name in enumerate(sorted(chosen))}


def hardware_details(name: str, index: int, seed: int) -> dict[str, Any]:
    """What an inspection of the host finds, in BMO's HardwareDetails fields; the same
    models as the driven demo's simulated machines, so both fleets group alike."""
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    rng = random.Random(digest)
    cores = rng.choice([16, 32, 48, 64])
    mac = "52:54:00:" + ":".join(f"{b:02x}" for b in index.to_bytes(3, "big"))
    return {
        "systemVendor": {
            "manufacturer": "Simulated",
            "productName": model_of(name),
            "serialNumber": f"SIM{digest[:4].hex().upper()}",
        },
        "firmware": {"bios": {"vendor": "Simulated", "version": "1.4.2", "date": "2026-03-02"}},
        "cpu": {"arch": "x86_64", "model": f"Simulated CPU {cores}C", "count": cores,
                "clockMegahertz": 2400.0},
        "ramMebibytes": rng.choice([65536, 131072, 262144]),
        "nics": [{"name": "eno1", "mac": mac, "ip": "", "speedGbps": 25, "pxe": True}],
        "storage": [{"name": "/dev/sda", "sizeBytes": 960_197_124_096, "rotational": False,
                     "type": "SSD"}],
        "hostname": name,
    }  # fmt: skip


@dataclass
class PlayedHost:
    """One BareMetalHost of the fleet and where the played operator has it."""

    bmo: PlayedBMO
    name: str
    index: int
    fault: BmoFault | None
    rng: random.Random
    state: str = ""  # the provisioning state last written ("": none yet)
    next_at: float = 0.0
    errors: int = 0  # errorCount as BMO keeps it
    failed: int = 0  # deploys failed so far
    in_error: bool = False


@dataclass
class PlayedFleet:
    """The fleet and its baremetal-operator: :meth:`start` runs the operator beside the
    controller (as BMO runs beside hoststate), :meth:`stop` stops it."""

    cluster: Cluster
    namespace: str
    count: int
    timings: BmoTimings = field(default_factory=BmoTimings)
    faults: dict[str, BmoFault] = field(default_factory=dict)
    attempts: int = 2  # deploys a provisioning-error host fails (0: every one)
    hold: float = 12.0  # how long a stuck inspection lasts (with attempts 0: for ever)
    seed: int = 1
    hosts: list[PlayedHost] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def names(self) -> list[str]:
        return [f"host-{i:04d}" for i in range(self.count)]

    def create(self) -> list[str]:
        """The BareMetalHosts, as a person creates them (no image yet: a consumer sets
        it); their keys."""
        now = time.time()
        for index, name in enumerate(self.names()):
            bmo = PlayedBMO(self.cluster, self.namespace, name, image=False)
            rng = random.Random(f"{self.seed}:{name}")
            host = PlayedHost(bmo, name, index, self.faults.get(name), rng, next_at=now)
            self.hosts.append(host)
        return [f"{self.namespace}/{h.name}" for h in self.hosts]

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="played-bmo", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            try:
                self.tick(time.time())
            except Exception:  # a write refused: said, and tried again at the next tick
                LOG.exception("the played baremetal-operator could not write a host")
                self._stop.wait(1.0)

    def tick(self, now: float) -> None:
        """Move every host whose time has come one step on."""
        for host in self.hosts:
            if host.next_at <= now:
                self._step(host, now)

    def _lasting(self, host: PlayedHost, seconds: float) -> float:
        spread = self.timings.spread
        return seconds * host.rng.uniform(1 - spread, 1 + spread)

    def _healthy(self, host: PlayedHost) -> str:
        if host.fault in HEALTH:
            return HEALTH[host.fault]
        return "Healthy"

    def _step(self, host: PlayedHost, now: float) -> None:
        t = self.timings
        bmo, health = host.bmo, self._healthy(host)
        if host.state == "":
            bmo.show("registering", started=("register",), at=now)
            host.state, host.next_at = "registering", now + self._lasting(host, t.registering)
        elif host.state == "registering":
            # registered: the BMC answers, and its health rollup with it
            bmo.show("inspecting", ended=("register",), started=("inspect",), at=now,
                     healthy=health, poweredOn=True)  # fmt: skip
            lasts = self._lasting(host, t.inspecting)
            if host.fault == BmoFault.STUCK_INSPECTING:
                lasts = self.hold if self.attempts else float("inf")
            host.state, host.next_at = "inspecting", now + lasts
        elif host.state == "inspecting":
            hardware = hardware_details(host.name, host.index, self.seed)
            bmo.show("preparing", ended=("inspect",), at=now, healthy=health, poweredOn=True,
                     hardware=hardware)  # fmt: skip
            host.state, host.next_at = "preparing", now + self._lasting(host, t.preparing)
        elif host.state == "preparing":
            self._show(host, "available", now)
            host.state, host.next_at = "available", now + self._lasting(host, t.available)
        elif host.state == "available":
            # cluster-api-provider-metal3 claims the host for a Machine and sets its image
            bmo.claim("Metal3Machine", self.namespace, f"{host.name}-m")
            bmo.set_image(dict(IMAGE))
            self._show(host, "provisioning", now, started=("provision",))
            host.state, host.next_at = "provisioning", now + self._lasting(host, t.provisioning)
        elif host.state == "provisioning":
            self._provisioning(host, now)

    def _provisioning(self, host: PlayedHost, now: float) -> None:
        t = self.timings
        if host.in_error:  # BMO's backoff is over: Ironic accepted the deploy again
            host.in_error = False
            self._show(host, "provisioning", now)
            host.next_at = now + self._lasting(host, t.provisioning)
            return
        failing = host.fault == BmoFault.PROVISIONING_ERROR and (
            not self.attempts or host.failed < self.attempts
        )
        if failing:
            host.failed += 1
            host.errors += 1
            host.in_error = True
            self._show(host, "provisioning", now, operationalStatus="error",
                       errorType="provisioning error", errorMessage=DEPLOY_ERROR)  # fmt: skip
            host.next_at = now + self._lasting(host, t.retry) * host.failed
            return
        host.errors = 0  # a success resets BMO's count
        self._show(host, "provisioned", now, ended=("provision",))
        host.state, host.next_at = "provisioned", float("inf")

    def _show(
        self, host: PlayedHost, state: str, now: float, *, started: tuple[str, ...] = (),
        ended: tuple[str, ...] = (), **status: Any,
    ) -> None:  # fmt: skip
        """A write after inspection: the hardware it found stays in the status, as the
        power and the BMC's health do."""
        kept = host.bmo.obj.get("status") or {}
        host.bmo.show(
            state, started=started, ended=ended, at=now, healthy=self._healthy(host),
            poweredOn=True, hardware=kept.get("hardware"), errorCount=host.errors, **status,
        )  # fmt: skip
