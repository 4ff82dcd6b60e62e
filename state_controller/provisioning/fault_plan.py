"""Failures injected into the simulated hardware: which host fails what, how often.

A :class:`FaultPlan` maps hosts (``namespace/name``) to :class:`Fault` s; the
simulated backend asks it at each operation and answers with :func:`failure`,
worded as a real backend words the same trouble (with its raw text in the
details), so a demo shows what an operator would see. ``FaultPlan.random``
draws a reproducible plan for a fleet from a seed.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, get_args
from urllib.parse import urlsplit

from ..api.host import unfetchable_checksum
from .provisioner import HostView
from .results import Result, failed

Operation = Literal[
    "register",
    "inspect",
    "prepare",
    "provision",
    "deprovision",
    "power",
    "adopt",
    "delete",
    "service",
]
FaultKind = Literal[
    "credentials",
    "unreachable",
    "inspection",
    "provisioning",
    "power",
    "hang",
    "firmware",
    "health",
]
# the kinds ``--faults`` deals among a fleet's hosts by their share; a firmware fault
# belongs to a firmware rollout and a health fault is dealt apart (HEALTH_FAULT)
DEALT_APART: tuple[FaultKind, ...] = ("firmware", "health")
FAULT_KINDS: tuple[FaultKind, ...] = tuple(k for k in get_args(FaultKind) if k not in DEALT_APART)
HEALTH_FAULT: FaultKind = "health"

_FAULT_OPERATION: dict[FaultKind, Operation] = {
    "credentials": "register",
    "unreachable": "register",
    "inspection": "inspect",
    "provisioning": "provision",
    "power": "power",
    "firmware": "service",
    "health": "register",  # read with the node at every registration check
}


@dataclass(frozen=True)
class Fault:
    """One injected failure: ``times`` attempts fail (``None``: until removed)."""

    kind: FaultKind
    times: int | None = 3
    operation: Operation = "inspect"  # for "hang": the operation that hangs
    # for "hang": how long it hangs; for "health": how long the hardware is in trouble
    # once it struck (``times`` None: it stays in trouble)
    seconds: float = 30.0

    @property
    def target(self) -> Operation:
        return self.operation if self.kind == "hang" else _FAULT_OPERATION[self.kind]


class FaultPlan:
    """Which host (``namespace/name``) fails how; counts the failures it caused."""

    def __init__(self, faults: Mapping[str, Iterable[Fault]] | None = None) -> None:
        self._faults: dict[str, list[Fault]] = {k: list(v) for k, v in (faults or {}).items()}
        self._used: Counter[tuple[str, int]] = Counter()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._faults)

    def hosts(self) -> dict[str, list[Fault]]:
        return {k: list(v) for k, v in self._faults.items()}

    def add(self, host: str, fault: Fault) -> None:
        with self._lock:
            self._faults.setdefault(host, []).append(fault)

    def clear(self, host: str) -> None:
        with self._lock:
            self._faults.pop(host, None)

    def health(self, host: str) -> Fault | None:
        """The host's hardware fault, if it has one: not an attempt that fails, but a
        machine whose BMC reports trouble for a while (see the simulated backend)."""
        with self._lock:
            return next((f for f in self._faults.get(host, ()) if f.kind == HEALTH_FAULT), None)

    def take(self, host: str, operation: Operation) -> Fault | None:
        """The fault that strikes this attempt, if any (and count it)."""
        with self._lock:
            for index, fault in enumerate(self._faults.get(host, ())):
                if fault.target != operation or fault.kind == HEALTH_FAULT:
                    continue
                used = self._used[(host, index)]
                if fault.times is None or used < fault.times:
                    self._used[(host, index)] += 1
                    return fault
        return None

    @classmethod
    def random(
        cls,
        hosts: Iterable[str],
        *,
        rate: float,
        kinds: Iterable[FaultKind] = FAULT_KINDS,
        seed: int = 0,
        hang_seconds: float = 30.0,
        times: int | None = 3,
    ) -> FaultPlan:
        rng = random.Random(seed)
        kinds = list(kinds)
        plan: dict[str, list[Fault]] = {}
        for host in hosts:
            if rng.random() < rate:
                kind = rng.choice(kinds)
                if kind == "hang":
                    op: Operation = rng.choice(["inspect", "provision"])
                    plan[host] = [Fault("hang", times=1, operation=op, seconds=hang_seconds)]
                else:
                    plan[host] = [Fault(kind, times=times)]
        return cls(plan)


def health_faults(
    keys: list[str], rate: float, seed: int, seconds: float, *, recovers: bool = True
) -> dict[str, Fault]:
    """A tenth of ``rate`` of the hosts (one at least) get a hardware fault: their BMC's
    health rollup goes Warning, then Critical, for ``seconds`` once deployed, then OK again
    (the part replaced) unless not ``recovers``. Drawn apart from the other kinds, so that
    adding it changed no seed's other faults."""
    if rate <= 0 or not keys:
        return {}
    count = max(1, round(len(keys) * rate / 10))
    chosen = sorted(random.Random(seed + 11).sample(sorted(keys), min(count, len(keys))))
    return {
        key: Fault(HEALTH_FAULT, times=1 if recovers else None, seconds=seconds) for key in chosen
    }


def failure(fault: Fault, host: HostView) -> Result:
    """What the simulated backend answers when ``fault`` strikes."""
    if fault.kind == "inspection":
        return failed(
            "inspection failed: the inspection ramdisk did not report back",
            details="Timeout reached while inspecting the node",
        )
    if fault.kind == "provisioning":
        url = (host.image or {}).get("url", "")
        return failed(
            f"deploying the image failed: the checksum of {url} did not match spec.image.checksum",
            details="Image checksum mismatch",
        )
    if fault.kind == "power":
        return failed(
            "the BMC did not change the power state; it may be busy or misconfigured",
            details="IPMI command failed: Node busy",
        )
    if fault.kind == "firmware":
        return failed(
            "the BMC refused the firmware image: its signature did not verify; check the "
            "image at spec.firmwareUpdates[].url",
            details="Firmware update failed: image verification error",
        )
    return failed(f"simulated {fault.kind} failure")


def unfetchable_checksum_failure(host: HostView) -> Result | None:
    """A checksum file under the ``.invalid`` domain (RFC 2606: it never resolves) cannot
    be fetched: provisioning fails as it does in Ironic, with the same sentence."""
    checksum = str((host.image or {}).get("checksum") or "")
    if not checksum.startswith(("http://", "https://")):
        return None
    if not (urlsplit(checksum).hostname or "").endswith(".invalid"):
        return None
    reason = "Name or service not known"
    return failed(
        "deploying the image failed: "
        + unfetchable_checksum(checksum, reason, fetcher="the simulated backend"),
        details=f"Failed to download image {checksum}, reason: {reason}",
    )
