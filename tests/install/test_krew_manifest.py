"""plugins/krew/hoststate.yaml passes krew's own validator, validate-krew-manifest
(sigs.k8s.io/krew/cmd/validate-krew-manifest, the check krew-index runs on a plugin's
manifest; built once from the Go module proxy by tools/krew/build.sh and cached:
testbed/tools.py, scripts/test), and the validator refuses a broken copy of it, naming
what is wrong. ``-skip-install``: installing would download the release archive; the
archive's bytes are held to the manifest's sha256 by tests/unit/test_plugin.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.tools import krew_validator

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "plugins" / "krew" / "hoststate.yaml"


def validate(manifest: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(krew_validator()), "-manifest", str(manifest), "-skip-install"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_krews_validator_passes_the_manifest() -> None:
    done = validate(MANIFEST)
    assert done.returncode == 0, (
        f"krew's validate-krew-manifest refuses {MANIFEST.relative_to(ROOT)}:\n{done.stderr}"
    )
    assert "structural validation OK" in done.stderr
    assert "no overlapping spec.platform[].selector" in done.stderr


def _version(spec: dict[str, Any]) -> None:
    spec["version"] = "0.1.0"  # krew wants the v


def _sha(spec: dict[str, Any]) -> None:
    spec["platforms"][0]["sha256"] = "not-a-sha256"


def _selector(spec: dict[str, Any]) -> None:
    spec["platforms"].append(dict(spec["platforms"][0]))  # both select linux and darwin


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (_version, "version"),
        (_sha, "sha256"),
        (_selector, "overlapping"),
    ],
)
def test_krews_validator_refuses_a_broken_manifest(tmp_path: Path, edit: Any, said: str) -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    edit(manifest["spec"])
    broken = tmp_path / MANIFEST.name  # the file's name must be the plugin's
    broken.write_text(yaml.safe_dump(manifest))
    done = validate(broken)
    assert done.returncode != 0 and said in done.stderr, done.stderr
