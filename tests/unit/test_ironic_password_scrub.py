"""No message or detail of the Ironic provisioner carries the BMC password, in any of the
forms a server writes it: as is, JSON-escaped, URL-encoded; short ones too."""

from __future__ import annotations

import json
from urllib.parse import quote, quote_plus

import pytest

from state_controller.provisioning.ironic.faults import scrub
from state_controller.provisioning.results import failed

MASK = "******"


def _scrubbed(text: str, password: str) -> str:
    result = scrub(failed(f"Ironic refused it: {text}", text), password)
    assert result.message == f"Ironic refused it: {result.details}"
    return result.details


@pytest.mark.parametrize(
    "password",
    ['pa"ss\\wörd', "tab\there", "new\nline", 'a"b'],
    ids=["quote-backslash-unicode", "tab", "newline", "short-quote"],
)
def test_the_json_escaped_form(password: str) -> None:
    for escaped in (json.dumps(password)[1:-1], json.dumps(password, ensure_ascii=False)[1:-1]):
        body = f'{{"driver_info": {{"redfish_password": "{escaped}"}}}}'
        assert escaped != password and escaped in body
        assert _scrubbed(body, password) == f'{{"driver_info": {{"redfish_password": "{MASK}"}}}}'


@pytest.mark.parametrize("password", ["p@ss w/rd&x=1", "s3cr3t+/?#", "é%"])
def test_the_url_encoded_forms(password: str) -> None:
    for encoded in (quote(password, safe=""), quote_plus(password), quote(password)):
        assert encoded != password
        text = f"GET https://bmc.example/login?user=admin&password={encoded} failed: 401"
        assert _scrubbed(text, password) == (
            f"GET https://bmc.example/login?user=admin&password={MASK} failed: 401"
        )


@pytest.mark.parametrize("password", ["x", "x9", "p4$"])
def test_a_short_password_standing_as_a_value(password: str) -> None:
    for template in (
        "ipmi_password={} rejected",
        '{{"password": "{}"}}',
        "password: {}",
        "login as admin:{}@bmc.example failed",
        "the BMC refused password {}",
        "got '{}'",
        "{}",
    ):
        text = template.format(password)
        assert _scrubbed(text, password) == template.format(MASK), text


def test_a_short_password_in_words_is_left_alone() -> None:
    """Masking every "a" of a sentence would garble it, and a password of 1-3 characters
    is guessed in under a million tries anyway: only where it stands as a value."""
    text = "could not validate a node at bmc-a.example: a timeout"
    assert _scrubbed(text, "a") == text
    assert _scrubbed("status 401, retry in 10s", "10") == "status 401, retry in 10s"


def test_a_long_password_anywhere() -> None:
    text = "bad driver_info: passwordhunter2-xyz and hunter2-xyz."
    assert _scrubbed(text, "hunter2-xyz") == f"bad driver_info: password{MASK} and {MASK}."


def test_nothing_to_scrub_is_the_same_result() -> None:
    result = failed("Ironic refused it", "no such node")
    assert scrub(result, "hunter2-xyz") is result
    assert scrub(result, "") is result
