"""What the controller writes fits the CRDs: no field the schema lacks (the API server
would drop it, and every reconcile would see a difference to write), no string or list
longer than the schema allows (it would refuse the write), however long a backend's
error is."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from state_controller.api import crds
from state_controller.api.base import CONDITION_MESSAGE_MAX, MESSAGE_MAX
from state_controller.api.states import ErrorType
from state_controller.api.states import ProvisioningState as S
from state_controller.books.book import DEFAULT_HISTORY_LIMIT, Book
from state_controller.books.projections import host_status, hoststate_status
from state_controller.books.stuck import StuckPolicy
from state_controller.cluster.schema import prune

T0 = 1_800_000_000.0
LONG = "the backend said: " + "x" * 100_000


def _status_schema(file: str) -> dict[str, Any]:
    crd = crds.generate()[file]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema["properties"]["status"]  # type: ignore[no-any-return]


def _violations(value: Any, schema: dict[str, Any], path: str = "status") -> list[str]:
    """What the API server's OpenAPI validation would refuse (the parts our schemas use)."""
    out: list[str] = []
    kind = schema.get("type")
    python = {"object": dict, "array": list, "string": str, "integer": int, "boolean": bool}
    if kind and not isinstance(value, python[kind]):
        return [f"{path}: not a {kind}"]
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: {value!r} not in enum")
    if isinstance(value, str):
        if len(value) > schema.get("maxLength", len(value)):
            out.append(f"{path}: {len(value)} characters, more than {schema['maxLength']}")
        if len(value) < schema.get("minLength", 0):
            out.append(f"{path}: shorter than {schema['minLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            out.append(f"{path}: does not match {schema['pattern']}")
        if schema.get("format") == "date-time":
            try:
                datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                out.append(f"{path}: {value!r} is not a date-time")
    if isinstance(value, int) and value < schema.get("minimum", value):
        out.append(f"{path}: below {schema['minimum']}")
    if isinstance(value, list):
        if len(value) > schema.get("maxItems", len(value)):
            out.append(f"{path}: {len(value)} items, more than {schema['maxItems']}")
        for index, item in enumerate(value):
            out += _violations(item, schema["items"], f"{path}[{index}]")
    if isinstance(value, dict):
        for key in schema.get("required") or ():
            if key not in value:
                out.append(f"{path}.{key}: required")
        for key, item in value.items():
            sub = (schema.get("properties") or {}).get(key, schema.get("additionalProperties"))
            if isinstance(sub, dict):
                out += _violations(item, sub, f"{path}.{key}")
    return out


def _busy_book() -> Book:
    """A host with every fact known, a full history and an endless error."""
    book = Book("ns/h", now=T0)
    book.move(S.REGISTERING, now=T0 + 1, reason="Registering")
    book.note(
        now=T0 + 2,
        provider_id="0b7e1c2a-4f6d-4b8e-9a51-1c2d3e4f5a6b",
        powered_on=True,
        hardware={
            "systemVendor": {"manufacturer": "Acme", "productName": "M1"},
            "cpu": {"arch": "x86_64", "model": "Acme 64C", "count": 64},
            "ramMebibytes": 262144,
            "nics": [{"name": "eno1", "mac": "52:54:00:00:00:01", "ip": "", "speedGbps": 25}],
            "storage": [{"name": "/dev/sda", "sizeBytes": 960_197_124_096, "rotational": False}],
            "hostname": "h",
        },
        image={"url": "http://i.example/os.img", "checksum": "0" * 64, "checksumType": "auto"},
        root_device_hints={"deviceName": "/dev/sda"},
        boot_mode="UEFI",
        credentials=("h-bmc", "12345"),
        observed_generation=3,
        last_updated=T0 + 2,
    )
    book.move(S.PROVISIONING, now=T0 + 3, reason="Provisioning")
    for attempt in range(DEFAULT_HISTORY_LIMIT + 5):
        book.fail(
            ErrorType.PROVISIONING, f"{attempt}: {LONG}", now=T0 + 4 + attempt, reason="Failed"
        )
    return book


def test_statuses_of_a_host_with_an_endless_error_fit_the_schemas() -> None:
    book = _busy_book()
    stuck_long_ago = T0 + 10 * 24 * 3600  # the Stuck condition quotes the last error too
    statuses = {
        "hoststate.io_hosts.yaml": host_status(book, confirmed_seq=0),
        "hoststate.io_hoststates.yaml": hoststate_status(book, StuckPolicy(), stuck_long_ago),
    }
    for file, status in statuses.items():
        schema = _status_schema(file)
        assert prune(status, schema) == status, f"{file}: fields the schema does not declare"
        assert _violations(status, schema) == [], file

    hoststate = statuses["hoststate.io_hoststates.yaml"]
    assert len(hoststate["history"]) == DEFAULT_HISTORY_LIMIT
    assert {len(h["message"]) for h in hoststate["history"][-5:]} == {MESSAGE_MAX}
    assert hoststate["provisioning"]["errorMessage"].endswith("x…")
    stuck = next(c for c in hoststate["conditions"] if c["type"] == "Stuck")
    assert stuck["status"] == "True" and len(stuck["message"]) == CONDITION_MESSAGE_MAX
    host = statuses["hoststate.io_hosts.yaml"]
    assert len(host["errorMessage"]) == MESSAGE_MAX
    assert host["errorMessage"].startswith(f"{DEFAULT_HISTORY_LIMIT + 4}: the backend said: ")


def test_the_check_above_finds_what_the_server_would_refuse() -> None:
    schema = _status_schema("hoststate.io_hoststates.yaml")
    status = hoststate_status(_busy_book(), StuckPolicy(), T0)
    status["history"][0]["message"] = "y" * (MESSAGE_MAX + 1)
    status["history"][1]["at"] = "yesterday"
    status["conditions"][0]["reason"] = ""
    status["lastSeq"] = -1
    status["bogus"] = True
    assert prune(status, schema) != status
    assert _violations(status, schema) == [
        "status.conditions[0].reason: shorter than 1",
        "status.conditions[0].reason: does not match ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        f"status.history[0].message: {MESSAGE_MAX + 1} characters, more than {MESSAGE_MAX}",
        "status.history[1].at: 'yesterday' is not a date-time",
        "status.lastSeq: below 0",
    ]


def test_the_status_of_a_host_whose_node_is_mid_update_fits_the_schema() -> None:
    """Every field of status.update is declared: one the schema lacked (``bootID``) was
    dropped by the API server, and a restarted controller lost the boot a reboot is
    told from."""
    from state_controller.api.updates import UpdateStep
    from state_controller.books.records import UpdateCursor

    book = _busy_book()
    book.note(now=T0 + 100, node="worker-3")
    for at, step in enumerate((UpdateStep.PENDING, UpdateStep.DRAINING), start=101):
        shown = UpdateCursor(step=step, desired="v2", current="v1", source="agent",
                             boot_id="boot-1", message="draining: 1 pod left")  # fmt: skip
        book.transition(update=shown, now=T0 + at, reason="Step")
    schema = _status_schema("hoststate.io_hoststates.yaml")
    status = hoststate_status(book, StuckPolicy(), T0 + 200)
    assert status["update"]["bootID"] == "boot-1"
    assert prune(status, schema) == status, "fields the schema does not declare"
    assert _violations(status, schema) == []
