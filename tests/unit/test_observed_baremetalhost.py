"""A BareMetalHost, as baremetal-operator writes it, read into a book: each move once, at
BMO's own times, a missed change as one marked jump, and nothing new after a restart."""

from __future__ import annotations

import json
from typing import Any

from state_controller.api.states import ErrorType, OperationalStatus
from state_controller.api.states import ProvisioningState as S
from state_controller.api.timefmt import rfc3339_ms
from state_controller.books.book import Book
from state_controller.books.projections import hoststate_status, phase
from state_controller.books.restore import observed_host_status, restore
from state_controller.books.stuck import StuckPolicy
from state_controller.observed.baremetalhost import (
    FIRST,
    JUMP,
    OBSERVED,
    bmo_words,
    error_sentence,
    observe,
)
from state_controller.simulation.baremetal_operator import bmo_conditions
from testbed.clocks import T0

KEY = "metal3/worker-0"


def bmh(state: str, **status: Any) -> dict[str, Any]:
    history = status.pop("history", {})
    return {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": {"name": "worker-0", "namespace": "metal3"},
        "spec": {"online": True},
        "status": {
            "provisioning": {"state": state},
            "operationalStatus": status.pop("operationalStatus", "OK"),
            "errorMessage": status.pop("errorMessage", ""),
            "errorCount": status.pop("errorCount", 0),
            "poweredOn": status.pop("poweredOn", False),
            "operationHistory": {
                op: {k: rfc3339_ms(v) for k, v in times.items()} for op, times in history.items()
            },
            **status,
        },
    }


def moves(book: Book) -> list[tuple[str, str, str, float]]:
    return [(t.from_state, t.to_state, t.reason, t.at) for t in book.history]


def test_a_whole_life_is_recorded_at_bmos_times() -> None:
    book = Book(KEY, now=T0)
    life = {
        "register": {"start": T0 + 1, "end": T0 + 3},
        "inspect": {"start": T0 + 3, "end": T0 + 40},
    }
    observe(book, bmh(""), T0)
    assert book.last_seq == 0  # nothing to tell before BMO acts
    observe(book, bmh("registering", history={"register": {"start": T0 + 1}}), T0 + 2)
    observe(book, bmh("inspecting", history=life), T0 + 5)
    observe(book, bmh("available", history=life), T0 + 45)
    life["provision"] = {"start": T0 + 60}
    observe(book, bmh("provisioning", history=life, poweredOn=True), T0 + 61)
    life["provision"]["end"] = T0 + 300
    observe(book, bmh("provisioned", history=life, poweredOn=True), T0 + 302)

    assert moves(book) == [
        ("", "registering", FIRST, T0 + 1),  # register.start
        ("registering", "inspecting", OBSERVED, T0 + 3),  # inspect.start
        ("inspecting", "available", OBSERVED, T0 + 40),  # inspect.end
        ("available", "provisioning", OBSERVED, T0 + 60),  # provision.start
        ("provisioning", "provisioning", "PoweredOn", T0 + 61),
        ("provisioning", "provisioned", OBSERVED, T0 + 300),  # provision.end
    ]
    assert "time: BareMetalHost operationHistory.inspect.end" in book.history[2].message
    assert [t.at for t in book.history] == sorted(t.at for t in book.history)
    assert [c.name for c in book.chapters] == [
        "registration",
        "inspection",
        "preparation",
        "provisioning",
    ]
    assert book.cursor.state == S.PROVISIONED and book.cursor.entered_at == T0 + 300
    # the inspection's time in state is BMO's 37 s, not the 40 s between two looks
    assert book.journal.since(0)[0][2].time_in_previous_state == 37


def test_a_change_missed_is_one_marked_jump_and_no_state_is_invented() -> None:
    book = Book(KEY, now=T0)
    observe(book, bmh("registering"), T0)
    history = {
        "inspect": {"start": T0 + 10, "end": T0 + 50},
        "provision": {"start": T0 + 60, "end": T0 + 200},
    }
    observe(book, bmh("provisioned", history=history), T0 + 500)
    [_, jump] = book.history
    assert (jump.from_state, jump.to_state, jump.reason) == ("registering", "provisioned", JUMP)
    assert jump.at == T0 + 200  # provision.end: BMO's time, not the moment it was seen
    assert "while it was not watched" in jump.message


def test_the_first_look_at_a_provisioned_host_starts_its_history_there() -> None:
    book = Book(KEY, now=T0 + 1000)
    history = {"provision": {"start": T0 + 60, "end": T0 + 200}}
    observe(book, bmh("provisioned", history=history, poweredOn=True), T0 + 1000)
    [first] = book.history
    assert (first.from_state, first.to_state, first.reason) == ("", "provisioned", FIRST)
    assert first.at == T0 + 200 and book.facts.powered_on
    assert phase(book).value == "Provisioned"


def test_a_time_from_the_future_or_before_the_book_is_not_taken() -> None:
    book = Book(KEY, now=T0)
    observe(book, bmh("inspecting", history={"inspect": {"start": T0 + 900}}), T0 + 10)
    assert book.history[0].at == T0 + 10  # a clock ahead of ours: the moment it was seen
    assert "when hoststate saw it" in book.history[0].message


