"""The demo's third act (``demo --firmware-rollout``): a new BIOS image for every host.

Once the node update is done, every Host is given a firmware update and
``servicingPolicy: rolling``; the controller then services each pool's hosts a few at a
time (``--servicing-max-unavailable``), and tells each run as a chapter of the host's book.
Nothing here tells the controller a step: it reads them from the simulated BMCs.

With ``--faults`` some hosts meet what operators meet (:func:`firmware_faults`): a BMC that
refuses the image (the run fails; after ``hold`` seconds the operator publishes a fixed
image, :meth:`FirmwareRollout.tick`, which starts a new run) and a flash that hangs past
its step's threshold (the host is stuck ``updating firmware``, then goes on). A Node whose
PodDisruptionBudget allows no eviction (the update's ``drain-blocked`` fault) holds its
host's drain until the budget is let go, as it held the update's.
"""

from __future__ import annotations

import contextlib
import random
import re
from collections.abc import Mapping

from ..api.servicing import ServiceStep
from ..books.book import Book
from ..cluster.interface import HOSTS, Cluster, NotFound
from ..provisioning.fault_plan import Fault
from .nodes import set_budget

IMAGE = "http://firmware.demo.example/bios-2.1.bin"
FIXED_IMAGE = "http://firmware.demo.example/bios-2.1.1.bin"
FIRMWARE_FAULTS = ("refused", "hang")
BLOCKED = re.compile(r"blocked by PodDisruptionBudget ([^/\s]+)/(\S+)")


def firmware_faults(
    keys: list[str], rate: float, seed: int, hang_seconds: float
) -> dict[str, Fault]:
    """A third of ``rate`` of the hosts (one of each kind at least) get a firmware fault,
    the kinds taken in turn."""
    if rate <= 0:
        return {}
    count = max(len(FIRMWARE_FAULTS), round(len(keys) * rate / 3))
    chosen = sorted(random.Random(seed + 7).sample(sorted(keys), min(count, len(keys))))
    faults = {}
    for index, key in enumerate(chosen):
        kind = FIRMWARE_FAULTS[index % len(FIRMWARE_FAULTS)]
        faults[key] = (
            Fault("firmware", times=1)
            if kind == "refused"
            else Fault("hang", times=1, operation="service", seconds=hang_seconds)
        )
    return faults


class FirmwareRollout:
    def __init__(self, cluster: Cluster, keys: list[str], hold: float) -> None:
        self.cluster = cluster
        self.keys = keys
        self.hold = hold  # seconds a refused image stays refused before a fixed one is out
        self.started_at: float | None = None
        self.fixed: set[str] = set()
        self.released: set[str] = set()  # budgets let go

    @property
    def started(self) -> bool:
        return self.started_at is not None

    def start(self, now: float) -> None:
        """Every Host asked for the new image, serviced as its pool allows."""
        self.started_at = now
        for key in self.keys:
            self._ask(key, IMAGE)

    def tick(self, now: float, books: Mapping[str, Book]) -> None:
        """After ``hold``: a run the BMC refused gets a fixed image from the operator, and a
        drain a PodDisruptionBudget holds is let go (the application's owner scales up)."""
        if self.started_at is None or now < self.started_at + self.hold:
            return
        for key in self.keys:
            book = books.get(key)
            step = book.service.step if book is not None else None
            if step == ServiceStep.FAILED and key not in self.fixed:
                self.fixed.add(key)
                self._ask(key, FIXED_IMAGE)
            blocked = BLOCKED.search(book.service.message) if book is not None else None
            if step == ServiceStep.DRAINING and blocked and blocked.group(0) not in self.released:
                self.released.add(blocked.group(0))
                namespace, name = blocked.groups()
                set_budget(self.cluster, namespace, name, {"app": name}, allowed=1)

    def done(self, books: Mapping[str, Book]) -> bool:
        if self.started_at is None:
            return False
        return all(
            (book := books.get(key)) is not None
            and book.service.step == ServiceStep.SERVICED
            and bool(book.facts.serviced)
            for key in self.keys
        )

    def summary(self, books: Mapping[str, Book]) -> dict[str, object]:
        steps = [books[k].service.step.value for k in self.keys if k in books]
        return {
            "serviced": steps.count(ServiceStep.SERVICED.value),
            "hosts": len(self.keys),
            "fixed_image": sorted(k.rpartition("/")[2] for k in self.fixed),
        }

    def _ask(self, key: str, url: str) -> None:
        namespace, _, name = key.partition("/")
        spec = {
            "firmwareUpdates": [{"component": "bios", "url": url}],
            "servicingPolicy": "rolling",
        }
        with contextlib.suppress(NotFound):  # deleted meanwhile
            self.cluster.patch(HOSTS, namespace, name, {"spec": spec})
