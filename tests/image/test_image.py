"""The Containerfile builds, without a Docker engine (buildah, chroot isolation, overlay
storage where the kernel mounts it, else vfs; Debian bases from mmdebstrap), from the
lock files with hashes, into an image that runs `state-controller` as a non-root user,
carries an SBOM of what it installed, and no pip."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.image import locks

# The first build makes the Debian bases with mmdebstrap and installs the locks: from an
# empty cache, beside three other test workers, that is more than pytest's default 300 s
# (tools/image/build.sh is bounded by its own 1,200 s below).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

ROOT = Path(__file__).resolve().parents[2]
TAG = "localhost/hoststate/state-controller:test"
ENV = {**os.environ, "BUILDAH_ISOLATION": "chroot"}
SBOM = "/usr/share/doc/hoststate/sbom.cdx.json"


@functools.cache
def storage() -> tuple[str, ...]:
    """The storage options tools/image/build.sh builds with (overlay or vfs)."""
    chosen = subprocess.run(
        [str(ROOT / "tools/image/storage.sh")], capture_output=True, text=True, check=True
    )
    return tuple(chosen.stdout.split())


def buildah(*args: str) -> str:
    done = subprocess.run(
        ["buildah", *storage(), *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"buildah {' '.join(args)}: {done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    installed = subprocess.run(
        [str(ROOT / "tools/image/install.sh")], capture_output=True, text=True, check=False
    )
    if installed.returncode == 3:  # its one reason to give up: missing, and not root
        pytest.skip(installed.stderr.strip().splitlines()[-1])
    assert installed.returncode == 0, installed.stderr  # anything else is a failure
    done = subprocess.run(
        [str(ROOT / "tools/image/build.sh"), TAG],
        capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == TAG
    yield TAG
    subprocess.run(["buildah", *storage(), "rmi", TAG], capture_output=True, env=ENV, check=False)


@pytest.fixture(scope="module")
def container(image: str) -> Iterator[str]:
    """One working container on the image for every test (with vfs storage, each one
    is a full copy of the image: about 10 s; with overlay, a mount)."""
    name = buildah("from", "--quiet", image).strip()
    yield name
    buildah("rm", name)


def run(container: str, *command: str) -> str:
    """`command` in the container, as the image's user."""
    return buildah("run", "--isolation", "chroot", container, "--", *command)


def test_the_image_runs_the_console_script_as_a_non_root_user(image: str, container: str) -> None:
    config = json.loads(buildah("inspect", "--type", "image", image))["OCIv1"]["config"]
    assert config["Entrypoint"] == ["state-controller"]
    assert config["User"] == "65532:65532"
    help_text = run(container, "state-controller", "--help")
    assert help_text.startswith("usage: state-controller")
    for command in ("demo", "run", "get", "gen"):
        assert command in help_text
    assert run(container, "python3", "-c", "import os; print(os.getuid())").strip() == "65532"


# What the image's Python sees: the distributions of the controller's virtualenv, its
# SBOM, and whether pip (or a way to get it back) is anywhere on its path.
_PROBE = f"""
import importlib.metadata, importlib.util, json, os, sys
print(json.dumps({{
    "installed": {{d.metadata["Name"]: d.version for d in importlib.metadata.distributions()}},
    "prefix": sys.prefix,
    "sbom": json.load(open("{SBOM}")),
    "importable": [m for m in ("pip", "setuptools", "wheel", "ensurepip")
                   if importlib.util.find_spec(m)],
    "pip_scripts": [p for p in ("/opt/hoststate/bin/pip", "/opt/hoststate/bin/pip3",
                                "/usr/local/bin/pip", "/usr/bin/pip", "/usr/bin/pip3")
                    if os.path.lexists(p)],
}}))
"""


@pytest.fixture(scope="module")
def probe(container: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(run(container, "python3", "-c", _PROBE))
    return found


def _normalized(versions: dict[str, str]) -> dict[str, str]:
    """By normalized name and version (grafana-foundation-sdk's metadata says v0.0.21)."""
    return {canonicalize_name(name): str(Version(v)) for name, v in versions.items()}


def test_the_image_is_built_from_the_lock_with_hashes(probe: dict[str, Any]) -> None:
    """Its virtualenv holds exactly the packages of tools/image/requirements.lock at
    their locked versions, and the project: nothing resolved at build time, nothing of
    the build (setuptools, the SBOM writer), no pip."""
    assert probe["prefix"] == "/opt/hoststate"
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    locked = {name: pin.version or "" for name, pin in locks.read(locks.RUNTIME_LOCK).items()}
    installed = _normalized(probe["installed"])
    assert installed == _normalized({**locked, "hoststate": version})


def test_the_sbom_lists_the_locked_packages_at_the_locked_versions(
    probe: dict[str, Any],
) -> None:
    sbom = probe["sbom"]
    assert sbom["bomFormat"] == "CycloneDX"
    root = sbom["metadata"]["component"]
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert (root["name"], root["version"]) == ("hoststate", version)
    listed = {c["name"]: c["version"] for c in sbom["components"]}
    installed = _normalized(probe["installed"])
    installed.pop("hoststate")  # the root component
    assert _normalized(listed) == installed
    for component in sbom["components"]:
        assert component["purl"].startswith(f"pkg:pypi/{canonicalize_name(component['name'])}@")


def test_the_image_carries_no_pip(probe: dict[str, Any]) -> None:
    assert probe["importable"] == [], "nothing in the image may install packages"
    assert probe["pip_scripts"] == []
