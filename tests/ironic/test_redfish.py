"""Ironic's ``redfish`` hardware type against a Redfish BMC: sushy-emulator with HTTP basic
authentication (testbed/redfish_bmc.py), so the credentials are checked and power is
switched by a BMC, not by fake-hardware.

The provisioner picks the hardware type from the BMC address (``redfish+http://``), as it
does for users; the emulator's systems are read over their own Redfish API to see what
reached them. The emulator applies a power change half a second after it is asked
(testbed/redfish_bmc.py ``POWER_DELAY``: after it has answered, so the provisioner must wait
for every change, and Ironic with it; sushy-tools' own 0 to 11 s proved no more and cost
minutes), and Ironic takes ~27 s to give up on a BMC that does not answer, hence the
minute-long bounds.

Deploying uses a ``live-iso`` image (BMO's meaning: booted, not written): Ironic's
``ramdisk`` deploy hands its URL to the BMC as virtual media and powers the system on, with
no agent. A config drive is built by Ironic into an ISO (with genisoimage, on its PATH),
written under its ``[deploy] http_root`` and inserted by the BMC from ``http_url``: here
both are the test's image server. Inspection is Ironic's out-of-band ``redfish`` one: the
emulator's systems have processors, memory and disks (testbed/sushy_hardware.py).
Not here: reboot (Ironic's redfish reboot is a power off then on: two of the emulator's
delays).

The last test runs the whole controller (``state-controller run`` on the session's
kube-apiserver) on one Host: registered, inspected, deployed with its data Secrets as the
config drive, its hardware health read from Ironic while it rests (OK, then Critical when
the BMC says so: testbed/sushy_health.py) and Ironic's node history entry of that change
in its history, powered on, then off through ``spec.online``. The second test reads the
node history of a power action Ironic failed while the BMC was down and then carried out.
For that test Ironic syncs power, and so reads health, every 2 s instead of every 120 s
(:func:`health_synced`): a restart of the module's Ironic, undone after.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from state_controller.api.bmc import parse_bmc_address
from state_controller.cluster.interface import HOSTS, HOSTSTATES, SECRETS
from state_controller.cluster.kube import KubeCluster
from state_controller.plugin.history import render
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.provisioning.provisioner import Credentials, HostView
from state_controller.provisioning.results import Outcome, Result
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.control_plane import ControlPlane
from testbed.ironic_server import IronicServer
from testbed.kube import kubectl
from testbed.processes import installed, stop_session
from testbed.redfish_bmc import DEFAULT_SYSTEMS, FakeSystem, RedfishBMC
from tests.conftest import empty_namespace, wait_for
from tests.ironic.helpers import POLL, IronicAPI

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NS = "redfish"
POWER_WAIT = 60.0  # a BMC that does not answer (~27 s), and Ironic's own polling
BOOT_ISO = b"\0" * 2048
# The system the controller drives (the last test), its hardware unlike the defaults so
# that what inspection found is seen to come from it.
DRIVEN = FakeSystem(
    "7d3b0e2c-5a61-4c8e-9f4b-2a1d6c0e9b03",
    "bmc-host-2",
    "52:54:00:6b:00:03",
    cpus=6,
    cpu_model="Emulated CPU 6",
    memory_gib=12,
    disks_gib=(30, 60),
)


@pytest.fixture(scope="module")
def sushy_venv() -> str:
    return str(installed("sushy", timeout=600))


@pytest.fixture(scope="module")
def genisoimage() -> str:
    """Where genisoimage is: Ironic builds a redfish deploy's config drive with it."""
    return str(installed("genisoimage", timeout=600) / "usr" / "bin")


@pytest.fixture(scope="module")
def bmc_server(sushy_venv: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedfishBMC]:
    workdir = tmp_path_factory.mktemp("redfish-bmc")
    with RedfishBMC(sushy_venv, workdir, systems=(*DEFAULT_SYSTEMS, DRIVEN)) as server:
        yield server


