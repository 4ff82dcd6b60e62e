"""Real Ironic failures land as readable errors; the BMC password appears nowhere."""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from prometheus_client import generate_latest

from state_controller.api.reach import ALLOW_IMAGE_HOST, Allowlist, Reach
from state_controller.cluster.interface import EVENTS, HOSTS, HOSTSTATES, SECRETS, Cluster
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.provisioning.ironic.faults import readable
from state_controller.provisioning.results import Outcome
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.ironic_server import IronicServer
from tests.ironic.helpers import (
    IronicAPI,
    degraded,
    events,
    eventually,
    host_status,
    new_cluster,
    provisioner,
    registered,
    running,
    sample,
    settled,
    state_of,
    view_of,
    wait_all,
)

pytestmark = pytest.mark.slow

UNREACHABLE_IMAGE = "http://127.0.0.1:9/x.img"  # nothing listens on the discard port
# the image servers here are on loopback, which no Host may name unless allowed
LOOPBACK_IMAGES = Reach(images=Allowlist.parse(["127.0.0.1", "*.demo.example"], ALLOW_IMAGE_HOST))


def create_host(
    cluster: Cluster, ns: str, index: int, password: str, **spec: Any
) -> dict[str, Any]:
    host = host_manifest(ns, index)
    host["spec"].update(spec)
    name = host["metadata"]["name"]
    cluster.create(SECRETS, secret_manifest(ns, f"{name}-bmc", "admin", password))
    return cluster.create(HOSTS, host)


def failing_hosts() -> dict[str, dict[str, Any]]:
    """host-0000: direct deploy of an image nobody serves; host-0001: agent inspection."""
    return {
        "host-0000": {"deploy_interface": "direct"},
        "host-0001": {"inspect_interface": "agent"},
    }


def bad_image() -> dict[str, Any]:
    return {"url": UNREACHABLE_IMAGE, "checksum": "0" * 64, "checksumType": "sha256"}


def _backend_words_logged(caplog: pytest.LogCaptureFixture, key: str, words: str) -> bool:
    """Ironic's own words for ``key`` reached the operator's log (and only that)."""
    return any(
        getattr(r, "host", None) == key and "the backend said: " in r.getMessage()
        and words in r.getMessage()
        for r in caplog.records
    )  # fmt: skip


def test_deploy_and_inspection_failures_are_readable(
    ironic: IronicServer, caplog: pytest.LogCaptureFixture
) -> None:
    """What a Host's author reads names the failure; Ironic's own text (which quotes what
    the image server or the port answered) is in the operator's log only."""
    caplog.set_level(logging.WARNING, logger="state_controller.runtime.hosts.reconciler")
    ns = "failing"
    prov = provisioner(ironic.url, failing_hosts())
    cluster = new_cluster()
    with running(cluster, prov, reach=LOOPBACK_IMAGES):
        create_host(cluster, ns, 0, "pw-0", image=bad_image(), automatedCleaningMode="disabled")
        create_host(cluster, ns, 1, "pw-1")

        deploy = eventually(
            lambda: (
                host_status(cluster, ns, "host-0000").get("errorType") == "provisioning error"
                and degraded(cluster, ns, "host-0000")
            ),
            what="deploy failure reported",
        )
        status = host_status(cluster, ns, "host-0000")
        assert status["provisioning"]["state"] == "provisioning"
        message = status["errorMessage"]
        assert message.startswith(
            f"deploying the image failed: Ironic could not download the image "
            f"{UNREACHABLE_IMAGE} (Connection refused); check spec.image.url"
        ), message
        assert "backend said" not in message and "Failed to prepare" not in message
        assert deploy["reason"] == "ProvisioningError"
        assert deploy["message"] == message
        assert _backend_words_logged(
            caplog, f"{ns}/host-0000", "Failed to prepare to deploy: Validation of image href"
        )

        inspect = eventually(
            lambda: (
                host_status(cluster, ns, "host-0001").get("errorType") == "inspection error"
                and degraded(cluster, ns, "host-0001")
            ),
            timeout=60,
            what=f"inspection failure reported: {host_status(cluster, ns, 'host-0001')}",
        )
        status = host_status(cluster, ns, "host-0001")
        assert status["provisioning"]["state"] == "inspecting"
        assert status["errorMessage"].startswith(
            "inspecting the hardware failed: the inspection ramdisk never reported back"
        ), status["errorMessage"]
        assert "backend said" not in status["errorMessage"]
        assert _backend_words_logged(
            caplog, f"{ns}/host-0001", "Timeout reached while inspecting the node"
        )
        assert inspect["reason"] == "InspectionError"

        # the failed work is retried (Ironic allows active/inspect again from the failed state)
        eventually(lambda: prov.actions[(f"{ns}~host-0000", "active")] >= 2, what="deploy retry")


