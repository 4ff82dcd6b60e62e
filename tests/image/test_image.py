"""The Containerfile builds, without a Docker engine (buildah, chroot isolation, a Debian
base from mmdebstrap), into an image that runs `state-controller` as a non-root user."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TAG = "localhost/hoststate/state-controller:test"
BUILDAH = ["buildah", "--storage-driver", "vfs"]
ENV = {**os.environ, "BUILDAH_ISOLATION": "chroot"}


def buildah(*args: str) -> str:
    done = subprocess.run(
        [*BUILDAH, *args], capture_output=True, text=True, env=ENV, timeout=600, check=False
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
    subprocess.run([*BUILDAH, "rmi", TAG], capture_output=True, env=ENV, check=False)


def test_the_image_runs_the_console_script_as_a_non_root_user(image: str) -> None:
    config = json.loads(buildah("inspect", "--type", "image", image))["OCIv1"]["config"]
    assert config["Entrypoint"] == ["state-controller"]
    assert config["User"] == "65532:65532"
    container = buildah("from", image).strip()
    try:
        help_text = buildah(
            "run", "--isolation", "chroot", container, "--", "state-controller", "--help"
        )
        assert help_text.startswith("usage: state-controller")
        for command in ("demo", "run", "get", "gen"):
            assert command in help_text
        uid = buildah(
            "run",
            "--isolation",
            "chroot",
            container,
            "--",
            "python3",
            "-c",
            "import os; print(os.getuid())",
        )
        assert uid.strip() == "65532"
    finally:
        buildah("rm", container)


def test_the_manifests_and_the_build_name_the_same_image() -> None:
    """The Deployment runs the image docs/cluster.md builds, tagged with the package's
    version."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    image = f"hoststate/state-controller:{version}"
    deployment = yaml.safe_load((ROOT / "manifests" / "base" / "deployment.yaml").read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == image
    page = (ROOT / "docs" / "cluster.md").read_text()
    assert f"podman build -t {image} ." in page
    assert f"tools/image/build.sh {image}" in page
