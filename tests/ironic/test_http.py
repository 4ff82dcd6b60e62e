"""The HTTP edge of the Ironic provisioner against a scripted server (no Ironic needed):
version negotiation, basic auth, and how refusals and outages become results.

Only what the real Ironic of tests/ironic cannot be made to do on cue is scripted here:
races (maintenance set between our read and our write, a failed state whose reason Ironic
has not written yet, a node locked or changing state at the moment of a write), the 406
renegotiation (a server whose API version changes mid-run), answers of an older Ironic or
of a proxy in front of it (version caps, 401/403/5xx), and Ironic's words for failures a
fake-hardware node never has (a failed teardown or reboot). What a real Ironic can produce
is tested against it: a checksum file it cannot fetch (test_failures), a node torn down
outside the controller (test_lost_records), a node in maintenance (test_maintenance).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.provisioning.ironic.faults import NOT_SHOWN, readable
from state_controller.provisioning.ironic.nodes import driver_info
from state_controller.provisioning.results import Outcome
from testbed.processes import free_port
from tests.ironic.helpers import view_of


class Script:
    """What the fake Ironic answers: (status, body) per ``METHOD path-prefix``; a list of
    them answers successive requests, the last one repeating. Successive answers are how a
    race is set up exactly: the node changes between two requests of one operation, which
    a real Ironic does only by chance."""

    def __init__(self, version: str = "1.115") -> None:
        self.version = version
        self.answers: dict[str, tuple[int, Any] | list[tuple[int, Any]]] = {}
        self.seen: list[tuple[str, str, dict[str, str], Any]] = []

    def answer(self, request: str) -> tuple[int, Any]:
        for key, answer in self.answers.items():
            if request.startswith(key):
                if isinstance(answer, list):
                    return answer.pop(0) if len(answer) > 1 else answer[0]
                return answer
        return 404, {"error_message": json.dumps({"faultstring": "not found"})}


@pytest.fixture
def fake() -> Iterator[tuple[str, Script]]:
    """A scripted Ironic on loopback and its :class:`Script`: for races, the 406
    renegotiation and answers the real Ironic of tests/ironic cannot give on cue (see the
    module docstring); everything else is tested against that real one."""
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            headers = {k.lower(): v for k, v in self.headers.items()}
            script.seen.append((self.command, self.path, headers, body))
            if self.path == "/v1":
                status, data = 200, {"version": {"version": script.version, "min_version": "1.1"}}
            else:
                status, data = script.answer(f"{self.command} {self.path}")
            payload = json.dumps(data).encode() if data is not None else b""
            self.send_response(status)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", script
    server.shutdown()
    server.server_close()
    thread.join()


def fault(text: str) -> dict[str, str]:
    return {"error_message": json.dumps({"faultcode": "Client", "faultstring": text})}


NODE = {"uuid": "u-1", "name": "ns~host-0000", "provision_state": "active", "power_state": None,
        "extra": {"hoststate_host": "ns/host-0000"}}  # fmt: skip


def test_version_is_negotiated_and_basic_auth_sent(fake: tuple[str, Script]) -> None:
    url, script = fake
    script.version = "1.90"
    script.answers["GET /v1/nodes/"] = (200, dict(NODE, power_state="power on"))
    prov = IronicProvisioner(url + "/v1/", username="ironic", password="api-pass")
    result = prov.register(view_of("ns", 0), credentials_changed=False)
    assert result.outcome is Outcome.COMPLETE and result.provider_id == "u-1"
    assert result.powered_on is True
    assert prov.microversion == "1.90"  # the server's maximum, below ours
    method, path, headers, _ = script.seen[-1]
    assert (method, headers["x-openstack-ironic-api-version"]) == ("GET", "1.90")
    assert headers["authorization"].startswith("Basic ")
    assert "fields=" in path


def test_too_old_an_ironic_is_a_readable_failure(fake: tuple[str, Script]) -> None:
    url, script = fake
    script.version = "1.31"
    result = IronicProvisioner(url).register(view_of("ns", 0), credentials_changed=False)
    assert result.outcome is Outcome.FAILED
    assert "offers API 1.31 at most; hoststate needs 1.47" in result.message


@pytest.mark.parametrize(
    ("status", "outcome", "words"),
    [
        (409, Outcome.RETRY_AFTER, "locked by conductor-7"),
        (503, Outcome.TRANSIENT, "is busy"),
        (500, Outcome.TRANSIENT, "is failing (HTTP 500)"),
        (400, Outcome.FAILED, "Ironic refused to deploy node ns~host-0000"),
        (401, Outcome.FAILED, "refused hoststate's credentials (HTTP 401)"),
        (403, Outcome.FAILED, "forbade PUT states/provision (HTTP 403); the node may"),
    ],
)
def test_refusals_move_nothing(
    fake: tuple[str, Script], status: int, outcome: Outcome, words: str
) -> None:
    url, script = fake
    text = (
        "Node u-1 is locked by host conductor-7, please retry after the current operation "
        "is completed."
        if status == 409
        else "nope"
    )
    script.answers["GET /v1/nodes/"] = (200, dict(NODE, provision_state="available"))
    script.answers["PATCH /v1/nodes/u-1"] = (200, NODE)
    script.answers["PUT /v1/nodes/u-1/states/provision"] = (status, fault(text))
    prov = IronicProvisioner(url, poll_delay=0.5)
    result = prov.provision(view_of("ns", 0, provider_id="u-1"))
    assert result.outcome is outcome, result
    assert words in result.for_operators()
    assert prov.actions[("ns~host-0000", "active")] == 0  # nothing counted as started
    if outcome is Outcome.RETRY_AFTER:
        assert result.delay == 0.5


def test_a_conflict_that_is_no_lock_is_a_failure(fake: tuple[str, Script]) -> None:
    url, script = fake
    script.answers["GET /v1/nodes/"] = (200, dict(NODE, power_state="power on"))
    refusal = "Node u-1 can not have power turned off, as it is configured not to"
    script.answers["PUT /v1/nodes/u-1/states/power"] = (409, fault(refusal))
    result = IronicProvisioner(url).power(view_of("ns", 0, provider_id="u-1"), on=False)
    assert result.outcome is Outcome.FAILED, result  # retrying would never end
    assert "(HTTP 409)" in result.message
    assert "can not have power" not in result.message  # Ironic's words: the operator's log
    assert "Node u-1 can not have power turned off" in result.details


TRANSITION = "Node u-1 can not be updated while a state transition is in progress."
NODE_LOCKED = "Node u-1 is locked by host c-2, please retry after the current operation is done."
VALID = (200, {"power": {"result": True}})


def test_new_credentials_wait_out_a_state_transition(fake: tuple[str, Script]) -> None:
    """Ironic refuses to update a node between two provision states (409): a rotated BMC
    password is sent again when the node gets there, and is no registration error."""
    url, script = fake
    script.answers["GET /v1/nodes/u-1/validate"] = VALID
    deploying = dict(NODE, provision_state="deploying", target_provision_state="active")
    script.answers["GET /v1/nodes/"] = (200, deploying)
    script.answers["PATCH /v1/nodes/u-1"] = [(409, fault(TRANSITION)), (200, NODE)]
    prov = IronicProvisioner(url, poll_delay=0.5)
    view = view_of("ns", 0, provider_id="u-1", password="rotated")
    first = prov.register(view, credentials_changed=True)
    assert first.outcome is Outcome.RETRY_AFTER, first
    assert first.delay == 0.5
    assert "is changing state and cannot be updated until it is done" in first.message
    second = prov.register(view, credentials_changed=True)
    assert second.outcome is Outcome.COMPLETE, second
    patches = [body for method, _, _, body in script.seen if method == "PATCH"]
    assert len(patches) == 2  # sent again: the first never reached the node
    assert {"op": "add", "path": "/driver_info/redfish_password", "value": "rotated"} in (
        patches[1]
    )


def test_credentials_that_failed_validation_are_checked_again(fake: tuple[str, Script]) -> None:
    url, script = fake
    script.answers["GET /v1/nodes/u-1/validate"] = [
        (200, {"power": {"result": False, "reason": "Missing redfish_username"}}),
        VALID,
    ]
    script.answers["GET /v1/nodes/"] = (200, dict(NODE, provision_state="manageable"))
    script.answers["PATCH /v1/nodes/u-1"] = (200, NODE)
    prov = IronicProvisioner(url)
    view = view_of("ns", 0, provider_id="u-1")
    first = prov.register(view, credentials_changed=True)
    assert first.outcome is Outcome.FAILED, first
    assert "Missing redfish_username" in first.for_operators()
    second = prov.register(view, credentials_changed=True)  # the retry, after the backoff
    assert second.outcome is Outcome.COMPLETE, second
    asked = [(m, p.split("?")[0]) for m, p, _, _ in script.seen if m == "PATCH" or "validate" in p]
    assert asked == [
        ("PATCH", "/v1/nodes/u-1"),
        ("GET", "/v1/nodes/u-1/validate"),
        ("PATCH", "/v1/nodes/u-1"),  # not taken as good because they were sent once
        ("GET", "/v1/nodes/u-1/validate"),
    ]
    sent = len(script.seen)
    third = prov.register(view, credentials_changed=True)  # now known to Ironic: nothing sent
    assert third.outcome is Outcome.COMPLETE, third
    assert [(m, p) for m, p, _, _ in script.seen[sent:] if m != "GET" or "validate" in p] == []


def test_a_locked_node_is_no_duplicate_mac(fake: tuple[str, Script]) -> None:
    url, script = fake
    script.answers["GET /v1/nodes/"] = (404, fault("no such node"))
    script.answers["POST /v1/nodes"] = (201, dict(NODE, provision_state="enroll"))
    script.answers["POST /v1/ports"] = (409, fault(NODE_LOCKED))
    result = IronicProvisioner(url).register(view_of("ns", 0), credentials_changed=True)
    assert result.outcome is Outcome.RETRY_AFTER, result
    assert "locked by c-2" in result.message


def test_a_406_renegotiates_only_when_the_server_changed(fake: tuple[str, Script]) -> None:
    url, script = fake
    script.answers["GET /v1/nodes/"] = (200, NODE)
    prov = IronicProvisioner(url, fresh_for=0.0)  # read each time
    view = view_of("ns", 0, provider_id="u-1")
    assert prov.register(view, credentials_changed=False).outcome is Outcome.COMPLETE
    assert prov.microversion == "1.115"

    # the same server refuses this request: retrying would never end
    script.answers["GET /v1/nodes/"] = [(406, fault("Request not acceptable.")), (200, NODE)]
    refused = prov.register(view, credentials_changed=False)
    assert refused.outcome is Outcome.FAILED, refused
    assert "(HTTP 406)" in refused.message and refused.details == "Request not acceptable."
    assert prov.microversion == "1.115"

    # an older Ironic took its place: negotiate again, then go on at its version
    script.version = "1.99"
    script.answers["GET /v1/nodes/"] = [(406, fault("Version 1.115 was requested")), (200, NODE)]
    moved = prov.register(view, credentials_changed=False)
    assert moved.outcome is Outcome.TRANSIENT, moved
    assert "no longer speaks API 1.115" in moved.message
    assert prov.microversion == "1.99"
    assert prov.register(view, credentials_changed=False).outcome is Outcome.COMPLETE
    assert script.seen[-1][2]["x-openstack-ironic-api-version"] == "1.99"


def test_a_failed_teardown_is_reported_once_then_retried(fake: tuple[str, Script]) -> None:
    url, script = fake
    error = "Failed to tear down. Error: BMC connection lost"
    script.answers["GET /v1/nodes/"] = (
        200,
        dict(NODE, provision_state="error", last_error=error, provision_updated_at="t1"),
    )
    script.answers["PUT /v1/nodes/u-1/states/provision"] = (202, None)
    prov = IronicProvisioner(url)
    view = view_of("ns", 0, provider_id="u-1")
    first = prov.deprovision(view)
    assert first.outcome is Outcome.FAILED, first
    assert first.message == f"tearing down the host failed: {NOT_SHOWN}"
    assert first.details == "Failed to tear down. Error: BMC connection lost"
    second = prov.deprovision(view)  # after the backoff: tear down again
    assert second.outcome is Outcome.CONTINUING, second
    assert prov.actions[("ns~host-0000", "deleted")] == 1


def test_a_failure_whose_reason_ironic_has_not_written_yet_is_waited_on(
    fake: tuple[str, Script],
) -> None:
    """Ironic moves a timed-out inspection to `inspect failed` before it records why."""
    url, script = fake
    failed_node = dict(NODE, provision_state="inspect failed", provision_updated_at="t1")
    reason = "Timeout reached while inspecting the node. Please check the ramdisk."
    script.answers["GET /v1/nodes/"] = [
        (200, dict(failed_node, last_error=None)),
        (200, dict(failed_node, last_error=reason)),
    ]
    prov = IronicProvisioner(url)
    view = view_of("ns", 0, provider_id="u-1")
    first = prov.inspect(view, restart=False)
    assert first.outcome is Outcome.CONTINUING, first  # no error without a reason yet
    second = prov.inspect(view, restart=False)
    assert second.outcome is Outcome.FAILED, second
    assert second.message.startswith(
        "inspecting the hardware failed: the inspection ramdisk never reported back"
    ), second
    assert not [seen for seen in script.seen if seen[0] == "PUT"]  # nothing retried early

    # A reason that never comes is not waited for beyond the grace period.
    prov.reason_grace = 0.0
    script.answers["GET /v1/nodes/"] = (200, dict(failed_node, provision_updated_at="t2"))
    third = prov.inspect(view, restart=False)
    assert third.outcome is Outcome.FAILED, third
    assert third.message == "inspecting the hardware failed: Ironic gave no reason", third


def test_a_failed_reboot_is_no_success(fake: tuple[str, Script]) -> None:
    url, script = fake
    script.answers["GET /v1/nodes/"] = [
        (200, dict(NODE, power_state="power on", last_error=None)),
        (200, dict(NODE, power_state="power on", last_error="IPMI reboot failed: busy")),
    ]
    script.answers["PUT /v1/nodes/u-1/states/power"] = (202, None)
    prov = IronicProvisioner(url)
    view = view_of("ns", 0, provider_id="u-1")
    assert prov.reboot(view).outcome is Outcome.CONTINUING
    result = prov.reboot(view)
    assert result.outcome is Outcome.FAILED, result
    assert result.message.startswith("the BMC did not reboot the host")
    assert result.details == "IPMI reboot failed: busy"


def test_a_power_action_a_silent_bmc_did_not_carry_out_says_so(
    fake: tuple[str, Script],
) -> None:
    url, script = fake
    # Ironic 39's words when a redfish BMC does not answer (sushy gives up after retries)
    refused = (
        "Redfish connection failed for node u-1: Unable to connect to "
        "http://192.0.2.9:8000/redfish/v1/Systems/1. Error: Connection refused"
    )
    script.answers["GET /v1/nodes/"] = [
        (200, dict(NODE, power_state="power off", last_error=None)),
        (200, dict(NODE, power_state="power off", last_error=refused)),
    ]
    script.answers["PUT /v1/nodes/u-1/states/power"] = (202, None)
    prov = IronicProvisioner(url)
    view = view_of("ns", 0, provider_id="u-1")
    assert prov.power(view, on=True).outcome is Outcome.CONTINUING
    result = prov.power(view, on=True)
    assert result.outcome is Outcome.FAILED, result
    assert result.message == (
        "the BMC did not power on the host: the BMC did not answer; "
        "check spec.bmc.address and that Ironic can reach the BMC"
    )
    assert result.details == refused


def test_maintenance_set_after_our_read_is_a_wait_not_a_failure(
    fake: tuple[str, Script],
) -> None:
    url, script = fake
    available = dict(NODE, provision_state="available", maintenance=False)
    script.answers["GET /v1/nodes/"] = [
        (200, available),  # the read the decision was made on...
        (200, dict(available, maintenance=True, maintenance_reason="replacing a DIMM")),
    ]
    script.answers["PATCH /v1/nodes/u-1"] = (200, NODE)
    refusal = "The provisioning operation can't be performed on node u-1 because it's in "
    script.answers["PUT /v1/nodes/u-1/states/provision"] = (400, fault(refusal + "maintenance"))
    result = IronicProvisioner(url).provision(view_of("ns", 0, provider_id="u-1"))
    assert result.outcome is Outcome.TRANSIENT, result  # ...Ironic refused: maintenance since
    assert "is in maintenance (replacing a DIMM)" in result.message


def test_unreachable_ironic_is_transient() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = IronicProvisioner(url, connect_timeout=1).register(
        view_of("ns", 0), credentials_changed=False
    )
    assert result.outcome is Outcome.TRANSIENT
    assert result.message == f"Ironic at {url} is unreachable"
    assert result.details == "connection refused"


def test_password_is_scrubbed_from_whatever_ironic_says(fake: tuple[str, Script]) -> None:
    url, script = fake
    script.answers["GET /v1/nodes/"] = (404, fault("no such node"))
    script.answers["POST /v1/nodes"] = (400, fault("bad driver_info: password hunter2-xyz"))
    result = IronicProvisioner(url).register(
        view_of("ns", 0, password="hunter2-xyz"), credentials_changed=True
    )
    assert result.outcome is Outcome.FAILED
    assert "hunter2-xyz" not in result.for_operators() and "******" in result.for_operators()
    posted = next(body for method, _, _, body in script.seen if method == "POST")
    assert posted["driver_info"]["redfish_password"] == "hunter2-xyz"  # only in the body


def test_driver_info_follows_the_bmc_scheme() -> None:
    ipmi = driver_info(_with_address("ipmi://10.0.0.5:6230"))
    assert ipmi == {
        "ipmi_address": "10.0.0.5",
        "ipmi_port": 6230,
        "ipmi_username": "admin",
        "ipmi_password": "pw-0",
    }
    redfish = driver_info(_with_address("redfish+http://bmc.example:8000/redfish/v1/Systems/1"))
    assert redfish["redfish_address"] == "http://bmc.example:8000"
    assert redfish["redfish_system_id"] == "/redfish/v1/Systems/1"


def test_readable_reasons() -> None:
    assert readable("Timeout reached while waiting for callback for node u-1").startswith(
        "the deploy ramdisk never called back"
    )
    assert readable("Something odd happened. More detail here.") == NOT_SHOWN
    assert readable(
        "Failed to validate power driver interface for node 4f2e-9. Error: Missing the following "
        "Redfish properties in node's driver_info: redfish_address. Check the node."
    ) == (
        "Ironic cannot use the power settings made from spec.bmc and the credentials Secret: "
        "Missing the following Redfish properties in node's driver_info: redfish_address."
    )


def _with_address(address: str) -> Any:
    from dataclasses import replace

    from state_controller.api.bmc import parse_bmc_address

    view = view_of("ns", 0)
    return replace(view, bmc=parse_bmc_address(address), bmc_address=address)
