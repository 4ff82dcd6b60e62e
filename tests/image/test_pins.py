"""What the image is built from is pinned, checked offline: the lock files pin every
dependency pyproject.toml names, at a version it admits, each with its hashes (a changed
pyproject.toml without `tools/image/lock.sh` fails here); the Containerfile installs only
from them, with hashes required, on a base named by digest; and the manifests run the
image that docs/cluster.md builds, under a fully qualified name."""

from __future__ import annotations

import re
import tomllib

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.image import locks
from tests.image.locks import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CONTAINERFILE = (ROOT / "Containerfile").read_text()
# where the image's Python packages are installed: the locks' markers are read for it
TARGET = {"python_version": "3.11", "python_full_version": "3.11.2", "sys_platform": "linux"}
RELOCK = "pyproject.toml changed: run tools/image/lock.sh"


def _check_pinned(lock: dict[str, locks.Pin], wanted: list[str]) -> None:
    for line in wanted:
        requirement = Requirement(line)
        if requirement.marker and not requirement.marker.evaluate(TARGET):
            continue
        pin = lock.get(canonicalize_name(requirement.name))
        assert pin is not None, f"{requirement.name} is not locked; {RELOCK}"
        assert pin.version is not None, f"{requirement.name}: not an == pin"
        assert requirement.specifier.contains(pin.version, prereleases=True), (
            f"{requirement.name}=={pin.version} is outside {requirement.specifier}; {RELOCK}"
        )


def test_the_lock_pins_every_runtime_dependency_at_a_version_pyproject_admits() -> None:
    _check_pinned(locks.read(locks.RUNTIME_LOCK), PYPROJECT["project"]["dependencies"])


def test_the_build_lock_pins_the_build_backend_and_the_sbom_writer() -> None:
    lock = locks.read(locks.BUILD_LOCK)
    _check_pinned(lock, [*PYPROJECT["build-system"]["requires"], "cyclonedx-bom"])


def test_every_pin_is_exact_and_carries_hashes() -> None:
    for path in (locks.RUNTIME_LOCK, locks.BUILD_LOCK):
        lock = locks.read(path)
        assert lock, path
        for name, pin in lock.items():
            assert pin.version is not None, f"{path.name}: {name} is not an == pin"
            assert pin.hashes, f"{path.name}: {name} has no --hash"
            assert not pin.requirement.url, f"{path.name}: {name} comes from a URL"


def test_the_containerfile_installs_only_from_the_locks_with_hashes() -> None:
    installs = [
        " ".join(command.split())
        for command in re.findall(r"pip (?:--python \S+ )?install ([^&]*)", CONTAINERFILE)
    ]
    assert any("--require-hashes --no-deps -r /locks/requirements.lock" in i for i in installs)
    assert any(
        "--require-hashes --no-deps -r /locks/build-requirements.lock" in i for i in installs
    )
    for command in installs:  # the rest installs the project's own wheel, offline
        assert "--no-deps" in command, command
        assert "--require-hashes" in command or "--no-index" in command, command
    assert "--no-build-isolation --no-index" in CONTAINERFILE  # no backend downloaded


def test_the_containerfiles_default_base_is_pinned_by_digest() -> None:
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", CONTAINERFILE, re.MULTILINE))
    assert re.fullmatch(r"[a-z0-9.-]+\.[a-z]+/\S+:\S+@sha256:[0-9a-f]{64}", args["BASE"]), (
        "the default BASE: registry host, name, tag and @sha256 digest"
    )
    assert args["RUNTIME_BASE"] in ("${BASE}", args["BASE"])


def test_the_manifests_and_the_build_name_the_same_image() -> None:
    """The Deployment runs the image docs/cluster.md builds, under a fully qualified name
    (a short one resolves to Docker Hub, where anyone may own `hoststate/`), tagged with
    the package's version."""
    version = PYPROJECT["project"]["version"]
    image = f"localhost/hoststate/state-controller:{version}"
    deployment = yaml.safe_load((ROOT / "manifests" / "base" / "deployment.yaml").read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == image
    page = (ROOT / "docs" / "cluster.md").read_text()
    assert f"podman build -t {image} ." in page
    assert f"tools/image/build.sh {image}" in page
    assert f"- name: {image.rsplit(':', 1)[0]}\n" in page  # the kustomize images: example
