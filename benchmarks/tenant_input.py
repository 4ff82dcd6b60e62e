"""What one tenant's network or meta data can cost the controller, at the bounds.

A tenant writes its data Secrets; the controller parses them on its own threads and, on
every reconcile of a provisioned Host, copies the parsed value out of its cache and takes
its digest. This prints, for the worst texts the bounds admit and for the refused ones the
bounds exist for:

* parse: wall time of the first read (a new text), and the peak memory it allocates;
* per reconcile: wall time of a read of a text already parsed (copy out of the cache,
  then the digest and sizes a reconcile takes), and the memory a kept value holds.

The texts: a plain one of ``TEXT_MAX`` bytes (many short links, the shape of OpenStack
network_data), one written out to just under ``EXPANDED_MAX`` through aliases, and the
alias bombs of 322, 381 and 440 bytes (refused).

    .venv/bin/python -m benchmarks.tenant_input [--rounds 20]

The figures are in docs/security.md ("Bounded memory for tenant input").
"""

from __future__ import annotations

import argparse
import base64
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from state_controller.api.host import HostSpec
from state_controller.runtime.hosts import bounded_yaml
from state_controller.runtime.hosts import data as host_data
from testbed.alias_bomb import alias_bomb


def _plain() -> str:
    """network_data of short links, as close under TEXT_MAX as whole links come."""
    links, n = [], 0
    while True:
        mac = f"52:54:00:{n // 65536 % 256:02x}:{n // 256 % 256:02x}:{n % 256:02x}"
        link = f'- {{id: eth{n}, type: phy, ethernet_mac_address: "{mac}", mtu: 9000}}\n'
        if sum(map(len, links)) + len(link) + len("links:\n") > bounded_yaml.TEXT_MAX:
            return "links:\n" + "".join(links)
        links.append(link)
        n += 1


def _aliased() -> str:
    """A value of one anchored link used as often as the written-out bound allows."""
    link = '{id: eth0, type: phy, ethernet_mac_address: "52:54:00:00:00:01", mtu: 9000}'
    one = len('{"id":"eth0","type":"phy","ethernet_mac_address":"52:54:00:00:00:01","mtu":9000}')
    uses = (bounded_yaml.EXPANDED_MAX - 64) // (one + 2) - 1
    return f"first: &l {link}\nlinks: [{', '.join(['*l'] * uses)}]\n"


def _reader(text: str) -> Callable[[], host_data.DataRead]:
    secret: dict[str, Any] = {
        "metadata": {"labels": {"hoststate.io/host-data": "true"}, "resourceVersion": "1"},
        "data": {"networkData": base64.b64encode(text.encode()).decode()},
    }
    spec = HostSpec.model_validate(
        {
            "bmc": {"address": "ipmi://192.0.2.1", "credentialsName": "b"},
            "networkData": {"name": "nd"},
        }
    )
    return lambda: host_data.read_host_data(spec, "tenant", lambda key: secret)


def _reconcile(read: Callable[[], host_data.DataRead]) -> None:
    data = read().data
    if data is not None:
        data.digest()
        data.sizes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    texts = {
        "plain, at TEXT_MAX": _plain(),
        "aliased, at EXPANDED_MAX": _aliased(),
        "bomb of 7 levels": alias_bomb(7),
        "bomb of 8 levels": alias_bomb(8),
        "bomb of 9 levels": alias_bomb(9),
    }
    columns = ("bytes", "outcome", "parse", "peak", "reconcile", "kept")
    print(f"{'text':28} " + " ".join(f"{name:>9}" for name in columns))
    for label, text in texts.items():
        host_data._PARSED = host_data._Parsed()
        read = _reader(text)
        tracemalloc.start()
        started = time.perf_counter()
        first = read()
        parse = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        tracemalloc.start()
        kept_before = tracemalloc.get_traced_memory()[0]
        again = host_data._Parsed()
        again.parse(*_field_args(text))
        kept = tracemalloc.get_traced_memory()[0] - kept_before
        tracemalloc.stop()
        times = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            _reconcile(read)
            times.append(time.perf_counter() - started)
        outcome = "refused" if first.problem else "read"
        print(
            f"{label:28} {len(text):7d} {outcome:>9} {parse * 1000:7.1f}ms {peak / 2**20:7.2f}MB "
            f"{statistics.median(times) * 1000:8.2f}ms {kept / 2**20:7.2f}MB"
        )


def _field_args(text: str) -> tuple[str, str, str, str]:
    return text, "networkData", "tenant", "nd"


if __name__ == "__main__":
    main()