class QuietHandler(SimpleHTTPRequestHandler):
    """Serves a directory without a line on stderr per request."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass(frozen=True)
class Images:
    """A directory served over HTTP on loopback: ``url`` serves ``root``."""

    root: Path
    url: str


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Images]:
    """What the BMC downloads as virtual media: the live ISO, and the config drives Ironic
    writes there (its ``[deploy] http_root``, served as its ``http_url``)."""
    root = tmp_path_factory.mktemp("images")
    handler = partial(QuietHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Images(root, f"http://127.0.0.1:{server.server_address[1]}")
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture(scope="module")
def boot_iso(images: Images) -> str:
    """The URL of an "ISO" for the BMC to insert as virtual media: it only downloads it,
    nothing boots."""
    (images.root / "boot.iso").write_bytes(BOOT_ISO)
    return f"{images.url}/boot.iso"


@pytest.fixture(scope="module")
def redfish_ironic_server(
    ironic_venv: str, genisoimage: str, images: Images, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[IronicServer]:
    # One connection attempt per Redfish operation (Ironic's default: 5, 4 s apart): each
    # already takes ~27 s on a BMC that does not answer, sushy's own 10 tries 3 s apart.
    # A config drive is built into an ISO that the BMC downloads from where Ironic put it.
    config: dict[str, dict[str, str | int]] = {
        "redfish": {"connection_attempts": 1, "connection_retry_interval": 1},
        "deploy": {"http_url": images.url, "http_root": str(images.root)},
    }
    workdir = tmp_path_factory.mktemp("ironic-redfish")
    with IronicServer(
        ironic_venv, workdir, redfish=True, config=config, tool_dirs=[genisoimage]
    ) as server:
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
    began = prov.history(host, "")  # the first read: from what Ironic has now on
    assert began is not None and began.events == () and began.mark, began
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

    # Ironic recorded the power action it failed in its node history, which its node no
    # longer shows: read after the first read's mark, then nothing new after the last
    events, mark = [], began.mark
    while (read := prov.history(host, mark)) is not None and read.events:
        events, mark = [*events, *read.events], read.mark
        assert "redfish-password" not in read.said  # the operator's log: scrubbed
    assert read is not None and read.events == () and mark, read
    failures = [e for e in events if e.severity == "ERROR"]
    assert failures, events
    assert "Unable to connect" not in failures[0].words  # Ironic's words: the log only
    print(f"node history: {events}")


# -- the controller, on a real cluster, driving the emulated system -----------------------

CONTROLLER_NS = "redfish-run"
USER_DATA = "#cloud-config\nruncmd: [echo configured-by-hoststate]\n"
NETWORK_DATA = {
    "links": [{"id": "eth0", "type": "phy", "ethernet_mac_address": DRIVEN.mac}],
    "networks": [{"id": "n0", "link": "eth0", "type": "ipv4_dhcp"}],
    "services": [],
}
META_DATA = {"local-hostname": "driven-0"}


HEALTH_SYNC = {"sync_power_state_interval": 2}  # seconds; Ironic's default is 120


@pytest.fixture
def health_synced(api: IronicAPI, redfish_ironic_server: IronicServer) -> Iterator[IronicServer]:
    """The module's Ironic, restarted to sync power (and read health) every 2 s; stopped
    after with its own config back (the ``api`` fixture starts it again when asked)."""
    server = redfish_ironic_server
    before = dict(server.extra_config.get("conductor", {}))
    server.extra_config["conductor"] = {**before, **HEALTH_SYNC}
    server.restart()
    try:
        yield server
    finally:
        server.extra_config["conductor"] = before
        server.stop()


def test_the_controller_registers_inspects_deploys_and_powers_off_a_redfish_host(
    control_plane: ControlPlane,
    bmc: RedfishBMC,
    api: IronicAPI,
    health_synced: IronicServer,
    boot_iso: str,
    genisoimage: str,
    tmp_path: Path,
) -> None:
    redfish_ironic_server = health_synced
    kubectl(control_plane, "create", "namespace", CONTROLLER_NS, check=False)
    kube = KubeCluster.from_kubeconfig(str(control_plane.kubeconfig))
    log = tmp_path / "run.log"
    try:
        with controller(control_plane, redfish_ironic_server.url, log):
            create_driven_host(kube, bmc, boot_iso)
            # Registered means Ironic's verify reached the system with the Secret's
            # credentials: the emulator answers any other with 401 (the first test).
            status = wait_host(kube, log, provisioned_and_on, "provisioned and powered on")
            assert bmc.power_state(DRIVEN) == "On"
            node = api.node(f"{CONTROLLER_NS}~driven")
            assert node is not None and node["inspect_interface"] == "redfish", node
            assert_hardware_is_the_systems(status["hardware"])
            assert_config_drive_holds_the_secrets(
                redfish_ironic_server, bmc, node, genisoimage, tmp_path
            )

            # At rest, its health is read from Ironic, which reads it from the BMC.
            wait_healthy(kube, log, ("True", "Healthy"))
            bmc.set_health(DRIVEN, "Critical")
            message = wait_healthy(kube, log, ("False", "CriticalError"))
            assert message == "the BMC's health rollup is Critical, as the Ironic node says"
            assert (api.node(node["uuid"]) or {}).get("health") == "Critical"
            # and Ironic's node history, which recorded the change, joined the host's
            recorded = wait_for(
                lambda: [
                    r
                    for r in kube.get(HOSTSTATES, CONTROLLER_NS, "driven")["status"]["history"]
                    if "health rollup went from OK to Critical" in r["message"]
                ],
                timeout=POWER_WAIT,
                what="Ironic's health change in the HostState's history",
            )
            assert recorded[0]["reason"] == "BackendEvent", recorded
            assert recorded[0]["message"].startswith("Ironic (monitoring, INFO, ")
            state = kube.get(HOSTSTATES, CONTROLLER_NS, "driven")
            print(render(state, time.time(), limit=4))  # docs/ironic.md's sample (pytest -s)

            kube.patch(HOSTS, CONTROLLER_NS, "driven", {"spec": {"online": False}})
            wait_host(kube, log, lambda s: s.get("poweredOn") is False, "powered off")
            assert bmc.power_state(DRIVEN) == "Off"
            assert bmc.password not in log.read_text()
    finally:
        bmc.set_health(DRIVEN, None)
        empty_namespace(kube, CONTROLLER_NS)
        kube.close()


@contextmanager
def controller(plane: ControlPlane, ironic_url: str, log: Path) -> Iterator[None]:
    """``state-controller run`` on ``plane`` and Ironic, the hardware type picked by the BMC
    address as for users, loopback allowed for the BMC and the image server (the emulator's,
    the test's); stopped (its process group) on the way out."""
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "state_controller.cli", "run",
             "--kubeconfig", str(plane.kubeconfig), "--namespace", CONTROLLER_NS,
             "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0",
             "--ironic-url", ironic_url, "--ironic-poll-delay", "0.3",
             "--ironic-health-every", "1",
             "--allow-bmc", "127.0.0.1", "--allow-image-host", "127.0.0.1"],
            stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    try:
        wait_for(lambda: "caches synced" in log.read_text(), timeout=30, what="controller up")
        yield
    finally:
        stop_session(proc)


