"""The committed CRDs are exactly what the models generate, and they are structural."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from state_controller.api import crds
from state_controller.api.columns import HOST_COLUMNS, HOSTSTATE_COLUMNS

ROOT = Path(__file__).resolve().parents[2]


def test_committed_crds_match_the_models() -> None:
    for name, crd in crds.generate().items():
        committed = (ROOT / "api" / "v1alpha1" / name).read_text()
        assert committed == crds.render(crd), (
            f"api/v1alpha1/{name} is stale: run `state-controller gen crds` and commit the result"
        )


def _walk(schema: dict[str, Any], path: str = "") -> list[str]:
    problems = []
    if "properties" in schema and schema.get("type") != "object":
        problems.append(f"{path}: properties without type object")
    for banned in ("anyOf", "oneOf", "allOf", "$ref", "title", "const"):
        if banned in schema:
            problems.append(f"{path}: {banned}")
    if "properties" in schema and isinstance(schema.get("additionalProperties"), bool):
        problems.append(f"{path}: additionalProperties with properties")
    for key, sub in (schema.get("properties") or {}).items():
        problems += _walk(sub, f"{path}.{key}")
    if isinstance(schema.get("items"), dict):
        problems += _walk(schema["items"], f"{path}[]")
    return problems


def test_schemas_are_structural_and_typed() -> None:
    for name, crd in crds.generate().items():
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        assert _walk(schema) == [], name


def test_printer_columns_and_short_names() -> None:
    generated = crds.generate()
    hoststates = generated["hoststate.io_hoststates.yaml"]["spec"]
    hosts = generated["hoststate.io_hosts.yaml"]["spec"]
    assert hoststates["names"]["shortNames"] == ["hs"]
    assert hosts["names"]["shortNames"] == ["hst"]
    names = [c["name"] for c in hoststates["versions"][0]["additionalPrinterColumns"]]
    assert names == [c.name for c in HOSTSTATE_COLUMNS]
    assert {"Host", "Node", "Phase", "State", "Stuck", "In-State", "Age"} <= set(names)
    assert len(hosts["versions"][0]["additionalPrinterColumns"]) == len(HOST_COLUMNS)
    assert hosts["versions"][0]["subresources"] == {"status": {}}


def test_user_fields_are_validated_by_the_schema() -> None:
    spec = yaml.safe_load((ROOT / "api/v1alpha1/hoststate.io_hosts.yaml").read_text())
    props = spec["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    bmc = props["properties"]["bmc"]
    assert bmc["required"] == ["address", "credentialsName"]
    assert bmc["properties"]["address"]["pattern"].startswith("^")
    assert "pattern" in bmc["properties"]["credentialsName"]
    image = props["properties"]["image"]
    assert set(image["required"]) == {"url", "checksum"}
    assert image["properties"]["checksumType"]["enum"] == ["md5", "sha256", "sha512", "auto"]
    assert props["properties"]["bootMACAddress"]["pattern"]
    assert props["x-kubernetes-preserve-unknown-fields"] is True
