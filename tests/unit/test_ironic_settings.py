"""The --ironic-* flags: every mistake names the flag and the fix, before anything starts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from state_controller.provisioning.ironic import load_ironic_settings
from testbed.processes import CLI


def test_password_file_and_credentials_dir(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("s3cret\n")
    settings = load_ironic_settings(
        "https://ironic.example:6385",
        username="admin",
        password_file=str(tmp_path / "pw"),
        driver="",
    )
    assert (settings.username, settings.password, settings.driver) == ("admin", "s3cret", None)
    assert "s3cret" not in repr(settings)

    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "username").write_text("u")
    (tmp_path / "dir" / "password").write_text("p")
    from_dir = load_ironic_settings("https://i:6385", credentials_dir=str(tmp_path / "dir"))
    assert (from_dir.username, from_dir.password) == ("u", "p")
    assert load_ironic_settings("https://i:6385").username is None  # noauth


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:6385", "http://localhost:6385", "http://[::1]:6385"]
)
def test_plain_http_to_an_ironic_on_this_machine_needs_no_flag(url: str) -> None:
    assert load_ironic_settings(url).url == url


def test_plain_http_across_a_network_is_refused_unless_the_operator_accepts_it() -> None:
    """Every BMC password travels in the nodes' driver_info: in clear over http."""
    url = "http://ironic.metal3-system.svc:6385"
    with pytest.raises(ValueError) as raised:
        load_ironic_settings(url, username="u", credentials_dir=None)
    assert str(raised.value) == (
        f"--ironic-url: {url} is plain http, which would carry every BMC password (and "
        "Ironic's own credentials) in clear; use https:// (with --ironic-ca-file for a "
        "private CA), or add --ironic-allow-http if the network to Ironic is trusted"
    )
    assert load_ironic_settings(url, allow_http=True).url == url


@pytest.mark.parametrize(
    ("url", "kw", "words"),
    [
        (None, {}, "--ironic-url is required with --provisioner ironic"),
        ("ironic:6385", {}, "--ironic-url: 'ironic:6385' is not an http(s) URL"),
        ("http://i", {"poll_delay": 0}, "--ironic-poll-delay must be more than 0"),
        ("http://i", {"health_every": -1}, "--ironic-health-every must be 0 (never) or more"),
        ("http://i", {"password_file": "x"}, "--ironic-password-file needs --ironic-username"),
        ("http://i", {"username": ""}, "--ironic-username is empty"),
        ("http://i", {"ca_file": "/nonexistent/ca.pem"}, "--ironic-ca-file: /nonexistent"),
        (
            "https://i",
            {"ca_file": "/nonexistent/ca.pem", "insecure": True},
            "--ironic-insecure and --ironic-ca-file: give one or the other",
        ),
        (
            "http://i",
            {"credentials_dir": "/nonexistent", "username": "u"},
            "--ironic-credentials-dir replaces --ironic-username",
        ),
        (
            "http://i",
            {"credentials_dir": "/nonexistent"},
            "/nonexistent/username does not exist; it must hold the Ironic username",
        ),
    ],
)
def test_mistakes_name_the_flag(url: str | None, kw: dict[str, object], words: str) -> None:
    with pytest.raises(ValueError, match=None) as raised:
        load_ironic_settings(url, **kw)  # type: ignore[arg-type]
    assert words in str(raised.value)


def test_empty_password_file(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("\n")
    with pytest.raises(ValueError, match=r"--ironic-password-file: .*/pw is empty"):
        load_ironic_settings("http://i", username="u", password_file=str(tmp_path / "pw"))


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["demo", "--provisioner", "simulated", "--ironic-url", "http://i"],
            "--ironic-url: only with --provisioner ironic",
        ),
        (["demo", "--ironic-driver", "fake-hardware"], "--ironic-driver: only with --provisioner"),
        (["demo", "--provisioner", "ironic"], "--ironic-url is required"),
        (["demo", "--ironic-url", "http://127.0.0.1:1", "--faults"], "--faults injects failures"),
        (["run", "--ironic-url", "http://i:6385"], "--ironic-url: http://i:6385 is plain http"),
        (
            ["demo", "--ironic-allow-http"],
            "--ironic-allow-http: only with --provisioner ironic",
        ),
        (["run", "--provisioner", "ironic", "--ironic-url", "x"], "is not an http(s) URL"),
        (
            ["run", "--ironic-url", "http://admin:pw@i:6385"],
            "--ironic-url: leave user:password@ out of the URL",
        ),
        (
            [
                "demo",
                "--ironic-url",
                "https://i",
                "--ironic-ca-file",
                __file__,
                "--ironic-insecure",
            ],
            "--ironic-insecure and --ironic-ca-file: give one or the other",
        ),
    ],
)
def test_cli_refuses_bad_flags_with_exit_2(args: list[str], words: str) -> None:
    done = subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1
