"""``sushy-emulator`` whose fake systems have processors and memory (and, through
testbed/sushy_servicing.py, a BIOS, firmware versions and RAID volumes): run by the
emulator's own interpreter (``<sushy venv>/bin/python testbed/sushy_hardware.py
--config ...``), it gives sushy-tools' ``FakeDriver`` the methods it lacks, then runs
sushy-tools' ``main``.

Why: the fake driver of sushy-tools 2.2.0 (``fakedriver.py``) implements neither
``get_processors`` nor ``get_total_memory`` nor ``get_total_cpus`` (the base class raises
``NotSupportedError``), so its systems have no ``Processors`` link and no
``MemorySummary.TotalSystemMemoryGiB``. Ironic 39.0.0's out-of-band ``redfish`` inspection
of such a system ends ``inspect failed``, measured: "Failed to inspect hardware. Reason:
Unexpected exception of type MissingAttributeError: The attribute Processors is missing
from the resource /redfish/v1/Systems/<uuid>"; memory is one of the properties its
inspection must find (``memory_mb``, with ``local_gb`` and ``cpu_arch``). Disks need nothing
here: the emulator serves them from its own ``SUSHY_EMULATOR_STORAGE`` and
``SUSHY_EMULATOR_DRIVES`` settings.

What each method answers comes from the system's entry in ``SUSHY_EMULATOR_FAKE_SYSTEMS``
(testbed/redfish_bmc.py writes ``cpus``, ``cpu_model`` and ``memory_gib``); an entry
without them answers as the fake driver does, "not supported". The processors are one
socket with ``cpus`` threads (Ironic counts threads); the emulator's processor template
says x86-64, which Ironic records as ``cpu_arch`` ``x86_64``.

Power: the fake driver applies a power request ``random.randint(1, 11)`` seconds after
the whole second it was asked in (sushy-tools 2.2.0, ``set_power_state``: 0 to 11 s), on
the next read of the system. Ironic's redfish power interface then polls the system with a
backoff (``node_wait_for_power_state``: 1 s, then about 2, 4, 8 s apart), so one power
change cost a test up to ~15 s, and a BIOS setting or a firmware update (a reboot: two of
them) up to ~30 s. With ``SUSHY_EMULATOR_FAKE_POWER_DELAY`` (seconds; RedfishBMC sets it)
the change is applied that long after it was asked instead: still not at once (the BMC
answers the request before the system has switched, and a read in between sees the old
state, as on hardware), and before Ironic's first look 1 s later.

Servicing (BIOS, firmware, RAID) is in testbed/sushy_servicing.py, a health rollup a
test can change in testbed/sushy_health.py, both imported here before the emulator
starts; their docstrings record why each of their patches exists.

No import from the project: this runs in the emulator's virtualenv, not the project's.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from sushy_tools import error  # type: ignore[import-not-found]
from sushy_tools.emulator import main  # type: ignore[import-not-found]
from sushy_tools.emulator.resources.systems.fakedriver import (  # type: ignore[import-not-found]
    FakeDriver,
)


def _setting(driver: Any, identity: str, key: str) -> Any:
    """``key`` of the config entry of the system ``identity`` (UUID or name)."""
    uuid = driver.uuid(identity)
    for system in driver._config["SUSHY_EMULATOR_FAKE_SYSTEMS"]:
        if system["uuid"] == uuid and key in system:
            return system[key]
    raise error.NotSupportedError(f"fake system {identity} has no {key}")


def get_total_memory(self: Any, identity: str) -> int:
    """The system's RAM in GiB (``MemorySummary.TotalSystemMemoryGiB``)."""
    return int(_setting(self, identity, "memory_gib"))


def get_total_cpus(self: Any, identity: str) -> int:
    """The system's logical CPUs (``ProcessorSummary.Count``)."""
    return int(_setting(self, identity, "cpus"))


def get_processors(self: Any, identity: str) -> list[dict[str, str]]:
    """One socket with all the system's CPUs, in the shape of the libvirt driver's."""
    cpus = str(int(_setting(self, identity, "cpus")))
    model = str(_setting(self, identity, "cpu_model"))
    return [
        {
            "id": "CPU0",
            "socket": "CPU 0",
            "model": model,
            "vendor": "Sushy Emulator",
            "cores": cpus,
            "threads": cpus,
        }
    ]


_set_power_state = FakeDriver.set_power_state


def set_power_state(self: Any, identity: str, state: str) -> None:
    """The fake driver's power request, applied ``SUSHY_EMULATOR_FAKE_POWER_DELAY`` seconds
    from now when that is set (else when the fake driver picks: 0 to 11 s)."""
    _set_power_state(self, identity, state)
    delay = self._config.get("SUSHY_EMULATOR_FAKE_POWER_DELAY")
    if delay is None:
        return
    system = self._get(self.uuid(identity))  # the request is not due yet: at least 1 s away
    pending = system.get("pending_power")
    if pending:
        self._update(system, pending_power={**pending, "apply_time": time.time() + float(delay)})


FakeDriver.get_total_memory = get_total_memory
FakeDriver.get_total_cpus = get_total_cpus
FakeDriver.get_processors = get_processors
FakeDriver.set_power_state = set_power_state

if __name__ == "__main__":
    # Next to this file, on the path of a script: BIOS, firmware and RAID for servicing.
    import sushy_health  # type: ignore[import-not-found]  # noqa: F401
    import sushy_servicing  # type: ignore[import-not-found]  # noqa: F401

    sys.exit(main.main())
