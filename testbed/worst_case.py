"""The longest statuses the controller writes, for the tests that they fit the CRDs (a
fast one against the schema in tests/unit, the proof against the real API server in
tests/cluster): a host with every fact known, a full history of failures whose error
is endless, a Stuck condition quoting it, and a node mid-update."""

from __future__ import annotations

from typing import Any

from state_controller.api.states import ErrorType
from state_controller.api.states import ProvisioningState as S
from state_controller.api.updates import UpdateStep
from state_controller.books.book import DEFAULT_HISTORY_LIMIT, Book
from state_controller.books.projections import host_status, hoststate_status
from state_controller.books.records import UpdateCursor
from state_controller.books.stuck import StuckPolicy
from testbed.clocks import T0

LONG = "the backend said: " + "x" * 100_000
FAILURES = DEFAULT_HISTORY_LIMIT + 5  # more than the history holds
STUCK_LONG_AGO = T0 + 10 * 24 * 3600  # the Stuck condition quotes the last error too


def busy_book() -> Book:
    """A host with every fact known, a full history and an endless error."""
    book = Book("ns/h", now=T0)
    book.move(S.REGISTERING, now=T0 + 1, reason="Registering")
    book.note(
        now=T0 + 2,
        provider_id="0b7e1c2a-4f6d-4b8e-9a51-1c2d3e4f5a6b",
        powered_on=True,
        hardware={
            "systemVendor": {"manufacturer": "Acme", "productName": "M1"},
            "cpu": {"arch": "x86_64", "model": "Acme 64C", "count": 64},
            "ramMebibytes": 262144,
            "nics": [{"name": "eno1", "mac": "52:54:00:00:00:01", "ip": "", "speedGbps": 25}],
            "storage": [{"name": "/dev/sda", "sizeBytes": 960_197_124_096, "rotational": False}],
            "hostname": "h",
        },
        image={"url": "http://i.example/os.img", "checksum": "0" * 64, "checksumType": "auto"},
        root_device_hints={"deviceName": "/dev/sda"},
        boot_mode="UEFI",
        credentials=("h-bmc", "12345"),
        observed_generation=3,
        last_updated=T0 + 2,
    )
    book.move(S.PROVISIONING, now=T0 + 3, reason="Provisioning")
    for attempt in range(FAILURES):
        book.fail(
            ErrorType.PROVISIONING, f"{attempt}: {LONG}", now=T0 + 4 + attempt, reason="Failed"
        )
    return book


def mid_update_book() -> Book:
    """The busy host, its node between two update steps: ``status.update`` in full,
    ``bootID`` included (the schema once lacked it, and the server dropped it)."""
    book = busy_book()
    book.note(now=T0 + 100, node="worker-3")
    for at, step in enumerate((UpdateStep.PENDING, UpdateStep.DRAINING), start=101):
        shown = UpdateCursor(step=step, desired="v2", current="v1", source="agent",
                             boot_id="boot-1", message="draining: 1 pod left")  # fmt: skip
        book.update_to(shown, now=T0 + at, reason="Step")
    return book


def endless_error_statuses() -> tuple[dict[str, Any], dict[str, Any]]:
    """Host.status and HostState.status of :func:`busy_book`, long stuck."""
    book = busy_book()
    return host_status(book, confirmed_seq=0), hoststate_status(book, StuckPolicy(), STUCK_LONG_AGO)


def mid_update_status() -> dict[str, Any]:
    """HostState.status of :func:`mid_update_book`."""
    return hoststate_status(mid_update_book(), StuckPolicy(), T0 + 200)
