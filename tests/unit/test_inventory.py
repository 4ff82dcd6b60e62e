"""What a machine is (books/inventory.py): the HostState's status.inventory and the
hoststate_host_info series say the same, each value bounded, the BMC's word over the
inspection's, nothing empty in a label."""

from __future__ import annotations

from state_controller.api.hoststate import HostStateStatus
from state_controller.api.states import ProvisioningState as P
from state_controller.books.book import Book
from state_controller.books.inventory import LABEL_MAX, inventory_of
from state_controller.books.projections import hoststate_status
from state_controller.books.stuck import StuckPolicy
from state_controller.observability.inventory import InventoryCollector
from testbed.clocks import T0

INSPECTED = {
    "systemVendor": {"manufacturer": "Dell Inc.", "productName": "PowerEdge R750"},
    "firmware": {"bios": {"vendor": "Dell Inc.", "version": "1.6.5", "date": "2023-01-01"}},
}


def inspected_book(key: str = "metal/host-0") -> Book:
    book = Book(key, now=T0)
    book.move(P.PROVISIONED, now=T0, reason="r")
    book.note(now=T0, hardware=INSPECTED, consumer="Metal3Machine metal/worker-a")
    return book


def info(collector: InventoryCollector) -> list[dict[str, str]]:
    return [dict(s.labels) for family in collector.collect() for s in family.samples]


def test_the_status_and_the_series_say_what_the_machine_is() -> None:
    book = inspected_book()
    book.note(now=T0, node="worker-0", pool="worker")
    status = hoststate_status(book, StuckPolicy(), T0 + 1)
    assert status["inventory"] == {
        "vendor": "Dell Inc.",
        "model": "PowerEdge R750",
        "biosVersion": "1.6.5",
        "pool": "worker",
        "source": "Host",
        "consumer": "Metal3Machine metal/worker-a",
    }
    HostStateStatus.model_validate(status)  # the CRD's own model takes it
    (series,) = info(InventoryCollector(lambda: {book.key: book}))
    assert series == {
        "namespace": "metal",
        "host": "host-0",
        "vendor": "Dell Inc.",
        "model": "PowerEdge R750",
        "bios_version": "1.6.5",
        "pool": "worker",
        "source": "Host",
        "consumer": "Metal3Machine metal/worker-a",
    }


def test_the_bmcs_own_report_after_servicing_is_the_bios_shown() -> None:
    book = inspected_book()
    firmware = {"components": [{"component": "bmc", "version": "7.0"},
                               {"component": "bios", "version": "1.7.0"}]}  # fmt: skip
    book.note(now=T0, firmware=firmware)
    assert inventory_of(book).bios == "1.7.0"


def test_values_are_bounded_and_one_line_and_unknowns_are_words() -> None:
    book = Book("metal/host-1", now=T0)
    vendor = "Very   Long\nVendor " + "x" * 200
    book.note(now=T0, hardware={"systemVendor": {"manufacturer": vendor, "productName": 7}})
    seen = inventory_of(book)
    assert len(seen.vendor) == LABEL_MAX and "\n" not in seen.vendor
    assert seen.vendor.startswith("Very Long Vendor x") and seen.model == "7"
    HostStateStatus.model_validate(hoststate_status(book, StuckPolicy(), T0))
    lone = Book("hoststate-system/worker-9", now=T0, node_only=True)
    (series,) = info(InventoryCollector(lambda: {lone.key: lone}))
    assert series["source"] == "Node"
    assert (series["vendor"], series["model"], series["bios_version"]) == ("unknown",) * 3
    assert (series["pool"], series["consumer"]) == ("unlabeled", "none")
    assert hoststate_status(lone, StuckPolicy(), T0)["inventory"] == {"source": "Node"}
