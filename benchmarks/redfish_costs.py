"""Per-host costs of Ironic's ``redfish`` path against fake-hardware: seconds and Ironic API
calls of each step of one host's life, through the provisioner as the controller calls it.

Starts the Redfish BMC emulator (tools/sushy/install.sh, with the hardware of
testbed/sushy_hardware.py), a standalone Ironic with ``redfish`` and fake-hardware
(tools/ironic/install.sh, genisoimage from tools/genisoimage/install.sh on its PATH) and an
HTTP server on loopback for the live ISO and the config drives Ironic builds. Each round
takes one host per hardware type through register, inspect, prepare, deploy (with user,
network and meta data) and power off, asking again after the delay each answer names, as
the controller does; then deletes both nodes.

    .venv/bin/python -m benchmarks.redfish_costs [--rounds 3] [--poll-delay 2]

What differs between the two paths:

* ``redfish``: the BMC checks the credentials (Ironic's verify, at register), inspection
  is out-of-band (processors, memory, disks, NICs read from the BMC), the deploy is
  ``ramdisk`` with a live ISO and a config drive (built into an ISO, both inserted as
  virtual media, then power on), and every power change is the emulator's: applied 1 to
  11 s after it is asked, at random, as slow hardware does; hence the spread.
* fake-hardware: every interface is ``fake`` with no delay: the cost of Ironic's own state
  machine and of the provisioner's polling, nothing else.

With the controller's default poll delay (2 s) a step's seconds are mostly whole polls;
``--poll-delay 0.2`` (the tests') shows how long Ironic and the BMC take, at the price of
more node reads. docs/benchmarks.md records the figures.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import urllib3

from state_controller.api.bmc import parse_bmc_address
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.provisioning.provisioner import Credentials, HostData, HostView
from state_controller.provisioning.results import Outcome, Result
from state_controller.simulation.fleet import IMAGE
from testbed.ironic_server import IronicServer
from testbed.processes import installed
from testbed.redfish_bmc import FakeSystem, RedfishBMC

STEPS = ("register", "inspect", "prepare", "deploy", "power off")
BOOT_ISO = b"\0" * 2048
SYSTEM = FakeSystem("5a0c1e2d-7b3f-4e6a-8d9c-0b1a2c3d4e01", "bench-0", "52:54:00:6c:00:01")
DATA = HostData(
    user_data="#cloud-config\n",
    network_data={"links": [], "networks": [], "services": []},
    meta_data={"local-hostname": "bench-0"},
)
STEP_TIMEOUT = 180.0


@dataclass(frozen=True)
class Cost:
    seconds: float
    calls: int


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--poll-delay", type=float, default=2.0)
    args = parser.parse_args()
    sushy, ironic, iso = (
        installed("sushy"),
        installed("ironic"),
        installed("genisoimage") / "usr" / "bin",
    )
    with tempfile.TemporaryDirectory() as tmp, images(Path(tmp) / "images") as url:
        work = Path(tmp)
        config: dict[str, dict[str, str | int]] = {
            "redfish": {"connection_attempts": 1, "connection_retry_interval": 1},
            "deploy": {"http_url": url, "http_root": str(work / "images")},
        }
        with (
            RedfishBMC(sushy, work / "bmc", systems=[SYSTEM]) as bmc,
            IronicServer(ironic, work / "ironic", redfish=True, config=config, tool_dirs=[iso])
            as server,
        ):  # fmt: skip
            print(
                f"redfish costs: {args.rounds} rounds, poll delay {args.poll_delay:g}s, "
                f"Ironic at {server.url}, the emulator at {bmc.url}",
                flush=True,
            )
            table = measure(server.url, bmc, f"{url}/boot.iso", args)
    report(table, args.rounds)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def images(root: Path) -> Iterator[str]:
    """``root`` with the live ISO in it, served on loopback: its URL."""
    root.mkdir(parents=True)
    (root / "boot.iso").write_bytes(BOOT_ISO)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def hosts(bmc: RedfishBMC, boot_iso: str) -> dict[str, HostView]:
    """One host per hardware type: the emulated system with a live ISO (``ramdisk``
    deploy), and a fake-hardware one with the demo fleet's image (``fake`` deploy)."""
    address = bmc.address(SYSTEM)
    redfish = HostView(
        namespace="bench",
        name="redfish-0",
        provider_id="",
        bmc=parse_bmc_address(address),
        bmc_address=address,
        credentials=Credentials(bmc.username, bmc.password),
        boot_mac_address=SYSTEM.mac,
        image={
            "url": boot_iso,
            "checksum": hashlib.sha256(BOOT_ISO).hexdigest(),
            "diskFormat": "live-iso",
        },
        automated_cleaning=False,
        data=DATA,
    )
    fake_address = "redfish://192.0.2.1/redfish/v1/Systems/1"
    fake = replace(
        redfish,
        name="fake-0",
        bmc=parse_bmc_address(fake_address),
        bmc_address=fake_address,
        boot_mac_address="52:54:00:6c:00:02",
        image=dict(IMAGE),
    )
    return {"redfish": redfish, "fake-hardware": fake}