def create_driven_host(kube: KubeCluster, bmc: RedfishBMC, boot_iso: str) -> None:
    """The Host of :data:`DRIVEN`: its live ISO, its three data Secrets, no cleaning."""
    kube.create(SECRETS, secret_manifest(CONTROLLER_NS, "driven-bmc", bmc.username, bmc.password))
    for name, key, text in (
        ("driven-ud", "userData", USER_DATA),
        ("driven-nd", "networkData", json.dumps(NETWORK_DATA)),
        ("driven-md", "metaData", json.dumps(META_DATA)),
    ):
        kube.create(SECRETS, host_data_secret(name, key, text))
    spec = {
        "bmc": {"address": bmc.address(DRIVEN), "credentialsName": "driven-bmc"},
        "bootMACAddress": DRIVEN.mac,
        "online": True,
        "image": {
            "url": boot_iso,
            "checksum": hashlib.sha256(BOOT_ISO).hexdigest(),
            "diskFormat": "live-iso",
        },
        "automatedCleaningMode": "disabled",
        "userData": {"name": "driven-ud"},
        "networkData": {"name": "driven-nd"},
        "metaData": {"name": "driven-md"},
    }
    manifest = host_manifest(CONTROLLER_NS, 0)
    manifest["metadata"]["name"] = "driven"
    manifest["spec"] = spec
    kube.create(HOSTS, manifest)


def host_data_secret(name: str, key: str, text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": CONTROLLER_NS,
            "labels": {"hoststate.io/host-data": "true"},
        },
        "data": {key: base64.b64encode(text.encode()).decode()},
    }


