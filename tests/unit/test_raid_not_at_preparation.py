"""A Host's ``spec.raid`` is not built at preparation, where baremetal-operator v0.13.2
builds it (``actionPreparing``, internal/controller/metal3.io/baremetalhost_controller.go):
it reaches the machine only by servicing, as ``spec.servicingPolicy`` allows, and with no
policy the HostState says it is not applied (docs/servicing.md, Not yet)."""

from __future__ import annotations

from state_controller.api.servicing import ServiceStep
from state_controller.api.states import ProvisioningState as S
from state_controller.books.book import Book
from state_controller.provisioning.machine import HostMachine
from state_controller.provisioning.simulated import SimulatedProvisioner
from testbed.clocks import Clock
from tests.unit.test_state_machine import ADDRESS, host_input, with_image

MIRROR = {"softwareRAIDVolumes": [{"level": "1"}]}


def test_raid_without_a_servicing_policy_is_not_built_and_says_so() -> None:
    clock = Clock()
    sim = SimulatedProvisioner(clock=clock)
    machine, book = HostMachine(sim), Book("ns/h", now=clock())
    for _ in range(3):
        machine.step(book, host_input(with_image(raid=MIRROR)), clock())
    assert book.cursor.state == S.PROVISIONED
    assert sim.machine(ADDRESS).firmware.volumes == []  # preparation built nothing
    assert book.service.step == ServiceStep.PENDING
    assert book.service.message.startswith("spec.servicingPolicy is not set: not applied")
    assert "set it to onReboot or rolling" in book.service.message
