"""spec.bmc.address is a tenant's string: what the controller keeps of it stays bounded."""

from __future__ import annotations

import tracemalloc

import pytest

from state_controller.api import bmc

MIB = 1 << 20


def _growth(addresses: list[str]) -> int:
    """Bytes still held after parsing every address (the cache is all that keeps any)."""
    bmc.cache_clear()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for address in addresses:
            bmc.parse_bmc_address(address)
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_20000_distinct_addresses_leave_the_cache_bounded() -> None:
    """Twenty times the cache's bound: a cache without one would hold them all, many
    MiB, where a bounded one holds its 1024 entries."""
    addresses = [f"ipmi://bmc-{i:06d}.rack.example:623" for i in range(20_000)]
    grown = _growth(addresses)
    info = bmc.cache_info()
    assert info.maxsize is not None and info.maxsize <= 1024
    assert info.currsize <= info.maxsize
    assert grown < MIB, f"{grown / MIB:.1f} MiB held after 20,000 addresses"


def test_long_addresses_are_parsed_but_not_kept() -> None:
    path = "/redfish/v1/Systems/" + "x" * 2000  # the longest spec.bmc.address: 2048
    addresses = [f"redfish://bmc-{i:05d}.example{path}" for i in range(5_000)]
    assert bmc.parse_bmc_address(addresses[0]).path == path  # still parsed whole
    grown = _growth(addresses)
    # urllib.parse.urlsplit keeps its own 128 answers (~0.3 MiB of these): bounded too
    assert grown < MIB, f"{grown / MIB:.1f} MiB held after 5,000 addresses of 2 KB"


def test_a_cached_address_is_the_same_answer() -> None:
    bmc.cache_clear()
    first = bmc.parse_bmc_address("redfish://bmc.example/redfish/v1/Systems/1")
    assert bmc.parse_bmc_address("redfish://bmc.example/redfish/v1/Systems/1") is first
    assert bmc.cache_info().hits == 1