def provisioned_and_on(status: dict[str, Any]) -> bool:
    state = (status.get("provisioning") or {}).get("state")
    return state == "provisioned" and status.get("poweredOn") is True


def wait_host(
    kube: KubeCluster, log: Path, done: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    """The Host's status once ``done`` says so (a deploy is ~11 to 21 s on the emulator)."""
    seen: dict[str, Any] = {}

    def status() -> dict[str, Any] | None:
        seen.update(kube.get(HOSTS, CONTROLLER_NS, "driven"))
        found: dict[str, Any] = seen.get("status") or {}
        return found if done(found) else None

    try:
        found: dict[str, Any] = wait_for(status, timeout=2 * POWER_WAIT, what=f"the host {what}")
    except AssertionError as e:
        raise AssertionError(f"{e}; the Host: {seen}; log: {log.read_text()[-3000:]}") from None
    return found


def wait_healthy(kube: KubeCluster, log: Path, want: tuple[str, str]) -> str:
    """The message of the HostState's HardwareHealthy condition once its status and reason
    are ``want`` (Ironic's power sync every 2 s, the controller's read every 1 s)."""
    seen: dict[str, Any] = {}

    def condition() -> str | None:
        state = kube.get(HOSTSTATES, CONTROLLER_NS, "driven")
        conditions = (state.get("status") or {}).get("conditions") or []
        found = next((c for c in conditions if c.get("type") == "HardwareHealthy"), {})
        seen.update(found)
        return (
            found.get("message", "") if (found.get("status"), found.get("reason")) == want else None
        )

    try:
        message: str = wait_for(condition, timeout=POWER_WAIT, what=f"HardwareHealthy {want}")
    except AssertionError as e:
        raise AssertionError(
            f"{e}; the condition: {seen}; log: {log.read_text()[-3000:]}"
        ) from None
    return message


def assert_hardware_is_the_systems(hardware: dict[str, Any]) -> None:
    """What Redfish inspection found is what the emulator's system has."""
    assert hardware["cpu"] == {"arch": "x86_64", "model": DRIVEN.cpu_model, "count": DRIVEN.cpus}
    assert hardware["ramMebibytes"] == DRIVEN.memory_gib * 1024
    assert [d["sizeBytes"] for d in hardware["storage"]] == [g << 30 for g in DRIVEN.disks_gib]
    assert [n["mac"] for n in hardware["nics"]] == [DRIVEN.mac]


def assert_config_drive_holds_the_secrets(
    ironic: IronicServer, bmc: RedfishBMC, node: dict[str, Any], genisoimage: str, tmp_path: Path
) -> None:
    """Ironic received exactly the Secrets' contents (its own record: its API masks the
    drive), and the BMC holds the ISO Ironic built of them as virtual media (read with
    genisoimage's isoinfo)."""
    assert node["instance_info"]["configdrive"] == "******"
    with sqlite3.connect(f"file:{ironic.db_path}?mode=ro", uri=True) as db:
        query = "SELECT instance_info FROM nodes WHERE uuid = ?"
        (raw,) = db.execute(query, (node["uuid"],)).fetchone()
    assert json.loads(raw)["configdrive"] == {
        "user_data": USER_DATA,
        "network_data": NETWORK_DATA,
        "meta_data": META_DATA,
    }
    media = bmc.get(f"/redfish/v1/Systems/{DRIVEN.uuid}/VirtualMedia/Floppy")
    assert media["Inserted"] is True, media
    iso = tmp_path / "configdrive.iso"
    with urllib.request.urlopen(media["Image"], timeout=10) as resp:
        iso.write_bytes(resp.read())

    def read(path: str) -> str:
        isoinfo = [
            f"{genisoimage}/isoinfo",
            "-i",
            str(iso),
            "-R",
            "-x",
            f"/openstack/latest/{path}",
        ]
        return subprocess.run(isoinfo, check=True, capture_output=True, text=True).stdout

    assert read("user_data") == USER_DATA
    assert json.loads(read("network_data.json")) == NETWORK_DATA
    # Ironic adds the node's UUID and name to the meta data it is given
    meta = json.loads(read("meta_data.json"))
    assert meta == {**META_DATA, "uuid": node["uuid"], "name": node["name"]}