def measure(
    url: str, bmc: RedfishBMC, boot_iso: str, args: argparse.Namespace
) -> dict[str, dict[str, list[Cost]]]:
    """{hardware type: {step: a cost per round}}."""
    provs = {
        "redfish": IronicProvisioner(url, poll_delay=args.poll_delay),
        "fake-hardware": IronicProvisioner(url, driver="fake-hardware", poll_delay=args.poll_delay),
    }
    table: dict[str, dict[str, list[Cost]]] = {kind: {s: [] for s in STEPS} for kind in provs}
    for n in range(args.rounds):
        for kind, host in hosts(bmc, boot_iso).items():
            for step, cost in one_life(provs[kind], host):
                table[kind][step].append(cost)
                print(f"  round {n + 1} {kind:13} {step:9} {cost.seconds:5.1f}s {cost.calls:3}")
        purge(url)
    return table


def one_life(prov: IronicProvisioner, host: HostView) -> Iterator[tuple[str, Cost]]:
    """Each step of ``host``'s life and what it cost; fails on a step that fails."""
    done, cost = timed(prov, lambda: prov.register(host, credentials_changed=True))
    yield "register", cost
    host = replace(host, provider_id=str(done.provider_id))
    first = [True]

    def inspect() -> Result:
        restart, first[0] = first[0], False
        return prov.inspect(host, restart=restart)

    yield "inspect", timed(prov, inspect)[1]
    yield "prepare", timed(prov, lambda: prov.prepare(host))[1]
    yield "deploy", timed(prov, lambda: prov.provision(host))[1]
    yield "power off", timed(prov, lambda: prov.power(host, on=False))[1]


def timed(prov: IronicProvisioner, call: Callable[[], Result]) -> tuple[Result, Cost]:
    """The first answer of ``call`` that is not "not yet", asked again after the delay each
    answer names; with the seconds and Ironic API calls it took."""
    before, start = sum(prov.calls.values()), time.monotonic()
    while True:
        result = call()
        if result.outcome not in (Outcome.CONTINUING, Outcome.RETRY_AFTER):
            break
        if time.monotonic() - start > STEP_TIMEOUT:
            raise SystemExit(f"no answer after {STEP_TIMEOUT:g}s: {result}")
        time.sleep(result.delay)
    if result.outcome is not Outcome.COMPLETE:
        raise SystemExit(f"failed: {result.message} {result.details}")
    seconds = time.monotonic() - start
    return result, Cost(seconds, sum(prov.calls.values()) - before)


def purge(url: str) -> None:
    """Delete every node (maintenance first: an active node is deleted as it is)."""
    http = urllib3.PoolManager(retries=False)
    headers = {"X-OpenStack-Ironic-API-Version": "1.115", "Content-Type": "application/json"}
    nodes = http.request("GET", f"{url}/v1/nodes", headers=headers).json()["nodes"]
    for node in nodes:
        path = f"{url}/v1/nodes/{node['uuid']}"
        http.request("PUT", f"{path}/maintenance", body=b'{"reason": "bench"}', headers=headers)
        http.request("DELETE", path, headers=headers)


def report(table: dict[str, dict[str, list[Cost]]], rounds: int) -> None:
    print(f"\nper host, mean of {rounds} rounds (seconds: min-max)")
    print(f"{'step':10} {'redfish s':>17} {'calls':>6}   {'fake-hardware s':>17} {'calls':>6}")
    totals = {kind: [0.0, 0.0] for kind in table}
    for step in STEPS:
        cells = []
        for kind in table:
            costs = table[kind][step]
            secs = [c.seconds for c in costs]
            calls = statistics.mean(c.calls for c in costs)
            totals[kind][0] += statistics.mean(secs)
            totals[kind][1] += calls
            spread = f"({min(secs):.1f}-{max(secs):.1f})"
            cells.append(f"{statistics.mean(secs):5.1f} {spread:>11} {calls:6.1f}")
        print(f"{step:10} {cells[0]}   {cells[1]}")
    (rs, rc), (fs, fc) = totals.values()
    print(f"{'total':10} {rs:5.1f} {'':>11} {rc:6.1f}   {fs:5.1f} {'':>11} {fc:6.1f}")


if __name__ == "__main__":
    main()
