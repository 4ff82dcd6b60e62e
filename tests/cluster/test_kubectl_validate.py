"""The sample manifests pass kubectl-validate (sigs.k8s.io/kubectl-validate), which
checks them offline against api/v1alpha1/ with the API server's own validation code;
and what it refuses, it refuses naming the field.

kubectl-validate is built once from the Go module proxy by
tools/kubectl-validate/install.sh (about 90 s, then cached), like the control plane.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from state_controller.api.host import CHECKSUM_MESSAGE
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.kube import k8s_bin_dir

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "tools" / "kubectl-validate" / "install.sh"
LOCAL_CRDS = [ROOT / "api" / "v1alpha1", ROOT / "testbed"]  # + monitoring CRDs
NATIVE_VERSION = "1.30"  # the newest Kubernetes whose built-in schemas it carries


@pytest.fixture(scope="module")
def kubectl_validate() -> Path:
    done = subprocess.run([str(INSTALL)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return Path(done.stdout.strip().splitlines()[-1])


def validate(tool: Path, *files: Path) -> tuple[int, dict[str, Any]]:
    flags = [f"--local-crds={path}" for path in LOCAL_CRDS]
    done = subprocess.run(
        [str(tool), *map(str, files), *flags, f"--version={NATIVE_VERSION}", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, json.loads(done.stdout)


def docs_host() -> str:
    """The Host example of docs/hosts.md, as written (PyYAML would read its unquoted MAC
    as a base-60 integer; kubectl's YAML reads a string)."""
    text = (ROOT / "docs" / "hosts.md").read_text()
    section = text[text.index("## Host: what the operator wants") :]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block is not None and "kind: Host" in block.group(1)
    return block.group(1)


def test_sample_manifests_are_valid(kubectl_validate: Path, tmp_path: Path) -> None:
    rendered = subprocess.run(
        [str(k8s_bin_dir() / "kubectl"), "kustomize", str(ROOT / "manifests")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    samples = {
        "manifests.yaml": rendered,
        "docs-host.yaml": docs_host(),
        "demo-fleet.yaml": yaml.safe_dump_all(
            [
                host_manifest("metal", 0),
                host_manifest("metal", 1, image=False),
                secret_manifest("metal", "host-0000-bmc", "admin", "pw"),
            ]
        ),
    }
    for name, text in samples.items():
        (tmp_path / name).write_text(text)
    code, report = validate(kubectl_validate, *(tmp_path / name for name in samples))
    failures = {
        file: [r.get("message") for r in results if r["status"] != "Success"]
        for file, results in report.items()
    }
    assert code == 0 and not any(failures.values()), failures
    assert len(report[str(tmp_path / "manifests.yaml")]) == len(
        [d for d in yaml.safe_load_all(rendered) if d]
    )


def test_it_refuses_a_typo_and_a_checksum_naming_the_fields(
    kubectl_validate: Path, tmp_path: Path
) -> None:
    typo = host_manifest("metal", 0)
    typo["spec"]["onlin"] = True
    checksum = host_manifest("metal", 1)
    checksum["spec"]["image"] = {
        "url": "http://i.example/os.img",
        "checksum": "not-a-sha256!",
        "checksumType": "sha256",
    }
    (tmp_path / "typo.yaml").write_text(yaml.safe_dump(typo))
    (tmp_path / "checksum.yaml").write_text(yaml.safe_dump(checksum))
    code, report = validate(kubectl_validate, tmp_path / "typo.yaml", tmp_path / "checksum.yaml")
    assert code == 1
    ((typo_result,),) = [report[str(tmp_path / "typo.yaml")]]
    assert [c["field"] for c in typo_result["details"]["causes"]] == ["spec.onlin"]
    assert "unknown field" in typo_result["message"]
    ((checksum_result,),) = [report[str(tmp_path / "checksum.yaml")]]
    (cause,) = checksum_result["details"]["causes"]
    assert cause["field"] == "spec.image.checksum" and CHECKSUM_MESSAGE in cause["message"]
