"""``state-controller demo --provisioner ironic`` as a user runs it against their Ironic,
with no auth and with HTTP basic auth (a real Ironic with ``auth_strategy = http_basic``)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from state_controller.manager import RunOptions, provisioner_for
from testbed.ironic_server import IronicServer
from testbed.processes import CLI, free_port
from testbed.secret_volume import write_secret_volume
from tests.ironic.helpers import IronicAPI

pytestmark = pytest.mark.slow

USER, PASSWORD = "hoststate", "Ironic-API-Passw0rd"


def demo(url: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    command = [
        *CLI, "demo", "--provisioner", "ironic", "--ironic-url", url,
        "--ironic-driver", "fake-hardware", "--ironic-poll-delay", "0.3",
        "--exit-when-settled", "--json", "--timeout", "120", *args,
    ]  # fmt: skip
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def test_demo_provisions_through_ironic_and_leaves_it_clean(ironic: IronicServer) -> None:
    done = demo(ironic.url, "--hosts", "3", "--namespace", "cli")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["provisioner"] == "ironic"
    assert summary["settled"] is True
    assert summary["by_state"] == {"provisioned": 3}
    assert summary["cleaned_up"] is True
    assert "deleting 3 hosts" in done.stderr and "deleted in " in done.stderr
    assert IronicAPI(ironic.url).nodes() == []  # the demo deleted what it created


def test_demo_refuses_to_start_over_nodes_it_left(ironic: IronicServer) -> None:
    kept = demo(ironic.url, "--hosts", "1", "--namespace", "kept", "--keep")
    assert kept.returncode == 0, kept.stderr
    assert "cleaned_up" not in json.loads(kept.stdout)
    node = IronicAPI(ironic.url).node("kept~host-0000")
    assert node is not None and node["provision_state"] == "active"

    again = demo(ironic.url, "--hosts", "1", "--namespace", "kept")
    assert again.returncode == 2
    assert "already has 1 node(s) named kept~* (e.g. kept~host-0000)" in again.stderr
    assert "pick another --namespace" in again.stderr
    assert IronicAPI(ironic.url).node("kept~host-0000") is not None  # untouched


def test_demo_says_at_once_that_ironic_is_not_there() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = demo(url, "--hosts", "1", timeout=30)
    assert done.returncode == 2
    assert f"--ironic-url: Ironic at {url} is unreachable" in done.stderr
    assert "connection refused" in done.stderr


def htpasswd_line(ironic_venv: str, user: str, password: str) -> str:
    """An htpasswd entry (bcrypt, hashed with Ironic's own bcrypt)."""
    hashed = subprocess.run(
        [
            f"{ironic_venv}/bin/python",
            "-c",
            "import bcrypt, sys; print(bcrypt.hashpw(sys.argv[1].encode(), bcrypt.gensalt(4))"
            ".decode())",
            password,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return f"{user}:{hashed}\n"


@pytest.fixture(scope="module")
def basic_auth_ironic(
    ironic_venv: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[IronicServer]:
    """An Ironic that wants HTTP basic auth, users in an htpasswd file (bcrypt)."""
    work = tmp_path_factory.mktemp("ironic-basic")
    htpasswd = work / "htpasswd"
    htpasswd.write_text(htpasswd_line(ironic_venv, USER, PASSWORD))
    auth = {"auth_strategy": "http_basic", "http_basic_auth_user_file": str(htpasswd)}
    with IronicServer(ironic_venv, work, config={"DEFAULT": auth}) as server:
        yield server


def credentials_dir(tmp_path: Path, password: str) -> Path:
    """The Ironic credentials as a Secret mounted by the kubelet, values ending in newlines
    (as ``kubectl create secret --from-file`` keeps them); called again, it rotates them."""
    files = {"username": USER + "\n", "password": password + "\n"}
    return write_secret_volume(tmp_path / "ironic-credentials", files)


def test_demo_with_http_basic_auth(basic_auth_ironic: IronicServer, tmp_path: Path) -> None:
    status, _, _ = IronicAPI(basic_auth_ironic.url).request("GET", "/v1/nodes")
    assert status == 401  # this Ironic really wants credentials

    folder = credentials_dir(tmp_path, PASSWORD)
    done = demo(basic_auth_ironic.url, "--hosts", "1", "--ironic-credentials-dir", str(folder))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["by_state"] == {"provisioned": 1}
    assert PASSWORD not in done.stdout + done.stderr


def test_wrong_ironic_password_is_named_before_anything_starts(
    basic_auth_ironic: IronicServer, tmp_path: Path
) -> None:
    folder = credentials_dir(tmp_path, "not-the-password")
    done = demo(basic_auth_ironic.url, "--hosts", "1", "--ironic-credentials-dir", str(folder))
    assert done.returncode == 2
    assert "refused hoststate's credentials (HTTP 401)" in done.stderr
    assert "check the Ironic username and password" in done.stderr
    assert "not-the-password" not in done.stderr


def test_run_builds_the_ironic_provisioner_and_checks_it(
    basic_auth_ironic: IronicServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from state_controller.provisioning.ironic import IronicProvisioner, load_ironic_settings

    caplog.set_level("INFO")
    folder = credentials_dir(tmp_path, PASSWORD)
    settings = load_ironic_settings(basic_auth_ironic.url, credentials_dir=str(folder))
    prov = provisioner_for(RunOptions(ironic=settings, workers=3))
    assert isinstance(prov, IronicProvisioner)
    assert prov.microversion == "1.115"
    assert f"Ironic at {basic_auth_ironic.url}, API 1.115" in caplog.text
    assert PASSWORD not in caplog.text and PASSWORD not in repr(settings)


def test_a_rotated_ironic_password_is_used_without_a_restart(
    basic_auth_ironic: IronicServer,
    ironic_venv: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from state_controller.provisioning.ironic import load_ironic_settings

    htpasswd = basic_auth_ironic.workdir / "htpasswd"  # Ironic reads it on every request
    original = htpasswd.read_text()
    folder = credentials_dir(tmp_path, PASSWORD)
    settings = load_ironic_settings(basic_auth_ironic.url, credentials_dir=str(folder))
    prov = settings.provisioner(workers=1)
    assert prov.check() == ""
    rotated = "Rotated-Passw0rd-2"
    caplog.set_level("INFO")
    try:
        htpasswd.write_text(htpasswd_line(ironic_venv, USER, rotated))
        # Ironic has the new password, the mounted Secret not yet: refused, and said so.
        assert "refused hoststate's credentials (HTTP 401)" in prov.check()
        assert "using the changed ones" not in caplog.text
        # The kubelet swaps the mounted Secret to the new version: the next request that
        # is refused reads it again and goes through with the new password, no restart.
        assert credentials_dir(tmp_path, rotated) == folder
        assert prov.check() == ""
        assert "using the changed ones now on disk" in caplog.text
        before = sum(prov.calls.values())
        assert prov.check() == ""
        assert sum(prov.calls.values()) == before + 1  # kept: no 401 round any more
        assert rotated not in caplog.text and PASSWORD not in caplog.text
    finally:
        htpasswd.write_text(original)
