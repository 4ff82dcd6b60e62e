"""Who may read /metrics of `state-controller run --metrics-secure` on a real control plane:
HTTPS, an unauthenticated scrape refused (401), a ServiceAccount not bound to
hoststate-metrics-reader refused (403), the monitoring ServiceAccount of
manifests/base/metrics-reader.yaml accepted."""

from __future__ import annotations

import re
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.control_plane import ControlPlane
from testbed.kube import kubectl
from tests.conftest import wait_for

ROOT = Path(__file__).resolve().parents[2]
READER = ROOT / "manifests" / "base" / "metrics-reader.yaml"
MONITORING = "monitoring"


def scrape(port: int, token: str | None) -> tuple[int, str]:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # self-signed
    request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@pytest.fixture
def secure_controller(control_plane: ControlPlane, tmp_path: Path) -> Iterator[int]:
    log = tmp_path / "run.log"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "state_controller.cli", "run",
            "--kubeconfig", str(control_plane.kubeconfig), "--namespace", "metal", "--no-nodes",
            "--metrics-bind-address", "127.0.0.1:0", "--metrics-secure",
            "--health-probe-bind-address", "0",
        ],
        stdout=subprocess.DEVNULL, stderr=log.open("w"), stdin=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:

        def port() -> int | None:
            assert proc.poll() is None, log.read_text()
            found = re.search(r"metrics: https://127\.0\.0\.1:(\d+)/metrics", log.read_text())
            return int(found.group(1)) if found else None

        yield int(wait_for(port, timeout=60, what="the metrics port"))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_only_callers_allowed_to_get_metrics_may_scrape(
    control_plane: ControlPlane, secure_controller: int
) -> None:
    kubectl(control_plane, "create", "namespace", MONITORING, check=False)
    kubectl(
        control_plane, "create", "serviceaccount", "prometheus-k8s", "-n", MONITORING, check=False
    )
    kubectl(control_plane, "create", "serviceaccount", "stranger", "-n", MONITORING, check=False)
    kubectl(control_plane, "apply", "-f", str(READER))
    allowed = kubectl(control_plane, "create", "token", "prometheus-k8s", "-n", MONITORING).stdout
    stranger = kubectl(control_plane, "create", "token", "stranger", "-n", MONITORING).stdout

    code, body = scrape(secure_controller, None)
    assert code == 401 and "bearer token" in body
    code, body = scrape(secure_controller, "not-a-token")
    assert code == 401 and "did not authenticate" in body
    code, body = scrape(secure_controller, stranger.strip())
    assert code == 403
    assert "system:serviceaccount:monitoring:stranger may not get /metrics" in body
    code, body = scrape(secure_controller, allowed.strip())
    assert code == 200 and "controller_runtime_reconcile_total" in body
    assert allowed.strip() not in body and stranger.strip() not in body
