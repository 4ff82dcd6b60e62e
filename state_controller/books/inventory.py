"""What a machine is, in the few words a fleet is grouped by: its vendor and model, the
BIOS version it runs, its Node's pool, what the book follows and who uses it.

One projection of the book, read by the HostState's ``status.inventory`` and by the
``hoststate_host_info`` series, so that a dashboard and ``kubectl`` say the same. Every
value is cut to :data:`LABEL_MAX` characters: they become label values, and a BMC's
vendor string or a consumer's name is whatever its author wrote. The series is one per
host whatever the values, so the bound on its size is the fleet's; the bound on each
value keeps one host's series small.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..api.hoststate import Source
from ..api.inventory import LABEL_MAX
from .book import Book


@dataclass(frozen=True, slots=True)
class Inventory:
    vendor: str  # "" when no inspection reported it
    model: str
    bios: str  # the BIOS version: the BMC's last word (servicing), else the inspection's
    pool: str  # the Node's pool ("" without a Node)
    source: str  # Host, BareMetalHost or Node: what the book follows
    consumer: str  # "Kind namespace/name" of who uses the host ("" nobody)

    def wire(self) -> dict[str, str]:
        """The HostState's ``status.inventory``: only what is known."""
        named = {
            "vendor": self.vendor,
            "model": self.model,
            "biosVersion": self.bios,
            "pool": self.pool,
            "source": self.source,
            "consumer": self.consumer,
        }
        return {key: value for key, value in named.items() if value}


def source(book: Book) -> Source:
    """What the book follows: a lone Node, an observed BareMetalHost (whose facts only an
    observed book holds) or a driven Host."""
    if book.node_only:
        return Source.NODE
    if book.facts.bare_metal_host is not None:
        return Source.BARE_METAL_HOST
    return Source.HOST


def inventory_of(book: Book) -> Inventory:
    facts = book.facts
    hardware = facts.hardware or {}
    vendor = _mapping(hardware.get("systemVendor"))
    return Inventory(
        vendor=_bounded(vendor.get("manufacturer")),
        model=_bounded(vendor.get("productName")),
        bios=_bounded(_bios_reported(facts.firmware) or _bios_inspected(hardware)),
        pool=_bounded(facts.pool),
        source=source(book).value,
        consumer=_bounded(facts.consumer),
    )


def _bios_reported(firmware: Mapping[str, Any] | None) -> str:
    """The BIOS version among the components the BMC reported (servicing reads them)."""
    for component in (firmware or {}).get("components") or ():
        if isinstance(component, Mapping) and component.get("component") == "bios":
            return str(component.get("version") or "")
    return ""


def _bios_inspected(hardware: Mapping[str, Any]) -> str:
    """``firmware.bios.version`` of an inspection's inventory (metal3's HardwareDetails)."""
    bios = _mapping(_mapping(hardware.get("firmware")).get("bios"))
    return str(bios.get("version") or "")


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _bounded(value: object) -> str:
    return " ".join(str(value or "").split())[:LABEL_MAX]
