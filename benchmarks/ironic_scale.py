"""Hosts through a real Ironic (fake-hardware, zero fake delays), creation to provisioned:
how many Ironic API calls the controller makes per host, against the fewest that can do.

Starts a standalone Ironic from ``tools/ironic/install.sh`` on loopback, the full
controller on the embedded cluster with the ``ironic`` provisioner, creates N hosts
(Secret + Host, image set, online) and waits until every one is provisioned and powered
on. Prints the wall time, Ironic API calls per host by method and by route, and the
minimum a perfect client would need.

    .venv/bin/python -m benchmarks.ironic_scale [--hosts 100] [--workers 4] [--poll-delay 2]

The minimum, per host, to go from nothing to an active, powered-on node:

* 8 writes: ``POST /v1/nodes``, ``POST /v1/ports`` (boot MAC), ``PUT states/provision``
  manage, inspect, provide, ``PATCH`` instance_info, ``PUT states/provision`` active,
  ``PUT states/power`` on (fake deploys leave the power state unknown);
* 6 reads: Ironic has no push, so each of the five asynchronous steps (verify, inspect,
  clean, deploy, power) needs at least one ``GET`` of the node to learn that it ended,
  made exactly when it did; plus one ``GET inventory`` for the hardware details.

That is 14 calls per host (``GET /v1``, the version negotiation, is once per process).
Anything above is polling: one ``GET`` per poll that finds a step still running (every
``--poll-delay`` seconds), and one per reconcile that cannot reuse the node read of the
operation before it (registration is ensured before every state's action; a read less
than a second old, with no write since, serves both).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter

from benchmarks.harness import wait
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS
from state_controller.provisioning.backoff import Backoff
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.fleet import create_fleet
from state_controller.wiring import observed_controller
from testbed.ironic_server import IronicServer
from testbed.processes import installed

MINIMUM = {
    "POST nodes": 1,
    "POST ports": 1,
    "PUT states/provision": 4,
    "PATCH node": 1,
    "PUT states/power": 1,
    "GET node": 5,
    "GET inventory": 1,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--poll-delay", type=float, default=2.0)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()

    venv = installed("ironic")
    with tempfile.TemporaryDirectory() as work, IronicServer(venv, work) as ironic:
        run(ironic.url, args)


def run(url: str, args: argparse.Namespace) -> None:
    n = args.hosts
    prov = IronicProvisioner(url, driver="fake-hardware", poll_delay=args.poll_delay)
    cluster = EmbeddedCluster()
    config = ControllerConfig(workers=args.workers, backoff=Backoff(base=1.0, cap=10.0))
    observed = observed_controller(cluster, prov, config)
    controller = observed.controller
    controller.start()
    print(
        f"ironic scale run: {n} hosts, {args.workers} workers, poll delay {args.poll_delay:g}s, "
        f"Ironic at {url} (fake-hardware, zero fake delays)",
        flush=True,
    )
    try:
        started = time.monotonic()
        create_fleet(cluster, "scale", n)
        wait(
            lambda: provisioned(cluster, n, powered=False),
            "every host provisioned",
            timeout=args.timeout,
            since=started,
            poll=0.05,
        )
        provisioned_at = time.monotonic() - started
        wait(
            lambda: provisioned(cluster, n, powered=True),
            "every host powered on",
            timeout=args.timeout - provisioned_at,
            since=started,
            poll=0.05,
        )
        powered_at = time.monotonic() - started
    finally:
        controller.stop()
    calls = Counter(prov.calls)
    versions = calls.pop("GET v1", 0)
    total = sum(calls.values())
    minimum = sum(MINIMUM.values())
    errors = sum(b.cursor.error_count for b in controller.books.values())
    print(f"\nwall time, creation to provisioned: {provisioned_at:.1f}s")
    print(f"wall time, creation to provisioned and powered on: {powered_at:.1f}s")
    print(f"errors in a row at the end: {errors}; API version negotiations: {versions}")
    print(f"\nIronic API calls per host: {total / n:.1f} (a perfect client: {minimum})")
    by_method: Counter[str] = Counter()
    for key, count in calls.items():
        by_method[key.split()[0]] += count
    for method, count in sorted(by_method.items()):
        print(f"  {method:6} {count / n:6.1f}")
    print("\nby route: calls per host [perfect client], mean latency")
    for key, count in sorted(calls.items(), key=lambda kv: -kv[1]):
        mean = 1000 * prov.client.seconds[key] / count
        print(f"  {key:24} {count / n:6.1f}  [{MINIMUM.get(key, 0)}]  {mean:7.1f} ms")
    busy = sum(prov.client.seconds.values())
    print(
        f"time spent waiting for Ironic: {busy:.0f}s over {args.workers} workers "
        f"({100 * busy / (args.workers * powered_at):.0f}% of their time)"
    )
    extra = calls["GET node"] / n - MINIMUM["GET node"]
    print(
        f"\nthe difference is polling: {extra:.1f} extra node reads per host (a poll that "
        f"found the step still running, every {args.poll_delay:g}s, or a reconcile that could "
        "not reuse the previous read)"
    )


def provisioned(cluster: EmbeddedCluster, n: int, *, powered: bool) -> bool:
    hosts, _ = cluster.list(HOSTS, "scale")
    done = 0
    for host in hosts:
        status = host.get("status") or {}
        if (status.get("provisioning") or {}).get("state") != "provisioned":
            continue
        if powered and not status.get("poweredOn"):
            continue
        done += 1
    return done == n


if __name__ == "__main__":
    main()
