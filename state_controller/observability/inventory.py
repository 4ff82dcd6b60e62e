"""The fleet's machines at scrape time: one ``hoststate_host_info`` series per host, its
labels what the machine is (books/inventory.py), so that dashboards group hosts by vendor,
model, BIOS version, pool, source and consumer, and other series join it by host; and
``hoststate_host_hardware_unhealthy`` for each machine whose BMC's health rollup says
Warning or Critical, while it says so.

One series per host, whatever its values: a host whose BIOS is updated moves to a new
series and leaves the old one (an info series, as kube-state-metrics' ``kube_node_info``).
Each value is bounded (``LABEL_MAX`` characters), and a value not known is a word, never
an empty label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..api.hardware import Health
from ..books.book import Book
from ..books.inventory import inventory_of
from .durations import UNKNOWN_CLASS, UNLABELED_POOL

NOBODY = "none"  # the consumer of a host nobody uses

LABELS = ["namespace", "host", "vendor", "model", "bios_version", "pool", "source", "consumer"]


def _family() -> GaugeMetricFamily:
    return GaugeMetricFamily(
        "hoststate_host_info",
        "1 for each host (or node), with what the machine is: vendor, model and BIOS "
        "version, its Node's pool, what the HostState follows and who uses the host "
        "(unknown, unlabeled or none when not known); one series per host.",
        labels=LABELS,
    )


def _unhealthy() -> GaugeMetricFamily:
    return GaugeMetricFamily(
        "hoststate_host_hardware_unhealthy",
        "1 for each host whose BMC's health rollup says Warning or Critical (the HostState's "
        "HardwareHealthy condition says what it said), with who reported it; only such "
        "hosts have a series.",
        labels=["namespace", "host", "health", "source"],
    )


UNHEALTHY = frozenset({Health.WARNING, Health.CRITICAL})


class InventoryCollector(Collector):
    def __init__(self, books: Callable[[], Mapping[str, Book]]) -> None:
        self.books = books

    def describe(self) -> Iterable[Any]:
        return [_family(), _unhealthy()]

    def collect(self) -> Iterable[Any]:
        family, unhealthy = _family(), _unhealthy()
        for key, book in list(self.books().items()):
            namespace, _, name = key.partition("/")
            health = book.facts.health
            if health is not None and health.health in UNHEALTHY:
                unhealthy.add_metric([namespace, name, health.health.value, health.source], 1)
            seen = inventory_of(book)
            family.add_metric(
                [
                    namespace,
                    name,
                    seen.vendor or UNKNOWN_CLASS,
                    seen.model or UNKNOWN_CLASS,
                    seen.bios or UNKNOWN_CLASS,
                    seen.pool or UNLABELED_POOL,
                    seen.source,
                    seen.consumer or NOBODY,
                ],
                1,
            )
        return [family, unhealthy]