def test_a_bmc_ironic_cannot_verify_is_a_registration_error(ironic: IronicServer) -> None:
    """Ironic's verify step (enroll -> manageable) checks the BMC; when it fails the node
    falls back to enroll with the reason in last_error. (The ``agent`` power interface
    fails that check on fake hardware: there is no agent to ask.)"""
    ns, name = "verify", "host-0000"
    prov = provisioner(ironic.url, {name: {"power_interface": "agent"}})
    cluster = new_cluster()
    with running(cluster, prov) as observed:
        create_host(cluster, ns, 0, "pw-0")
        failure = eventually(
            lambda: (
                host_status(cluster, ns, name).get("errorType") == "registration error"
                and degraded(cluster, ns, name)
            ),
            what="registration failure reported",
        )
        status = host_status(cluster, ns, name)
        assert status["provisioning"]["state"] == "registering"  # went no further
        message = status["errorMessage"]
        assert message.startswith(
            "could not validate the BMC at bmc-0000.demo.example: Ironic cannot use the power "
            "settings made from spec.bmc and the credentials Secret: Fast track mode must be "
            "enabled to use the agent power interface"
        ), message
        assert "backend said" not in message  # Ironic's own words: the operator's log
        assert failure["reason"] == "RegistrationError"
        assert failure["message"] == message
        # the Event is recorded after both statuses are written
        warnings = eventually(
            lambda: [
                e
                for e in events(cluster, ns)
                if e["type"] == "Warning" and e["reason"] == "RegistrationFailed"
            ],
            what="a RegistrationFailed Event",
        )
        assert warnings[0]["message"] == message
        # retried with backoff: verify is asked again, the error counted, nothing more
        eventually(lambda: prov.actions[(f"{ns}~{name}", "manage")] >= 2, what="a retry")
        eventually(lambda: host_status(cluster, ns, name).get("errorCount", 0) >= 2)
        assert set(target for (_, target) in prov.actions) == {"manage"}
        # counted once both statuses are written
        eventually(
            lambda: sample(observed, "hoststate_errors_total", {"type": "registration error"}) >= 2,
            what="two registration errors counted",
        )


def test_hardware_type_ironic_does_not_offer_is_named(ironic: IronicServer) -> None:
    # no --ironic-driver: the redfish:// address asks for redfish, this Ironic has fake only
    result = IronicProvisioner(ironic.url).register(view_of("hw", 0), credentials_changed=True)
    assert result.outcome is Outcome.FAILED
    assert result.message == (
        "Ironic does not offer the 'redfish' hardware type that spec.bmc.address "
        "(redfish://bmc-0000.demo.example/redfish/v1/Systems/1) needs; enable it in Ironic "
        "(enabled_hardware_types) or use a BMC type it offers"
    )
    assert "No conductor service registered which supports driver redfish" in result.details
    assert IronicAPI(ironic.url).nodes() == []


