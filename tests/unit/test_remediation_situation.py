"""A machine's remediation read from its book and told in it: when its Node is in trouble,
what holds it, and what the user is told of each verdict."""

from __future__ import annotations

from state_controller.api.states import ErrorType, OperationalStatus
from state_controller.api.states import ProvisioningState as P
from state_controller.api.updates import UpdateStep as S
from state_controller.books.book import Book
from state_controller.books.journal import Notice
from state_controller.books.projections import hoststate_status
from state_controller.books.records import Remediation, UpdateCursor
from state_controller.books.restore import restore
from state_controller.books.stuck import StuckPolicy
from state_controller.remediation.policy import Action, Trouble, Verdict
from state_controller.remediation.situation import (
    Readiness,
    blocked_by,
    settle,
    trouble_of,
)
from testbed.clocks import T0

STUCK = StuckPolicy(step_thresholds={S.REBOOTING: 600})
READY, DOWN = Readiness("True", T0), Readiness("False", T0 + 50)


def running_book() -> Book:
    book = Book("metal/host-0", now=T0)
    book.move(P.PROVISIONED, now=T0 + 1, reason="ProvisioningComplete")
    book.note(now=T0 + 2, node="worker-0", powered_on=True)
    return book


def rebooting(book: Book, at: float) -> None:
    book.update_to(UpdateCursor(step=S.REBOOTING, desired="b"), now=at, reason="Rebooting")


def test_a_reboot_is_trouble_only_once_its_step_is_stuck() -> None:
    book = running_book()
    rebooting(book, T0 + 100)
    assert trouble_of(book, DOWN, STUCK, T0 + 699) == (None, 0.0)
    assert trouble_of(book, DOWN, STUCK, T0 + 700) == (Trouble.REBOOT_LOST, T0 + 100)


def test_a_node_back_on_a_new_boot_is_no_lost_reboot_whatever_step_the_book_shows() -> None:
    book = running_book()
    book.update_to(
        UpdateCursor(step=S.REBOOTING, desired="b", boot_id="boot-1"),
        now=T0 + 100,
        reason="Rebooting",
    )
    late = T0 + 2000  # long past the threshold
    assert trouble_of(book, Readiness("True", T0 + 900, "boot-2"), STUCK, late) == (None, 0.0)
    same_boot = Readiness("True", T0, "boot-1")  # Ready, but never went down
    assert trouble_of(book, same_boot, STUCK, late) == (Trouble.REBOOT_LOST, T0 + 100)


def test_a_not_ready_node_is_trouble_from_when_it_went_so_unless_powered_off() -> None:
    book = running_book()
    assert trouble_of(book, READY, STUCK, T0 + 60) == (None, 0.0)
    assert trouble_of(book, DOWN, STUCK, T0 + 60) == (Trouble.NOT_READY, T0 + 50)
    book.note(now=T0 + 70, powered_on=False)  # spec.online false: meant to be down
    assert trouble_of(book, DOWN, STUCK, T0 + 80) == (None, 0.0)


def test_what_holds_a_host_from_a_power_cycle() -> None:
    book = running_book()
    assert blocked_by(book, deleting=False) == ""
    assert blocked_by(book, deleting=True) == "being deleted"
    book.fail(ErrorType.POWER_MANAGEMENT, "BMC gone", now=T0 + 3, reason="PowerFailed")
    assert blocked_by(book, deleting=False).startswith("in error (power management error")
    book.transition(now=T0 + 4, reason="Detached", status=OperationalStatus.DETACHED)
    assert blocked_by(book, deleting=False) == "detached"
    book.move(P.DEPROVISIONING, now=T0 + 5, reason="Deprovisioning")
    assert blocked_by(book, deleting=False) == "not provisioned (deprovisioning)"


def test_a_held_pool_is_told_once_and_a_return_after_attempts_is_recorded() -> None:
    book = running_book()
    held = Verdict(Action.HELD, "3 of the pool's 5 machines are unhealthy")
    settle(book, held, Trouble.NOT_READY, T0 + 50, T0 + 400)
    settle(book, held, Trouble.NOT_READY, T0 + 50, T0 + 410)
    notices = [e for e in book.journal.since(0)[0] if isinstance(e, Notice)]
    assert [n.reason for n in notices] == ["RemediationHeld"]
    shown = book.facts.remediation
    assert shown == Remediation("NotReady", T0 + 50, 0, None, "Held", held.why)

    book.note(now=T0 + 500, remediation=Remediation("NotReady", T0 + 50, 2, T0 + 480))
    settle(book, Verdict(Action.HEALTHY, ""), None, 0.0, T0 + 520)
    assert book.facts.remediation is None
    last = book.history[-1]
    assert (last.reason, last.message) == (
        "Remediated",
        "the Node is Ready again after being power-cycled 2 times (NotReady)",
    )


def test_the_attempts_made_survive_a_restart() -> None:
    book = running_book()
    made = Remediation("RebootLost", T0 + 100.25, 2, T0 + 900.5, "Wait", "next in 10m0s")
    book.note(now=T0 + 901, remediation=made)
    status = hoststate_status(book, STUCK, T0 + 902)
    assert status["remediation"]["attempts"] == 2
    again = restore("metal/host-0", None, status, now=T0 + 1000)
    assert again.facts.remediation == made
