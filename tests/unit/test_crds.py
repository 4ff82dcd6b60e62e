"""The committed CRDs are exactly what the models generate: structural, closed, bounded."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from state_controller.api import crds
from state_controller.api.base import DNS_SUBDOMAIN
from state_controller.api.bmc import ADDRESS_FIX, ADDRESS_PATTERN
from state_controller.api.columns import HOST_COLUMNS, HOSTSTATE_COLUMNS, NODEPOOL_COLUMNS, Column
from state_controller.api.host import (
    CHECKSUM_MESSAGE,
    CHECKSUM_REQUIRED,
    IMAGE_URL_FIX,
    IMAGE_URL_PATTERN,
    MAC_FIX,
    MAC_PATTERN,
    SECRET_NAME_FIX,
    checksum_fits,
)
from state_controller.api.hoststate import ConditionType, Phase
from state_controller.api.states import ErrorType, OperationalStatus, ProvisioningState
from state_controller.api.updates import UpdateStep
from state_controller.books.book import DEFAULT_CHAPTER_LIMIT, DEFAULT_HISTORY_LIMIT
from state_controller.books.update_conditions import CONDITION_TYPES as UPDATE_CONDITION_TYPES

ROOT = Path(__file__).resolve().parents[2]


def test_committed_crds_match_the_models() -> None:
    for name, crd in crds.generate().items():
        committed = (ROOT / "api" / "v1alpha1" / name).read_text()
        assert committed == crds.render(crd), (
            f"api/v1alpha1/{name} is stale: run `state-controller gen crds` and commit the result"
        )
    assert (ROOT / "api" / "kustomization.yaml").read_text() == crds.render_kustomization()
    assert sorted(p.name for p in (ROOT / "api" / "v1alpha1").iterdir()) == sorted(
        crds.generate()
    ), "api/v1alpha1/ holds only CRDs, so that `kubectl apply -f api/v1alpha1/` applies"


# Where a schema may keep unknown fields, and why. Nothing is free-form today: hardware
# details are a fixed set of fields, their one open part (systemVendor) a string map.
FREE_FORM: dict[str, str] = {}

# Standard fields the API server defines itself, not the CRD's business to bound.
SERVER_DEFINED = {".apiVersion", ".kind", ".metadata"}
TIMESTAMP_NAME = re.compile(r"(^at|At|Time|Timestamp|Updated)$")
FIELD_NAMED = re.compile(r"\b(?:spec|status)(?:\.[A-Za-z0-9]+(?:\[\])?)+")  # [] an item


def _rule_problems(schema: dict[str, Any], path: str) -> list[str]:
    """Every CEL rule: no pattern repeated, a message naming a field under its own path."""
    problems = []
    here = path.lstrip(".")
    patterns = [schema.get("pattern")] + [
        sub.get("pattern") for sub in (schema.get("properties") or {}).values()
    ]
    for rule in schema.get("x-kubernetes-validations") or []:
        text = rule["rule"]
        if any(p and (p in text or p.replace("\\", "") in text) for p in patterns):
            problems.append(f"{path}: CEL rule repeats a pattern: {text}")
        message = rule.get("message") or rule.get("messageExpression") or ""
        target = here + rule.get("fieldPath", "")
        named = FIELD_NAMED.findall(message)
        if target not in named:
            problems.append(f"{path}: CEL message does not name {target}: {message!r}")
        for field in named:
            if field != here and not field.startswith(here + "."):
                problems.append(f"{path}: CEL message names {field}, not under {here}")
    return problems


def _walk(schema: dict[str, Any], path: str = "") -> list[str]:
    problems = []
    kind = schema.get("type")
    name = path.rsplit(".", 1)[-1].removesuffix("[]")
    if "properties" in schema and kind != "object":
        problems.append(f"{path}: properties without type object")
    for banned in ("anyOf", "oneOf", "allOf", "$ref", "title", "const"):
        if banned in schema:
            problems.append(f"{path}: {banned}")
    if "properties" in schema and isinstance(schema.get("additionalProperties"), bool):
        problems.append(f"{path}: additionalProperties with properties")
    if schema.get("x-kubernetes-preserve-unknown-fields") and path not in FREE_FORM:
        problems.append(f"{path}: keeps unknown fields (allow it in FREE_FORM, with the reason)")
    if kind == "array":
        if schema.get("x-kubernetes-list-type") not in ("atomic", "set", "map"):
            problems.append(f"{path}: array without x-kubernetes-list-type")
        if "maxItems" not in schema:
            problems.append(f"{path}: array without maxItems")
        if schema.get("x-kubernetes-list-type") == "map":
            required = set((schema.get("items") or {}).get("required") or ())
            if not set(schema.get("x-kubernetes-list-map-keys") or ["?"]) <= required:
                problems.append(f"{path}: map list keys must be required")
    if kind == "string" and not {"maxLength", "enum", "format", "pattern"} & schema.keys():
        problems.append(f"{path}: string without maxLength, enum, format or pattern")
    if kind == "integer" and "minimum" not in schema:
        problems.append(f"{path}: integer without minimum")
    if TIMESTAMP_NAME.search(name) and kind == "string" and schema.get("format") != "date-time":
        problems.append(f"{path}: timestamp without format date-time")
    problems += _rule_problems(schema, path)
    for key, sub in (schema.get("properties") or {}).items():
        if f"{path}.{key}" not in SERVER_DEFINED:
            problems += _walk(sub, f"{path}.{key}")
    if isinstance(schema.get("items"), dict):
        problems += _walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        problems += _walk(schema["additionalProperties"], f"{path}.*")
    return problems


def test_schemas_are_structural_closed_and_bounded() -> None:
    for name, crd in crds.generate().items():
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        assert _walk(schema) == [], name


def test_the_schema_check_finds_each_gap() -> None:
    """The check above can fail: each kind of gap, planted once, is reported."""
    bad = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {
                    "items": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    "name": {"type": "string"},
                    "count": {"type": "integer"},
                    "startedAt": {"type": "string", "maxLength": 40},
                    "mac": {
                        "type": "string",
                        "pattern": "^[0-9a-f:]+$",
                        "x-kubernetes-validations": [
                            {"rule": "self.matches(r'^[0-9a-f:]+$')", "message": "use hex"}
                        ],
                    },
                    "url": {
                        "type": "string",
                        "maxLength": 9,
                        "x-kubernetes-validations": [
                            {"rule": "self.size() > 1", "message": "spec.image.url: too short"}
                        ],
                    },
                },
            }
        },
    }
    problems = "\n".join(_walk(bad))
    for expected in (
        ".spec: keeps unknown fields",
        ".spec.items: array without x-kubernetes-list-type",
        ".spec.items: array without maxItems",
        ".spec.name: string without maxLength",
        ".spec.count: integer without minimum",
        ".spec.startedAt: timestamp without format date-time",
        ".spec.mac: CEL rule repeats a pattern",
        ".spec.mac: CEL message does not name spec.mac",
        ".spec.url: CEL message does not name spec.url",
        ".spec.url: CEL message names spec.image.url, not under spec.url",
    ):
        assert expected in problems, expected
    assert len(problems.splitlines()) == 10, problems


def _crd_schema(name: str) -> dict[str, Any]:
    crd = crds.generate()[name]
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def test_lists_are_bounded_with_room_for_the_controllers_limits() -> None:
    status = _crd_schema("hoststate.io_hoststates.yaml")["properties"]["status"]["properties"]
    history, chapters = status["history"], status["chapters"]
    assert history["maxItems"] >= DEFAULT_HISTORY_LIMIT and "50" in history["description"]
    assert chapters["maxItems"] >= DEFAULT_CHAPTER_LIMIT and "20" in chapters["description"]
    conditions = status["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert conditions["maxItems"] >= len(ConditionType)
    host = _crd_schema("hoststate.io_hosts.yaml")["properties"]["status"]["properties"]
    assert host["recentTransitions"]["maxItems"] == history["maxItems"]


def test_conditions_are_shaped_as_metav1_condition() -> None:
    status = _crd_schema("hoststate.io_hoststates.yaml")["properties"]["status"]
    item = status["properties"]["conditions"]["items"]
    props = item["properties"]
    assert set(item["required"]) == {"type", "status", "lastTransitionTime", "reason", "message"}
    assert props["type"]["maxLength"] == 316 and props["type"]["pattern"].startswith("^(")
    assert props["status"]["enum"] == ["True", "False", "Unknown"]
    assert props["reason"]["maxLength"] == 1024 and props["reason"]["minLength"] == 1
    assert props["reason"]["pattern"] == "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
    assert props["message"]["maxLength"] == 32768
    assert props["lastTransitionTime"]["format"] == "date-time"
    assert props["observedGeneration"]["minimum"] == 0


def test_printer_columns_and_short_names() -> None:
    generated = crds.generate()
    hoststates = generated["hoststate.io_hoststates.yaml"]["spec"]
    hosts = generated["hoststate.io_hosts.yaml"]["spec"]
    assert hoststates["names"]["shortNames"] == ["hs"]
    assert hosts["names"]["shortNames"] == ["hst"]
    # HyperShift's NodePool has np and nps (hypershift.openshift.io): hoststate's has neither
    nodepools = generated["hoststate.io_nodepools.yaml"]["spec"]
    assert nodepools["names"]["shortNames"] == ["hsnp"]
    names = [c["name"] for c in hoststates["versions"][0]["additionalPrinterColumns"]]
    assert names == [c.name for c in HOSTSTATE_COLUMNS]
    assert {"Host", "Node", "Phase", "State", "Stuck", "In-State", "Age"} <= set(names)
    assert len(hosts["versions"][0]["additionalPrinterColumns"]) == len(HOST_COLUMNS)
    assert hosts["versions"][0]["subresources"] == {"status": {}}


# Every column HostState had before its defaults were cut to fit 120 characters: -o wide
# keeps each of them.
# (UpdateCompatible and ReloadedCRIO went: MachineConfigNode v1 has neither)
HOSTSTATE_COLUMNS_BEFORE = (
    "Host", "Node", "Phase", "State", "Updated", "UpdatePrepared", "UpdateExecuted",
    "UpdatePostActionComplete", "UpdateComplete", "Resumed", "Stuck", "Errors", "In-State",
    "Age", "Registered", "Inspected", "Prepared", "Provisioned", "Degraded", "Step", "Mode",
    "AppliedFilesAndOS", "Cordoned", "Drained", "RebootedNode", "Uncordoned", "NodeDegraded",
    "Message",
)  # fmt: skip
NAME = "rack12-worker-0042ab"  # a long host name: 20 characters
CONDITION = ("True", "False", "Unknown")
# kubectl's relative times (HumanDuration): 9m59s, 7d23h, 7y364d; blank when missing
DATE = ("7y364d",)
COUNT = ("999999",)  # errors in a row, machines in a pool: six digits are plenty
# Every value each default column can show: one with no bound (a Node's name, a config's
# name, a message) is only in -o wide.
VALUES: dict[str, tuple[str, ...]] = {
    ".status.phase": tuple(Phase),
    ".status.update.step": tuple(UpdateStep),
    ".status.provisioning.state": tuple(ProvisioningState),
    ".status.provisioning.errorCount": COUNT,
    ".status.provisioning.enteredAt": DATE,
    ".status.update.enteredAt": DATE,
    ".status.estimate.endsBy": ("23:59", ">24h"),  # HH:MM in UTC, or beyond a day
    ".status.operationalStatus": tuple(OperationalStatus),
    ".status.errorType": tuple(ErrorType),
    ".status.errorCount": COUNT,
    ".spec.online": ("true", "false"),
    ".status.poweredOn": ("true", "false"),
    ".metadata.creationTimestamp": DATE,
    ".status.machineCount": COUNT,
    ".status.updatedMachineCount": COUNT,
    ".status.updatingMachineCount": COUNT,
    ".status.degradedMachineCount": COUNT,
    ".status.unavailableMachineCount": COUNT,
}


def widest_line(columns: tuple[Column, ...]) -> int:
    """The widest line ``kubectl get -n`` prints with these default columns, whatever the
    values: each column is as wide as its header or its widest value, three spaces apart."""
    widths = [len(NAME)]
    for column in columns:
        if column.priority:
            continue
        values: tuple[str, ...]
        if column.json_path.startswith(".status.conditions["):
            values = CONDITION
        else:
            assert column.json_path in VALUES, f"{column.name}: no known bound; -o wide only"
            values = VALUES[column.json_path]
        widths.append(max(len(column.name), *(len(str(v)) for v in values)))
    return sum(widths) + 3 * (len(widths) - 1)


@pytest.mark.parametrize(
    "columns", [HOSTSTATE_COLUMNS, HOST_COLUMNS, NODEPOOL_COLUMNS], ids=["hs", "hosts", "pools"]
)
def test_default_columns_fit_120_characters_whatever_the_values(
    columns: tuple[Column, ...],
) -> None:
    assert widest_line(columns) <= 120


def test_the_default_view_answers_where_whats_wrong_and_since_when() -> None:
    default = [c.name for c in HOSTSTATE_COLUMNS if not c.priority]
    assert default == ["Phase", "Step", "In-Step", "Stuck", "Errors", "In-State", "Age", "Ends"]
    assert [c.name for c in HOST_COLUMNS if not c.priority] == [
        "State", "Online", "Powered", "Error", "Errors", "Age",
    ]  # fmt: skip
    assert set(HOSTSTATE_COLUMNS_BEFORE) <= {c.name for c in HOSTSTATE_COLUMNS}  # wide: all
    shown = {c.json_path for c in HOSTSTATE_COLUMNS}
    for type_ in (*UPDATE_CONDITION_TYPES, "Registered", "Inspected", "Prepared", "Provisioned",
                  "Degraded", "Stuck"):  # fmt: skip
        assert f'.status.conditions[?(@.type=="{type_}")].status' in shown, type_
    for column in (*HOSTSTATE_COLUMNS, *HOST_COLUMNS, *NODEPOOL_COLUMNS):
        assert column.description or column.name == "Age", column.name


def test_user_fields_are_validated_by_the_schema() -> None:
    """Each constraint on a user's field is one CEL rule whose message names the field and
    the fix, the one pydantic raises too; no OpenAPI pattern repeats it."""
    spec = yaml.safe_load((ROOT / "api/v1alpha1/hoststate.io_hosts.yaml").read_text())
    props = spec["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    bmc = props["properties"]["bmc"]
    assert bmc["required"] == ["address", "credentialsName"]
    image = props["properties"]["image"]
    assert set(image["required"]) == {"url"}  # a live ISO and an oci:// image need no checksum
    assert image["properties"]["checksumType"]["enum"] == ["md5", "sha256", "sha512", "auto"]
    ruled = {
        "spec.bmc.address": (bmc["properties"]["address"], ADDRESS_PATTERN, ADDRESS_FIX),
        "spec.bmc.credentialsName": (
            bmc["properties"]["credentialsName"],
            DNS_SUBDOMAIN,
            SECRET_NAME_FIX,
        ),
        "spec.bootMACAddress": (props["properties"]["bootMACAddress"], MAC_PATTERN, MAC_FIX),
        "spec.image.url": (image["properties"]["url"], IMAGE_URL_PATTERN, IMAGE_URL_FIX),
    }
    for field, (schema, pattern, fix) in ruled.items():
        assert "pattern" not in schema, field
        (rule,) = schema["x-kubernetes-validations"]
        assert rule == {"rule": f"self.matches(r'{pattern}')", "message": f"{field}: {fix}"}
    checksum_rule, required_rule = image["x-kubernetes-validations"]
    assert checksum_rule["fieldPath"] == required_rule["fieldPath"] == ".checksum"
    assert checksum_rule["message"] == CHECKSUM_MESSAGE
    assert required_rule["message"] == CHECKSUM_REQUIRED
    for closed in (props, bmc, image, props["properties"]["rootDeviceHints"]):
        assert "x-kubernetes-preserve-unknown-fields" not in closed
    status = spec["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    recorded = status["properties"]["provisioning"]["properties"]["image"]
    assert "x-kubernetes-validations" not in yaml.safe_dump(recorded)  # no spec rules here


@pytest.mark.parametrize(
    ("checksum", "kind", "fits"),
    [
        ("0" * 32, "md5", True),
        ("0" * 64, "md5", False),
        ("aB" * 32, "sha256", True),
        ("not-a-sha256!", "sha256", False),
        ("g" * 64, "sha256", False),
        ("0" * 63, "sha256", False),
        ("f" * 128, "sha512", True),
        ("f" * 64, "sha512", False),
        ("0" * 32, "auto", True),
        ("0" * 64, "auto", True),
        ("0" * 128, "auto", True),
        ("0" * 40, "auto", False),  # sha1 is not offered
        ("https://images.example/os.img.sha256sum", "sha256", True),
        ("http://images.example/SHA512SUMS", "auto", True),
        ("ftp://images.example/os.img.md5", "md5", False),
        ("", "auto", False),
    ],
)
def test_checksums_are_judged_by_their_type(checksum: str, kind: str, fits: bool) -> None:
    """The rule the CRD's CEL expression states (its twin on a real API server: see
    tests/cluster/test_api_schema.py)."""
    assert checksum_fits(checksum, kind) is fits
