"""``"force": true`` in a reboot annotation restarts the deploy ramdisk an inspection or a
deploy waits on, and that work starts over (baremetal-operator v0.13.2:
internal/controller/metal3.io/baremetalhost_controller.go ``actionInspecting`` and
``actionProvisioning`` with ``hasRebootAnnotation(info, true)``); on the simulated
backend the whole of a busy inspection or deploy is the ramdisk's wait. And, as there, a
soft reboot after a failed power action is made hard."""

from __future__ import annotations

import pytest

from state_controller.api import annotations as ann
from state_controller.api.states import ErrorType
from state_controller.api.states import ProvisioningState as S
from state_controller.books.book import Book
from state_controller.provisioning.fault_plan import Fault, FaultPlan
from state_controller.provisioning.machine import HostMachine
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from testbed.clocks import Clock
from tests.unit.test_state_machine import ADDRESS, host_input, with_image

FORCED = {"reboot.metal3.io": '{"mode": "hard", "force": true}', ann.REBOOT: ""}


def _busy(clock: Clock, state: S) -> tuple[SimulatedProvisioner, HostMachine, Book]:
    """A host 5 seconds into a 60-second inspection, or deploy."""
    sim = SimulatedProvisioner(timings=Timings(inspect=60, provision=60), clock=clock)
    machine, book = HostMachine(sim), Book("ns/h", now=clock())
    while book.cursor.state != state:
        machine.step(book, host_input(with_image()), clock())
        clock.advance(61 if book.cursor.state != state else 0)
    clock.advance(5)
    return sim, machine, book


def _restarts(book: Book) -> list[str]:
    told = book.journal.since(0)[0]
    return [n.message for n in told if getattr(n, "reason", "") == "RamdiskRestarted"]


@pytest.mark.parametrize(
    ("state", "operation"), [(S.INSPECTING, "inspect"), (S.PROVISIONING, "provision")]
)
def test_a_forced_reboot_starts_the_work_waiting_on_the_ramdisk_over(
    state: S, operation: str
) -> None:
    clock = Clock()
    sim, machine, book = _busy(clock, state)
    assert sim.machine(ADDRESS).started[operation] == 1
    decision = machine.step(book, host_input(with_image(), annotations=FORCED), clock())
    assert book.cursor.state == state
    assert sim.machine(ADDRESS).started[operation] == 2
    assert decision.remove_annotations == {"reboot.metal3.io", ann.REBOOT}
    [message] = _restarts(book)
    assert message.startswith(f"the {'inspection' if state == S.INSPECTING else 'deploy'} ")
    assert "reboot.metal3.io asked" in message
    clock.advance(58)  # past the first run's end, not the restarted one's
    machine.step(book, host_input(with_image()), clock())
    assert book.cursor.state == state
    clock.advance(3)
    machine.step(book, host_input(with_image()), clock())
    assert book.cursor.state != state  # done 60 seconds after the restart


def test_a_reboot_without_force_waits_for_the_host_at_rest() -> None:
    clock = Clock()
    sim, machine, book = _busy(clock, S.INSPECTING)
    decision = machine.step(book, host_input(with_image(), annotations={ann.REBOOT: ""}), clock())
    assert sim.machine(ADDRESS).started["inspect"] == 1
    assert decision.remove_annotations == set()
    assert _restarts(book) == []


def test_a_forced_hold_off_is_answered_and_a_plain_one_stays() -> None:
    clock = Clock()
    _, machine, book = _busy(clock, S.PROVISIONING)
    keyed = {"reboot.metal3.io/a": '{"force": true}', "reboot.metal3.io/b": ""}
    decision = machine.step(book, host_input(with_image(), annotations=keyed), clock())
    assert decision.remove_annotations == {"reboot.metal3.io/a"}


def test_a_soft_reboot_after_a_failed_power_action_is_hard() -> None:
    """As baremetal-operator v0.13.2 (``manageHostPower`` hands ``PowerOff`` the force of a
    PowerManagementError): an OS that did not answer is not asked again."""
    plan = FaultPlan({"ns/h": [Fault("power", times=1)]})
    sim = SimulatedProvisioner(faults=plan)
    machine, book = HostMachine(sim), Book("ns/h", now=0)
    machine.step(book, host_input(with_image(online=True)), 1)
    assert book.cursor.state == S.PROVISIONED and book.facts.powered_on
    soft = host_input(with_image(online=True), annotations={"reboot.metal3.io": ""})
    decision = machine.step(book, soft, 2)
    assert book.cursor.error_type == ErrorType.POWER_MANAGEMENT
    assert decision.requeue_after is not None and sim.machine(ADDRESS).reboots == []
    decision = machine.step(book, soft, 2 + decision.requeue_after)
    assert sim.machine(ADDRESS).reboots == ["hard"]
    assert decision.remove_annotations == {"reboot.metal3.io"}
    assert book.history[-1].message == "rebooted (hard) as reboot.metal3.io asked"