class ImageFiles(BaseHTTPRequestHandler):
    """A web server with an image (an empty one: Ironic fails before it reads it) and no
    checksum file next to it."""

    def do_HEAD(self) -> None:
        self.send_response(200 if self.path == "/os.qcow2" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_HEAD

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def image_files() -> Iterator[str]:
    """The base URL of an :class:`ImageFiles` server on loopback, stopped after the test."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), ImageFiles)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.parametrize(
    ("checksum_url", "reason"),
    [
        # a name that never resolves (RFC 2606): no network is needed to fail on it
        ("http://checksums.invalid/os.qcow2.sha256sum", "Name or service not known"),
        (
            "{files}/os.qcow2.sha256sum",
            "HTTP 404",  # Ironic's words (which may quote the server) are not repeated
        ),
    ],
)
def test_a_checksum_file_ironic_cannot_fetch_is_named(
    ironic: IronicServer, api: IronicAPI, image_files: str, checksum_url: str, reason: str
) -> None:
    """Ironic fetches the checksum file itself when it downloads the image (the node's
    ``image_download_source`` is ``local``) and fails the deploy when it cannot."""
    checksum_url = checksum_url.format(files=image_files)
    image = {"url": f"{image_files}/os.qcow2", "checksum": checksum_url, "checksumType": "sha256"}
    prov = provisioner(ironic.url, {"host-0000": {"deploy_interface": "direct"}})
    view = registered(prov, replace(view_of("checksum", 0), image=image, automated_cleaning=False))
    local = [{"op": "add", "path": "/driver_info/image_download_source", "value": "local"}]
    code, _, text = api.request("PATCH", f"/v1/nodes/{view.provider_id}", local)
    assert code == 200, text

    result = settled(lambda: prov.provision(view), "the deploy failed")
    assert result.outcome is Outcome.FAILED, result
    assert result.message == (
        f"deploying the image failed: Ironic could not fetch the checksum file {checksum_url} "
        f"named in spec.image.checksum: {reason}; make it reachable from Ironic or put the "
        "checksum itself in spec.image.checksum"
    )
    node = api.node(view.provider_id)
    assert node is not None and node["provision_state"] == "deploy failed"
    assert result.details == node["last_error"]  # Ironic's own words kept next to ours
    assert result.details.startswith("Failed to prepare to deploy: ")
    # the same words about the image itself are not blamed on the checksum file
    image_error = result.details.replace(checksum_url, image["url"])
    assert "spec.image.checksum" not in readable(image_error, checksum_url=checksum_url)


SECRET = "Sup3r-Secret-BMC-Passw0rd"
ROTATED = "R0tated-Secret-BMC-Passw0rd"


def test_bmc_password_appears_nowhere(
    ironic: IronicServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    ns = "secrets"
    api = IronicAPI(ironic.url)
    prov = provisioner(ironic.url, failing_hosts())
    cluster = new_cluster()
    with running(cluster, prov, trace="memory", reach=LOOPBACK_IMAGES) as observed:
        create_host(cluster, ns, 0, SECRET, image=bad_image(), automatedCleaningMode="disabled")
        create_host(cluster, ns, 2, SECRET)
        wait_all(cluster, ns, ["host-0002"], "provisioned")
        eventually(
            lambda: host_status(cluster, ns, "host-0000").get("errorType") == "provisioning error"
        )
        # rotate the password of the healthy host: Ironic gets the new one (driver_info PATCH)
        validations = prov.calls["GET validate"]
        b64 = base64.b64encode(ROTATED.encode()).decode()
        cluster.patch(SECRETS, ns, "host-0002-bmc", {"data": {"password": b64}})
        eventually(lambda: prov.calls["GET validate"] > validations, what="credentials updated")
        eventually(observed.controller.idle)
        cluster.delete(HOSTS, ns, "host-0002")
        eventually(lambda: state_of(cluster, ns, "host-0002") == "<gone>", what="deleted")
        ironic_nodes = []
        for name in ("host-0000",):
            status_code, node, text = api.request("GET", f"/v1/nodes/{ns}~{name}")
            assert status_code == 200
            assert node["driver_info"]["redfish_password"] == "******"
            assert node["driver_info"]["redfish_username"] == "admin"
            ironic_nodes.append(text)
        _, _, detail = api.request("GET", "/v1/nodes/detail")
        ironic_nodes.append(detail)
        assert observed.spans is not None
        spans = [span.to_json() for span in observed.spans.get_finished_spans()]
        assert spans

    stored = [
        json.dumps(obj)
        for resource in (HOSTS, HOSTSTATES, EVENTS)
        for obj in cluster.list(resource, ns)[0]
    ]
    assert any("deploying the image failed" in text for text in stored)
    places = {
        "store (Hosts, HostStates, Events)": "\n".join(stored),
        "metrics": generate_latest(observed.metrics.registry).decode(),
        "spans": "\n".join(spans),
        "logs": caplog.text,
        "Ironic API responses": "\n".join(ironic_nodes),
    }
    for place, text in places.items():
        assert text, place
        for secret in (SECRET, ROTATED):
            assert secret not in text, f"the BMC password leaked into {place}"
