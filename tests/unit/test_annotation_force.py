"""The ``force`` option of baremetal-operator's reboot and detached annotations on a Host.

baremetal-operator v0.13.2 (apis/metal3.io/v1alpha1/baremetalhost_types.go:
``RebootAnnotationArguments{mode, force}``, ``DetachedAnnotationArguments{deleteAction,
force}``; internal/controller/metal3.io/host_state_machine.go ``checkDetachedHost``):
a host is detached only in provisioned, externally provisioned, ready or available
unless ``force`` is true, the operation under way finishing first. A forced reboot is
read here and carried out in tests/unit/test_forced_reboot.py.
"""

from __future__ import annotations

from state_controller.api import annotations as ann
from state_controller.api.states import OperationalStatus
from state_controller.api.states import ProvisioningState as S
from state_controller.books.book import Book
from state_controller.provisioning.machine import HostMachine
from state_controller.provisioning.power_requests import (
    annotation_problems,
    detach_asked,
    power_requests,
)
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from testbed.clocks import Clock
from tests.unit.test_state_machine import ADDRESS, host_input, with_image


def test_force_is_read_from_either_annotation() -> None:
    assert detach_asked({ann.DETACHED: '{"deleteAction": "delay", "force": true}'}) == (
        "delay",
        True,
        "",
    )
    assert detach_asked({ann.DETACHED: '{"force": false}'}) == ("delete", False, "")
    assert detach_asked({ann.DETACHED: ""}) == ("delete", False, "")
    _, _, problem = detach_asked({ann.DETACHED: '{"force": "yes"}'})
    assert problem.startswith(f"annotation {ann.DETACHED}: the value must be empty or ")
    asks = power_requests({"reboot.metal3.io": '{"mode": "hard", "force": true}'})
    assert (asks.reboot, asks.forced) == ("hard", ("reboot.metal3.io",))
    assert asks.problems == {}  # understood, and carried out (.forced_reboot)
    assert power_requests({"reboot.metal3.io/remediation": '{"force": false}'}).forced == ()
    assert annotation_problems({"reboot.metal3.io": '{"mode": "soft", "force": false}'}) == {}


def _inspecting(clock: Clock) -> tuple[SimulatedProvisioner, HostMachine, Book]:
    sim = SimulatedProvisioner(timings=Timings(inspect=60), clock=clock)
    machine, book = HostMachine(sim), Book("ns/h", now=clock())
    machine.step(book, host_input(with_image()), clock())
    assert book.cursor.state == S.INSPECTING
    return sim, machine, book


def test_a_host_mid_inspection_is_detached_once_it_ends_unless_forced() -> None:
    clock = Clock()
    sim, machine, book = _inspecting(clock)
    asked = host_input(with_image(), annotations={ann.DETACHED: ""})
    for _ in range(3):
        clock.advance(5)
        machine.step(book, asked, clock())
    assert book.cursor.state == S.INSPECTING
    assert book.cursor.operational_status == OperationalStatus.OK
    told = [n for n in book.journal.since(0)[0] if getattr(n, "reason", "") == "DetachWaiting"]
    assert len(told) == 1  # once, not on every poll
    assert 'write {"force": true} in the hoststate.io/detached annotation' in told[0].message
    assert sim.machine(ADDRESS).node_id != ""
    clock.advance(60)  # the inspection ends: the host comes to rest, then is detached
    for _ in range(5):
        machine.step(book, asked, clock())
        clock.advance(1)
    assert book.cursor.operational_status == OperationalStatus.DETACHED
    assert sim.machine(ADDRESS).node_id == ""


def test_force_detaches_a_host_mid_inspection() -> None:
    clock = Clock()
    sim, machine, book = _inspecting(clock)
    clock.advance(5)
    forced = host_input(with_image(), annotations={ann.DETACHED: '{"force": true}'})
    machine.step(book, forced, clock())
    assert book.cursor.state == S.INSPECTING
    assert book.cursor.operational_status == OperationalStatus.DETACHED
    assert sim.machine(ADDRESS).node_id == ""
