"""Debian's prometheus package (server and promtool), installed by tools/prometheus/install.sh
(downloaded and unpacked once, then cached), and a Prometheus server on loopback."""

from __future__ import annotations

import json
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from testbed.processes import installed


def prometheus_root() -> Path:
    """The unpacked package (``usr/bin/prometheus``, ``usr/bin/promtool``)."""
    return installed("prometheus", timeout=600)


def promtool(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(root / "usr" / "bin" / "promtool"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def api_get(base: str, path: str, **params: str) -> Any:
    """GET Prometheus's HTTP API; the ``data`` of a success, else an AssertionError."""
    url = f"{base}{path}?{urllib.parse.urlencode(params)}" if params else f"{base}{path}"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            body = json.load(response)
    except urllib.error.HTTPError as err:
        body = json.load(err)
    if body.get("status") != "success":
        raise AssertionError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
    return body["data"]
