"""The state handlers' contract: each returns its verdict, and the machine's loop alone
reads it (go on while the host moves, stop at anything else, when to look again)."""

from __future__ import annotations

from typing import Any

import pytest

from state_controller.api.states import ErrorType
from state_controller.api.states import ProvisioningState as S
from state_controller.books.book import Book
from state_controller.provisioning import deletion, lifecycle, machine
from state_controller.provisioning.backoff import Backoff
from state_controller.provisioning.deletion import DELETION, registered_for_deletion
from state_controller.provisioning.inputs import HostInput
from state_controller.provisioning.lifecycle import LIFECYCLE
from state_controller.provisioning.machine import Decision, HostMachine, heed
from state_controller.provisioning.provisioner import Credentials, HostView
from state_controller.provisioning.results import (
    Result,
    complete,
    continuing,
    failed,
    transient,
)
from state_controller.provisioning.steps import Handler, StepContext
from state_controller.provisioning.verdicts import (
    GO_ON,
    REFUSED,
    REST,
    Failed,
    GoOn,
    Refused,
    Rest,
    Wait,
)
from state_controller.runtime.hosts.inputs import parse_spec
from state_controller.servicing.plan import ServicePlan

IMAGE = {"url": "http://img.example/os.qcow2", "checksum": "abc123" * 10 + "abcd"}
SPEC = {"bmc": {"address": "ipmi://bmc-1.example:623", "credentialsName": "c"}, "image": IMAGE}
NO_JITTER = Backoff(base=10.0, jitter=0.0)


class Answers:
    """A provisioner that answers what it is told to, and is done with anything else."""

    def __init__(self, **answers: Result) -> None:
        self.answers = answers

    def _answer(self, name: str, **done: Any) -> Result:
        return self.answers.get(name, complete(**done))

    def register(self, host: HostView, *, credentials_changed: bool) -> Result:
        return self._answer("register", provider_id="node-1", powered_on=False)

    def inspect(self, host: HostView, *, restart: bool) -> Result:
        return self._answer("inspect", hardware={})

    def prepare(self, host: HostView) -> Result:
        return self._answer("prepare")

    def provision(self, host: HostView) -> Result:
        return self._answer("provision", powered_on=True)

    def deprovision(self, host: HostView) -> Result:
        return self._answer("deprovision")

    def adopt(self, host: HostView) -> Result:
        return self._answer("adopt")

    def power(self, host: HostView, *, on: bool, soft: bool = False) -> Result:
        return self._answer("power", powered_on=on)

    def reboot(self, host: HostView, *, soft: bool = False) -> Result:
        return self._answer("reboot")

    def detach(self, host: HostView) -> Result:
        return self._answer("detach")

    def firmware(self, host: HostView) -> Result:
        return self._answer("firmware", firmware={})

    def service(self, host: HostView, plan: ServicePlan, *, started: bool) -> Result:
        return self._answer("service")

    def delete(self, host: HostView) -> Result:
        return self._answer("delete")


def host_input(*, deleting: bool = False, creds: bool = True) -> HostInput:
    spec, problem = parse_spec(SPEC)
    return HostInput(
        namespace="ns",
        name="h",
        generation=1,
        spec=spec,
        spec_problem=problem,
        deleting=deleting,
        credentials=Credentials("admin", "s3cret") if creds else None,
        credentials_version=("c", "1") if creds else None,
        credentials_problem=None if creds else 'Secret "c" not found',
    )


def at(state: S) -> Book:
    book = Book("ns/h", now=0)
    if state != S.NONE:
        book.move(state, now=0, reason="Test")
    return book


def context(book: Book, provisioner: Answers, *, deleting: bool = False) -> StepContext:
    return StepContext(provisioner, NO_JITTER, book, host_input(deleting=deleting), now=100.0)


VERDICTS = (GoOn, Wait, Rest, Refused, Failed)


@pytest.mark.parametrize("deleting", [False, True], ids=["lifecycle", "deletion"])
@pytest.mark.parametrize("state", list(S), ids=[s.value or "none" for s in S])
def test_every_handler_returns_its_verdict(state: S, deleting: bool) -> None:
    table = DELETION if deleting else LIFECYCLE
    run = context(at(state), Answers(), deleting=deleting)
    assert isinstance(table[state].act(run), VERDICTS)


