"""A HostState's status kept in its annotation: the round trip, the size bound, the refusals
(state_controller/books/saved_status.py)."""

from __future__ import annotations

import json
import logging

import pytest

from state_controller.api import annotations as ann
from state_controller.books.saved_status import ANNOTATIONS_MAX, fit, read, room_for
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTSTATES
from state_controller.cluster.schema import validators
from state_controller.runtime.machinery.informer import Informer
from state_controller.runtime.machinery.reporting import NoReporter
from state_controller.runtime.writing.book_writer import hoststate_body
from state_controller.runtime.writing.saved_status import SavedStatus
from state_controller.runtime.writing.status_writer import StatusWriter
from testbed.worst_case import endless_error_statuses

AT = "2026-11-28T10:00:00.000Z"
STATUS = {
    "phase": "Provisioned",
    "source": "Host",
    "history": [
        {"seq": 1, "chapter": "registration", "from": "", "to": "registering", "at": AT},
        {"seq": 2, "chapter": "provisioning", "from": "available", "to": "provisioned",
         "at": AT, "reason": "Provisioned", "message": "héllo"},
    ],
    "lastSeq": 2,
}  # fmt: skip


def test_a_status_comes_back_as_it_was_kept() -> None:
    saved = fit(STATUS, room_for({}))
    assert saved.value is not None and (saved.dropped_transitions, saved.dropped_chapters) == (0, 0)
    assert read(saved.value) == (STATUS, None)


def test_the_worst_status_is_cut_to_fit_beside_the_other_annotations() -> None:
    """The longest status the controller writes (every message 4096 characters) is over
    256 KiB: its oldest transitions go, counted in historyDropped, and what is kept fits
    with the other annotations as the API server counts them (bytes of keys and values)."""
    _, worst = endless_error_statuses()
    assert len(json.dumps(worst).encode()) > ANNOTATIONS_MAX
    others = {"kubectl.kubernetes.io/last-applied-configuration": "x" * 20_000}
    saved = fit(worst, room_for(others))
    assert saved.value is not None and saved.dropped_transitions > 0
    total = sum(len(k) + len(v.encode()) for k, v in {**others, ann.STATUS: saved.value}.items())
    assert total <= ANNOTATIONS_MAX
    back, problem = read(saved.value)
    assert problem is None and back is not None
    kept = len(worst["history"]) - saved.dropped_transitions
    assert back["history"] == worst["history"][-kept:]  # the newest ones, whole
    dropped = worst.get("historyDropped", 0) + saved.dropped_transitions
    assert back["historyDropped"] == dropped
    assert back["chapters"] == worst["chapters"] and back["lastSeq"] == worst["lastSeq"]


def test_a_status_that_cannot_fit_is_not_kept() -> None:
    _, worst = endless_error_statuses()
    saved = fit(worst, 1_000)  # the other annotations leave almost no room
    assert saved.value is None
    assert saved.dropped_transitions == len(worst["history"])
    assert saved.dropped_chapters == len(worst["chapters"])


def test_a_bad_annotation_is_refused_in_one_line() -> None:
    out_of_order = {**STATUS, "history": list(reversed(STATUS["history"]))}  # type: ignore[call-overload]
    cases = {
        "{": "is not JSON",
        "[1]": "is not a JSON object",
        json.dumps({**STATUS, "phase": "Lost"}): "is not a HostState status (phase:",
        json.dumps({**STATUS, "history": []}): "holds no history",
        json.dumps(out_of_order): "has its transitions out of order",
        json.dumps({**STATUS, "lastSeq": 1}): "has its transitions out of order",
    }
    for raw, said in cases.items():
        status, problem = read(raw)
        assert status is None and problem is not None, raw
        assert said in problem and "\n" not in problem
        assert problem.startswith(f"annotation {ann.STATUS} on the HostState")
        assert problem.endswith("fix or remove it (the HostState's status is left as it is)")


def test_a_hoststate_with_a_bad_annotation_is_left_as_it_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Arrived without status and with an annotation that is refused: nothing is written,
    the annotation stays for its user to fix, and the reason is logged once."""
    cluster = EmbeddedCluster(validators=validators())
    try:
        owner = {"apiVersion": "hoststate.io/v1alpha1", "kind": "Host", "name": "h", "uid": "u"}
        body = hoststate_body("metal", "h", spec={"host": "h", "node": ""},
                              label=ann.HOST_LABEL, owner=owner)  # fmt: skip
        body["metadata"]["annotations"] = {ann.STATUS: json.dumps({**STATUS, "lastSeq": 1})}
        created = cluster.create(HOSTSTATES, body)
        informer = Informer(cluster, HOSTSTATES, "metal")
        informer.mutate(created)
        saved = SavedStatus(cluster, informer, StatusWriter(cluster, NoReporter()))
        with caplog.at_level(logging.WARNING):
            for _ in range(3):
                saved.keep("metal/h", {ann.PAUSED: ""})
                saved.drop_spent("metal/h", informer.get("metal/h"))
        assert cluster.get(HOSTSTATES, "metal", "h") == created  # nothing written
        (warning,) = [r.getMessage() for r in caplog.records]
        assert warning.endswith("has its transitions out of order; fix or remove it "
                                "(the HostState's status is left as it is)")  # fmt: skip
    finally:
        cluster.close()
