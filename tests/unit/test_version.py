"""One version number: pyproject.toml's. ``state-controller version`` prints it, and
every other place that writes it down (the image's tag in the manifests, the
Containerfile and the docs, the Deployment's version label, the CHANGELOG's latest
release, the version page's sample) must say the same, so a release bump cannot forget
one."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

from state_controller import __version__
from state_controller.api import API_VERSION
from state_controller.health.share import controller_version
from testbed.processes import cli

ROOT = Path(__file__).resolve().parents[2]
VERSION: str = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]

# Where a version of hoststate is written, each with the group that holds it.
WRITTEN = (
    re.compile(r"hoststate/state-controller:(\d+\.\d+\.\d+[\w.+-]*)"),  # the image's tag
    re.compile(r"app\.kubernetes\.io/version:\s*\"?(\d+\.\d+\.\d+[\w.+-]*)"),  # its label
    re.compile(r"^appVersion:\s*\"?(\d+\.\d+\.\d+[\w.+-]*)", re.MULTILINE),  # a Chart.yaml's
    re.compile(r"\bhoststate\.v(\d+\.\d+\.\d+[\w.+-]*)"),  # the OLM CSV's name
    re.compile(r"hoststate-bundle:v(\d+\.\d+\.\d+[\w.+-]*)"),  # the OLM bundle image's tag
    re.compile(  # the OLM CSV's spec.version
        r"^kind: ClusterServiceVersion\n.*?^  version:\s*\"?(\d+\.\d+\.\d+[\w.+-]*)",
        re.MULTILINE | re.DOTALL,
    ),
)


def test_the_installed_package_is_pyprojects_version() -> None:
    assert controller_version() == __version__ == VERSION, "reinstall: pip install -e ."


def test_version_prints_the_packages_version() -> None:
    done = cli("version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{VERSION}\n"


def test_version_as_json_names_python_and_the_api_served() -> None:
    done = cli("version", "-o", "json")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["version"] == VERSION
    assert re.fullmatch(r"3\.\d+\.\d+\S*", printed["python"])
    assert printed["apiVersions"] == [API_VERSION] == ["hoststate.io/v1alpha1"]


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    files = []
    for name in filter(None, listed):
        if name == "CHANGELOG.md":  # its entries name the versions they were released as
            continue
        path = ROOT / name
        if path.suffix in {".sum", ".mod", ".svg", ".png", ".db"} or not path.is_file():
            continue
        try:
            path.read_text()
        except UnicodeDecodeError:
            continue
        files.append(path)
    return files


def test_every_written_version_is_pyprojects() -> None:
    found: dict[str, set[str]] = {}
    for path in _tracked_text_files():
        text = path.read_text()
        for pattern in WRITTEN:
            for match in pattern.finditer(text):
                found.setdefault(match.group(1), set()).add(str(path.relative_to(ROOT)))
    assert {"manifests/base/deployment.yaml", "Containerfile", "docs/cluster.md"} <= found.get(
        VERSION, set()
    ), f"the image's tag is no longer where this test looks: {found}"
    other = {v: sorted(paths) for v, paths in found.items() if v != VERSION}
    assert not other, f"pyproject.toml says {VERSION}; these say otherwise: {other}"


def test_the_changelogs_latest_release_is_pyprojects() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## \[([^\]]+)\]", changelog, flags=re.MULTILINE)
    assert releases[0] == "Unreleased", "changes since the last release go under [Unreleased]"
    assert releases[1] == VERSION, f"the latest release in CHANGELOG.md is not {VERSION}"


def test_the_commands_page_shows_pyprojects_version() -> None:
    page = (ROOT / "docs/commands.md").read_text()
    shown = re.findall(r"^\$ state-controller version\n(.+)$", page, flags=re.MULTILINE)
    assert shown == [VERSION], f"docs/commands.md shows {shown}"
    assert f'"version": "{VERSION}"' in page