def test_work_under_way_is_a_wait_and_moves_nothing() -> None:
    book = at(S.INSPECTING)
    verdict = lifecycle.inspecting(context(book, Answers(inspect=continuing(5.0))))
    assert verdict == Wait(5.0)
    assert book.cursor.state == S.INSPECTING


def test_a_refused_start_is_refused_and_enters_nothing() -> None:
    book = at(S.AVAILABLE)
    verdict = lifecycle.available(context(book, Answers(provision=transient("backend down"))))
    assert verdict is REFUSED
    assert book.cursor.state == S.AVAILABLE
    assert book.seen.transient == "backend down"


def test_a_failure_is_recorded_and_answers_its_backoff() -> None:
    book = at(S.INSPECTING)
    run = context(book, Answers(inspect=failed("the disks are gone")))
    assert lifecycle.inspecting(run) == Failed(10.0)
    assert book.cursor.error_type == ErrorType.INSPECTION
    assert run.retry is not None and run.retry.at == 110.0


def test_complete_work_goes_on_to_the_next_state() -> None:
    book = at(S.INSPECTING)
    assert lifecycle.inspecting(context(book, Answers())) is GO_ON
    assert book.cursor.state == S.AVAILABLE  # inspected, then prepared at once


def test_each_verdict_tells_the_decision_when_to_look_again() -> None:
    decision = Decision()
    heed(decision, GO_ON)
    heed(decision, REST)
    assert decision == Decision()
    heed(decision, Wait(3.0))
    heed(decision, Failed(7.0))
    assert decision.requeue_after == 3.0 and not decision.rate_limited
    heed(decision, REFUSED)
    assert decision.rate_limited
    stepped_over = Decision()
    heed(stepped_over, GoOn(stepped_over=Wait(4.0)))
    assert stepped_over.requeue_after == 4.0


def test_the_loop_stops_at_a_go_on_that_did_not_move_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[S] = []

    def stays(run: StepContext) -> GoOn:
        calls.append(run.book.cursor.state)
        return GO_ON

    monkeypatch.setitem(LIFECYCLE, S.AVAILABLE, Handler(stays))
    decision = HostMachine(Answers()).step(at(S.AVAILABLE), host_input(), 100.0)
    assert calls == [S.AVAILABLE]
    assert decision.requeue_after is None and not decision.rate_limited


def test_the_loop_comes_straight_back_when_the_host_never_stops_moving(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def back_and_forth(run: StepContext) -> GoOn:
        there = S.PREPARING if run.book.cursor.state == S.AVAILABLE else S.AVAILABLE
        run.move(there, "Test")
        return GO_ON

    monkeypatch.setitem(LIFECYCLE, S.AVAILABLE, Handler(back_and_forth))
    monkeypatch.setitem(LIFECYCLE, S.PREPARING, Handler(back_and_forth))
    decision = HostMachine(Answers()).step(at(S.AVAILABLE), host_input(), 100.0)
    assert decision.requeue_after == 0.0
    assert machine.MAX_STEPS > 1


def test_deletion_goes_past_a_registration_given_up_and_still_wakes_at_its_backoff() -> None:
    book = at(S.AVAILABLE)
    for _ in range(2):
        book.fail(ErrorType.REGISTRATION, "no credentials", now=0, reason="RegistrationFailed")
    inp = host_input(deleting=True, creds=False)
    verdict = registered_for_deletion(StepContext(Answers(), NO_JITTER, book, inp, now=100.0))
    assert verdict == GoOn(stepped_over=Failed(40.0))  # the third failure: 10 * 2**2
    assert book.cursor.state == S.DELETING

    again = at(S.AVAILABLE)
    for _ in range(2):
        again.fail(ErrorType.REGISTRATION, "no credentials", now=0, reason="RegistrationFailed")
    decision = HostMachine(Answers(), backoff=NO_JITTER).step(again, inp, 100.0)
    assert again.cursor.state == S.DELETING
    assert decision.remove_finalizer and decision.requeue_after == 40.0


def test_deletion_handlers_live_in_the_deletion_module_and_the_lifecycles_do_not() -> None:
    assert set(DELETION) == set(LIFECYCLE) == set(S)
    assert {h.act.__module__ for h in DELETION.values()} == {deletion.__name__}
    assert deletion.__name__ not in {h.act.__module__ for h in LIFECYCLE.values()}
