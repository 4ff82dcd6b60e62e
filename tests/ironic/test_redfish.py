"""Ironic's ``redfish`` hardware type against a Redfish BMC: sushy-emulator with HTTP basic
authentication (tests/support/redfish_bmc.py), so the credentials are checked and power is
switched by a BMC, not by fake-hardware.

The provisioner picks the hardware type from the BMC address (``redfish+http://``), as it
does for users; the emulator's systems are read over their own Redfish API to see what
reached them. The emulator takes 1 to 11 s to apply a power change, and Ironic ~27 s to give
up on a BMC that does not answer, hence the minute-long bounds.

Deploying uses a ``live-iso`` image (BMO's meaning: booted, not written): Ironic's
``ramdisk`` deploy hands its URL to the BMC as virtual media and powers the system on, with
no agent. Not here: inspection (Ironic's out-of-band ``redfish`` inspection fails on the
emulator's fake systems, which have no Processors resource) and reboot (Ironic's redfish
reboot is a power off then on: two of the emulator's delays).
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from state_controller.api.bmc import parse_bmc_address
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.provisioning.provisioner import Credentials, HostView
from state_controller.provisioning.results import Outcome, Result
from tests.conftest import wait_for
from tests.ironic.helpers import POLL, IronicAPI
from tests.support.ironic_server import IronicServer
from tests.support.redfish_bmc import FakeSystem, RedfishBMC

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NS = "redfish"
POWER_WAIT = 60.0  # the emulator's delay (up to 11 s) plus Ironic's own polling


@pytest.fixture(scope="module")
def sushy_venv() -> str:
    done = subprocess.run(
        [str(ROOT / "tools" / "sushy" / "install.sh")],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
        timeout=600,
    )
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def bmc_server(sushy_venv: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedfishBMC]:
    with RedfishBMC(sushy_venv, tmp_path_factory.mktemp("redfish-bmc")) as server:
        yield server


class QuietHandler(SimpleHTTPRequestHandler):
    """Serves a directory without a line on stderr per request."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def boot_iso(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of an "ISO" on loopback, for the BMC to insert as virtual media: it only
    downloads it, nothing boots."""
    root = tmp_path_factory.mktemp("images")
    (root / "boot.iso").write_bytes(b"\0" * 2048)
    handler = partial(QuietHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/boot.iso"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture(scope="module")
def redfish_ironic_server(
    ironic_venv: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[IronicServer]:
    # One connection attempt per Redfish operation (Ironic's default: 5, 4 s apart): each
    # already takes ~27 s on a BMC that does not answer, sushy's own 10 tries 3 s apart.
    retries = {"redfish": {"connection_attempts": 1, "connection_retry_interval": 1}}
    workdir = tmp_path_factory.mktemp("ironic-redfish")
    with IronicServer(ironic_venv, workdir, redfish=True, config=retries) as server:
        yield server


@pytest.fixture
def bmc(bmc_server: RedfishBMC) -> RedfishBMC:
    """The emulator, running (a test may have stopped it)."""
    if not bmc_server.running:
        bmc_server.start()
    return bmc_server


@pytest.fixture
def api(redfish_ironic_server: IronicServer) -> IronicAPI:
    """Ironic with redfish, running and without nodes."""
    if not redfish_ironic_server.running:
        redfish_ironic_server.start()
    ironic = IronicAPI(redfish_ironic_server.url)
    ironic.purge()
    return ironic


@pytest.fixture
def prov(api: IronicAPI) -> IronicProvisioner:
    """The provisioner as users run it: no forced hardware type."""
    return IronicProvisioner(api.url, poll_delay=POLL)


def view(
    bmc: RedfishBMC, system: FakeSystem, *, password: str | None = None, image: str = ""
) -> HostView:
    """A Host whose BMC is ``system`` on the emulator, its ``image`` a live ISO (booted by
    Ironic's ``ramdisk`` deploy, no agent) and no cleaning (it needs an agent)."""
    address = bmc.address(system)
    return HostView(
        namespace=NS,
        name=system.name,
        provider_id="",
        bmc=parse_bmc_address(address),
        bmc_address=address,
        credentials=Credentials(bmc.username, bmc.password if password is None else password),
        boot_mac_address=system.mac,
        image={"url": image, "diskFormat": "live-iso"} if image else None,
        automated_cleaning=False,
    )


def polled(call: Callable[[], Result], what: str, prov: IronicProvisioner) -> Result:
    """The first answer of ``call`` that is not "not yet", asked again after the delay each
    answer names, as the controller does; prints the seconds and Ironic API calls it took
    (``pytest -s``)."""
    return polled_together({what: call}, prov)[what]


def polled_together(
    calls: dict[str, Callable[[], Result]], prov: IronicProvisioner
) -> dict[str, Result]:
    """:func:`polled` for several calls at once (as the controller's workers run them)."""
    before, start = sum(prov.calls.values()), time.monotonic()
    due = dict.fromkeys(calls, start)
    answers: dict[str, Result] = {}

    def all_answered() -> bool:
        for what, call in calls.items():
            if what in answers or time.monotonic() < due[what]:
                continue
            result = call()
            if result.outcome in (Outcome.CONTINUING, Outcome.RETRY_AFTER):
                due[what] = time.monotonic() + result.delay
            else:
                answers[what] = result
        return len(answers) == len(calls)

    wait_for(all_answered, timeout=POWER_WAIT, what=" and ".join(calls))
    spent, asked = time.monotonic() - start, sum(prov.calls.values()) - before
    print(f"redfish {' and '.join(calls)}: {spent:.1f} s, {asked} Ironic API calls")
    return {what: answers[what] for what in calls}  # in the order asked


def test_registration_is_checked_by_the_bmc_and_deploy_and_power_off_reach_it(
    bmc: RedfishBMC, api: IronicAPI, prov: IronicProvisioner, boot_iso: str
) -> None:
    system = bmc.systems[0]
    wrong = view(bmc, system, password="not-the-password", image=boot_iso)

    refused = polled(lambda: prov.register(wrong, credentials_changed=True), "refused", prov)
    port = f"{bmc.host}:{bmc.port}"
    assert refused.outcome is Outcome.FAILED, refused
    assert refused.message == (
        f"could not validate the BMC at {port}: the BMC rejected the credentials; "
        "check username and password in the credentials Secret"
    )
    assert "401" in refused.details  # the emulator's answer, kept for the operator
    assert "not-the-password" not in refused.message + refused.details

    # The Secret fixed: the same node is registered, nothing is created twice.
    right = replace(wrong, credentials=Credentials(bmc.username, bmc.password))
    done = polled(lambda: prov.register(right, credentials_changed=True), "registration", prov)
    assert done.outcome is Outcome.COMPLETE and done.provider_id, done
    host = replace(right, provider_id=done.provider_id)
    node = api.node(done.provider_id)
    assert node is not None and node["driver"] == "redfish"
    assert node["provision_state"] == "manageable"
    assert [n["uuid"] for n in api.nodes()] == [done.provider_id]
    assert bmc.power_state(system) == "Off"
    assert done.powered_on is False  # what the BMC told Ironic

    # Deployed: the BMC inserted the live ISO as virtual media and powered the system on.
    assert polled(lambda: prov.prepare(host), "preparation", prov).done
    deployed = polled(lambda: prov.provision(host), "deploy", prov)
    assert deployed.outcome is Outcome.COMPLETE and deployed.powered_on is True, deployed
    assert bmc.power_state(system) == "On"
    cd = bmc.get(f"/redfish/v1/Systems/{system.uuid}/VirtualMedia/Cd")
    assert (cd["Image"], cd["Inserted"]) == (boot_iso, True)

    off = polled(lambda: prov.power(host, on=False), "power off", prov)
    assert off.outcome is Outcome.COMPLETE and off.powered_on is False, off
    assert bmc.power_state(system) == "Off"


def test_a_bmc_that_does_not_answer_is_a_connection_failure(
    bmc: RedfishBMC, api: IronicAPI, prov: IronicProvisioner
) -> None:
    system = bmc.systems[1]
    fresh = view(bmc, system)
    done = polled(lambda: prov.register(fresh, credentials_changed=True), "registration", prov)
    assert done.outcome is Outcome.COMPLETE and done.provider_id, done
    host = replace(fresh, provider_id=done.provider_id)
    bmc.stop()

    # The registered host is powered on, and a new host on that BMC is registered, at once:
    # Ironic's Redfish client tries a BMC that does not answer 10 times, 3 s apart.
    other = replace(fresh, name="second", boot_mac_address=None)
    results = polled_together(
        {
            "power on with the BMC down": lambda: prov.power(host, on=True),
            "registration with the BMC down": lambda: prov.register(
                other, credentials_changed=True
            ),
        },
        prov,
    )
    power, registration = results.values()
    silent = "the BMC did not answer; check spec.bmc.address and that Ironic can reach the BMC"
    assert power.outcome is Outcome.FAILED, power
    assert power.message == f"the BMC did not power on the host: {silent}"
    assert "Unable to connect" in power.details  # Ironic's words, for the operator's log
    assert registration.outcome is Outcome.FAILED, registration
    assert registration.message == f"could not validate the BMC at {bmc.host}:{bmc.port}: {silent}"

    # The BMC back: the same request goes through and the system is on; nothing was lost.
    bmc.start()
    on = polled(lambda: prov.power(host, on=True), "power on with the BMC back", prov)
    assert on.outcome is Outcome.COMPLETE and on.powered_on is True, on
    assert bmc.power_state(system) == "On"
    node = api.node(done.provider_id)
    assert node is not None and node["provision_state"] == "manageable"
