"""An Ironic URL written with ``user:password@`` never shows them: not in a log line, not
in a result (which becomes a Host's status), not on the wire (urllib3 drops them anyway);
the --ironic-url flag refuses them, saying where credentials go."""

from __future__ import annotations

import json
import logging

import pytest

from state_controller.provisioning.ironic import IronicProvisioner, load_ironic_settings
from state_controller.provisioning.results import Outcome
from testbed.ironic_wire import host_view, on_wire
from testbed.processes import free_port

SECRET = "s3cret-in-url"


def _everything(caplog: pytest.LogCaptureFixture, *texts: str) -> str:
    return "\n".join([*texts, *(r.getMessage() for r in caplog.records)])


def test_unreachable_names_the_url_without_userinfo(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    port = free_port()
    prov = IronicProvisioner(f"http://admin:{SECRET}@127.0.0.1:{port}", connect_timeout=1)
    result = prov.register(host_view(""), credentials_changed=False)
    assert result.outcome is Outcome.TRANSIENT
    assert result.message == f"Ironic at http://127.0.0.1:{port} is unreachable"
    assert prov.url == f"http://127.0.0.1:{port}"
    shown = _everything(caplog, result.for_operators(), prov.check())
    assert SECRET not in shown and "admin@" not in shown and "admin:" not in shown


def test_answers_and_logs_name_the_url_without_userinfo(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    prov = IronicProvisioner(f"https://admin:{SECRET}@[2001:db8::1]:6385/v1")
    fault = {"error_message": json.dumps({"faultstring": "nope"})}
    wire = on_wire(prov, {"GET /v1/nodes/": (401, fault)})
    result = prov.register(host_view(""), credentials_changed=False)
    assert result.outcome is Outcome.FAILED
    assert result.message.startswith("Ironic at https://[2001:db8::1]:6385 refused hoststate's")
    wire.answers = {"GET /v1/nodes/": (503, fault)}
    busy = prov.register(host_view(""), credentials_changed=False)
    assert busy.message == "Ironic at https://[2001:db8::1]:6385 is busy (no free conductor)"
    shown = _everything(caplog, result.for_operators(), busy.for_operators())
    assert "using API microversion" in shown  # the log line that names the URL
    assert SECRET not in shown and "admin" not in shown
    assert [url for _, url in wire.sent if SECRET in url or "admin" in url] == []


@pytest.mark.parametrize(
    "url", [f"http://admin:{SECRET}@ironic.example:6385", f"https://{SECRET}@ironic.example"]
)
def test_the_flag_refuses_userinfo_without_repeating_it(url: str) -> None:
    with pytest.raises(ValueError, match=None) as raised:
        load_ironic_settings(url)
    message = str(raised.value)
    assert message.startswith("--ironic-url: ")
    assert "--ironic-username" in message and "--ironic-credentials-dir" in message
    assert SECRET not in message and "\n" not in message


def test_a_url_that_is_no_http_url_is_named_without_userinfo() -> None:
    with pytest.raises(ValueError, match=None) as raised:
        load_ironic_settings(f"ftp://admin:{SECRET}@ironic.example")
    assert "is not an http(s) URL" in str(raised.value) and SECRET not in str(raised.value)
