"""The hardware-details and status annotations are parsed once per text, not per read.

A reconcile read each up to three times and every reconcile read them again, each read a
JSON parse and a validation of up to 256 KB; now a text is parsed once while it stands,
what a caller gets is its own copy, and only a few texts are kept.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from state_controller.api import annotations as ann
from state_controller.runtime.hosts import inputs as host_inputs
from state_controller.runtime.hosts.inputs import hardware_details, status_annotation

HARDWARE = json.dumps({"cpu": {"arch": "x86_64", "count": 8}, "ramMebibytes": 4096})
STATUS = json.dumps({"provisioning": {"state": "provisioned", "id": "n-1"}})


def _counted(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    calls: list[str] = []
    real = getattr(host_inputs, name)

    def counted(raw: str) -> Any:
        calls.append(raw)
        return real(raw)

    monkeypatch.setattr(host_inputs, name, counted)
    monkeypatch.setattr(host_inputs, "_ANNOTATIONS", host_inputs._Annotations())
    return calls


def test_hardware_details_are_parsed_once_and_each_reader_gets_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counted(monkeypatch, "_hardware_model")
    annotations = {ann.HARDWARE_DETAILS: HARDWARE}
    first, problem = hardware_details(annotations)
    assert problem is None and first is not None and first["ramMebibytes"] == 4096
    first["ramMebibytes"] = 1
    for _ in range(5):
        again, _ = hardware_details(annotations)
        assert again is not None and again["ramMebibytes"] == 4096
    assert len(calls) == 1
    _, problem = hardware_details({ann.HARDWARE_DETAILS: "{"})
    _, problem_again = hardware_details({ann.HARDWARE_DETAILS: "{"})
    assert problem and problem == problem_again and len(calls) == 2


def test_the_status_annotation_is_parsed_once_and_what_is_dropped_stays_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counted(monkeypatch, "_status_model")
    for _ in range(4):
        status, problem = status_annotation({ann.STATUS: STATUS})
        assert problem is None and status is not None
        assert status["provisioning"]["state"] == "provisioned"
        assert "id" not in status["provisioning"]  # a tenant's ID is never restored
    assert len(calls) == 1


def test_only_a_few_texts_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counted(monkeypatch, "_hardware_model")
    for count in range(20):
        hardware_details({ann.HARDWARE_DETAILS: json.dumps({"ramMebibytes": count})})
    assert len(calls) == 20
    assert len(host_inputs._ANNOTATIONS._kept) == host_inputs._Annotations.ENTRIES