def test_errors_take_bmos_type_and_count_in_the_controllers_words_then_clear() -> None:
    book = Book(KEY, now=T0)
    observe(book, bmh("provisioning"), T0)
    words = "Image download failed: HTTP/1.1 403 Forbidden <title>internal admin</title>"
    failing = {
        "operationalStatus": "error",
        "errorType": "provisioning error",
        "errorMessage": words,
    }
    observe(book, bmh("provisioning", errorCount=3, **failing), T0 + 10)
    assert book.cursor.operational_status == OperationalStatus.ERROR
    assert book.cursor.error_type == ErrorType.PROVISIONING
    assert book.cursor.error_count == 3  # BMO's count, not ours
    # BMO's errorMessage is Ironic's last_error, quoting a server: for the log only
    assert book.cursor.error_message == error_sentence(ErrorType.PROVISIONING)
    assert bmo_words(bmh("provisioning", errorCount=3, **failing)) == words
    told = json.dumps(hoststate_status(book, StuckPolicy(), T0 + 10))
    assert "internal admin" not in told and "in hoststate's log" in told
    records = book.last_seq
    observe(book, bmh("provisioning", errorCount=4, **failing), T0 + 20)
    assert book.cursor.error_count == 4 and book.last_seq == records  # counted, not retold
    observe(book, bmh("provisioning", errorCount=0), T0 + 30)
    assert book.cursor.operational_status == OperationalStatus.OK
    assert book.history[-1].reason == "Recovered"


def test_servicing_is_a_chapter_of_its_own_and_detached_a_status() -> None:
    book = Book(KEY, now=T0)
    observe(book, bmh("provisioned"), T0)
    observe(book, bmh("provisioned", operationalStatus="servicing"), T0 + 10)
    assert phase(book).value == "Servicing"
    observe(book, bmh("provisioned"), T0 + 70)
    assert [c.name for c in book.chapters][-1] == "servicing"
    assert book.chapters[-1].transitions == 2
    observe(book, bmh("provisioned", operationalStatus="detached"), T0 + 80)
    assert phase(book).value == "Detached"


def test_an_unknown_state_is_told_and_changes_nothing() -> None:
    book = Book(KEY, now=T0)
    observe(book, bmh("provisioned"), T0)
    observe(book, bmh("levitating"), T0 + 5)
    assert book.cursor.state == S.PROVISIONED
    assert "levitating" in book.seen.spec_problem
    observe(book, bmh("provisioned"), T0 + 6)
    assert book.seen.spec_problem == ""


def test_a_restart_rebuilds_the_book_from_its_hoststate_with_no_new_record() -> None:
    book = Book(KEY, now=T0)
    history = {"provision": {"start": T0 + 60, "end": T0 + 200}}
    failing = {"operationalStatus": "error", "errorType": "provisioning error"}
    for shown in (
        bmh("available", poweredOn=True),
        bmh("provisioning", history=history, poweredOn=True),
        bmh("provisioning", history=history, errorCount=2, errorMessage="boom", **failing),
    ):
        observe(book, shown, T0 + 100)
    # what else it shows: a consumer, a power-off wish, a detach request, BMO's conditions
    shown["spec"] |= {"online": False, "consumerRef": {"kind": "Metal3Machine", "name": "m0"}}
    shown["metadata"]["annotations"] = {"baremetalhost.metal3.io/detached": ""}
    shown["status"]["conditions"] = bmo_conditions(
        "provisioning", operational_status="error", healthy="Warning", at=T0 + 99.6
    )
    observe(book, shown, T0 + 100)
    stored = hoststate_status(book, StuckPolicy(), T0 + 100)
    again = restore(KEY, observed_host_status(stored), stored, now=T0 + 500)
    assert again.facts.bare_metal_host == book.facts.bare_metal_host
    assert again.facts.consumer == book.facts.consumer == "Metal3Machine m0"
    before = (again.last_seq, again.cursor)
    observe(again, shown, T0 + 500)
    assert (again.last_seq, again.cursor) == before
    assert again.journal.since(0)[0] == []
    assert hoststate_status(again, StuckPolicy(), T0 + 100) == stored  # nothing to write


def test_a_paused_baremetalhost_is_told_as_paused_not_progressing() -> None:
    book = Book(KEY, now=T0)
    observe(book, bmh("inspecting"), T0)
    paused = bmh("inspecting")
    paused["metadata"]["annotations"] = {"baremetalhost.metal3.io/paused": "clusterctl move"}
    observe(book, paused, T0 + 5)
    conditions = {c["type"]: c for c in hoststate_status(book, StuckPolicy(), T0 + 5)["conditions"]}
    assert conditions["Progressing"]["status"] == "False"
    assert conditions["Progressing"]["reason"] == "Paused"
    assert "(clusterctl move)" in conditions["Progressing"]["message"]
    records = book.last_seq
    observe(book, bmh("inspecting"), T0 + 9)  # unpaused: moving again, nothing recorded
    conditions = {c["type"]: c for c in hoststate_status(book, StuckPolicy(), T0 + 9)["conditions"]}
    assert conditions["Progressing"]["reason"] != "Paused" and book.last_seq == records


def test_every_error_type_has_a_sentence_of_its_own() -> None:
    sentences = {error_sentence(e) for e in ErrorType}
    assert len(sentences) == len(ErrorType)


def test_a_host_seen_back_in_registering_is_a_jump() -> None:
    """baremetal-operator v0.13.2 never moves a host back to registering
    (internal/controller/metal3.io/host_state_machine.go: only handleNone and
    handleUnmanaged set it; lost credentials are registered again in place), so a
    provisioned host seen in registering is marked as a jump, not a move it made."""
    book = Book(KEY, now=T0)
    observe(book, bmh("provisioned"), T0)
    observe(book, bmh("registering"), T0 + 10)
    [_, back] = book.history
    assert (back.from_state, back.to_state, back.reason) == ("provisioned", "registering", JUMP)
    unmanaged = Book(KEY, now=T0)
    observe(unmanaged, bmh("unmanaged"), T0)
    observe(unmanaged, bmh("registering"), T0 + 10)
    assert unmanaged.history[-1].reason == OBSERVED
