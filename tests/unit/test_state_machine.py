"""The state machine against the simulated provisioner, without any cluster."""

from __future__ import annotations

from typing import Any

import pytest

from state_controller.api import annotations as ann
from state_controller.api.states import ErrorType, OperationalStatus
from state_controller.api.states import ProvisioningState as S
from state_controller.books.book import Book
from state_controller.provisioning.fault_plan import Fault, FaultPlan
from state_controller.provisioning.inputs import HostInput
from state_controller.provisioning.machine import (
    DELETION,
    LIFECYCLE,
    Decision,
    HostMachine,
    RetryWindow,
)
from state_controller.provisioning.provisioner import Credentials
from state_controller.provisioning.results import Result, retry_after, transient
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from state_controller.runtime.hosts.inputs import parse_spec
from testbed.clocks import Clock

IMAGE = {"url": "http://img.example/os.qcow2", "checksum": "abc123" * 10 + "abcd"}  # 64 hex digits
ADDRESS = "ipmi://bmc-1.example:623"


def host_input(
    spec: dict[str, Any] | None = None,
    *,
    annotations: dict[str, str] | None = None,
    deleting: bool = False,
    creds: bool = True,
    generation: int = 1,
) -> HostInput:
    raw = spec if spec is not None else {"bmc": {"address": ADDRESS, "credentialsName": "c"}}
    parsed, problem = parse_spec(raw)
    return HostInput(
        namespace="ns",
        name="h",
        generation=generation,
        spec=parsed,
        spec_problem=problem,
        annotations=annotations or {},
        deleting=deleting,
        credentials=Credentials("admin", "s3cret") if creds else None,
        credentials_version=("c", "1") if creds else None,
        credentials_problem=None if creds else 'Secret "c" not found',
    )


def with_image(**extra: Any) -> dict[str, Any]:
    return {"bmc": {"address": ADDRESS, "credentialsName": "c"}, "image": IMAGE, **extra}


class Stepped:
    """One host's book with the retry window the runtime keeps beside it between steps."""

    def __init__(self, machine: HostMachine, book: Book) -> None:
        self.machine, self.book = machine, book
        self.retry: RetryWindow | None = None

    def step(self, inp: HostInput, now: float) -> Decision:
        decision = self.machine.step(self.book, inp, now, self.retry)
        self.retry = decision.retry
        return decision


def drive(machine: HostMachine, book: Book, inp: HostInput, clock: Clock, rounds: int = 30) -> None:
    """Step until the machine asks for nothing, advancing time to each requeue."""
    host = Stepped(machine, book)
    for _ in range(rounds):
        decision = host.step(inp, clock())
        if decision.requeue_after is None and not decision.rate_limited:
            return
        clock.advance(decision.requeue_after or 1.0)


def test_zero_latency_host_goes_to_provisioned_in_one_step() -> None:
    sim = SimulatedProvisioner()
    book = Book("ns/h", now=0)
    decision = HostMachine(sim).step(book, host_input(with_image(online=True)), 1.0)
    assert book.cursor.state == S.PROVISIONED
    assert [t.to_state for t in book.history if t.from_state != t.to_state] == [
        "registering", "inspecting", "preparing", "available", "provisioning", "provisioned",
    ]  # fmt: skip
    assert decision.requeue_after is None and not decision.rate_limited
    assert book.facts.hardware is not None and book.facts.provider_id
    assert sim.machine(ADDRESS).started["provision"] == 1
    assert sim.machine(ADDRESS).powered_on


def test_timed_operations_poll_without_restarting_work() -> None:
    clock = Clock()
    sim = SimulatedProvisioner(timings=Timings(inspect=5, provision=7), clock=clock)
    machine, book = HostMachine(sim), Book("ns/h", now=clock())
    inp = host_input(with_image())
    decision = machine.step(book, inp, clock())
    assert book.cursor.state == S.INSPECTING and decision.requeue_after == pytest.approx(5)
    clock.advance(2)
    machine.step(book, inp, clock())
    assert book.cursor.state == S.INSPECTING
    drive(machine, book, inp, clock)
    assert book.cursor.state == S.PROVISIONED  # type: ignore[comparison-overlap]
    m = sim.machine(ADDRESS)
    assert m.started["inspect"] == 1 and m.started["provision"] == 1


def test_registration_error_backs_off_and_recovers() -> None:
    clock = Clock()
    plan = FaultPlan({"ns/h": [Fault("credentials", times=2)]})
    sim = SimulatedProvisioner(faults=plan, clock=clock)
    machine, book = HostMachine(sim), Book("ns/h", now=clock())
    host = Stepped(machine, book)
    inp = host_input(with_image())
    delays: list[float] = []
    for attempt in (1, 2):
        decision = host.step(inp, clock())
        assert book.cursor.state == S.REGISTERING
        assert book.cursor.error_type == ErrorType.REGISTRATION
        assert "rejected user 'admin'" in book.cursor.error_message
        assert "s3cret" not in book.cursor.error_message
        assert decision.requeue_after is not None
        delays.append(decision.requeue_after)
        # woken before the backoff ends (its own status write, a resync): nothing is tried
        early = host.step(inp, clock() + delays[-1] / 2)
        assert book.cursor.error_count == attempt
        assert early.requeue_after == pytest.approx(delays[-1] / 2)
        clock.advance(delays[-1])
    assert delays[1] > delays[0]  # exponential
    host.step(inp, clock())
    assert book.cursor.state == S.PROVISIONED and book.cursor.error_count == 0


def test_a_fix_by_the_user_is_retried_before_the_backoff_ends() -> None:
    clock = Clock()
    plan = FaultPlan({"ns/h": [Fault("credentials", times=1)]})
    machine = HostMachine(SimulatedProvisioner(faults=plan, clock=clock))
    book = Book("ns/h", now=clock())
    host = Stepped(machine, book)
    failing = host_input(with_image())
    host.step(failing, clock())
    assert book.cursor.error_count == 1
    host.step(failing, clock() + 1)
    assert book.cursor.error_count == 1  # same inputs: waits
    fixed = HostInput(**{**vars(failing), "credentials_version": ("c", "2")})  # Secret edited
    host.step(fixed, clock() + 1)
    assert book.cursor.state == S.PROVISIONED and book.cursor.error_count == 0


def test_missing_credentials_hold_the_host_in_registering_with_the_reason() -> None:
    book = Book("ns/h", now=0)
    HostMachine(SimulatedProvisioner()).step(book, host_input(with_image(), creds=False), 1)
    assert book.cursor.state == S.REGISTERING
    assert book.cursor.error_type == ErrorType.REGISTRATION
    assert 'Secret "c" not found' in book.cursor.error_message


def test_invalid_spec_is_a_registration_error_naming_the_field() -> None:
    book = Book("ns/h", now=0)
    spec = with_image(onlin=True)
    HostMachine(SimulatedProvisioner()).step(book, host_input(spec), 1)
    assert book.cursor.state == S.REGISTERING
    assert "spec.onlin is not a known field; did you mean spec.online?" in book.cursor.error_message
    assert book.seen.spec_problem_reason == "UnknownField"


def test_unreachable_bmc_is_reported_with_the_address() -> None:
    book = Book("ns/h", now=0)
    spec = {"bmc": {"address": "ipmi://bmc.example.invalid", "credentialsName": "c"}}
    HostMachine(SimulatedProvisioner()).step(book, host_input(spec), 1)
    assert book.cursor.error_type == ErrorType.REGISTRATION
    assert "bmc.example.invalid:623 did not answer" in book.cursor.error_message


class Refusing(SimulatedProvisioner):
    """Refuses to start provisioning: the host must not move nor record anything."""

    answer: Result = transient("no free conductor")

    def provision(self, host: Any) -> Result:
        return self.answer


@pytest.mark.parametrize("answer", [transient("503 no free conductor"), retry_after(5, "locked")])
def test_refused_work_moves_nothing_and_records_nothing(answer: Result) -> None:
    sim = Refusing()
    sim.answer = answer
    book = Book("ns/h", now=0)
    decision = HostMachine(sim).step(book, host_input(with_image()), 1)
    assert book.cursor.state == S.AVAILABLE
    assert not any(t.to_state == "provisioning" for t in book.history)
    assert book.cursor.operational_status == OperationalStatus.OK
    if answer.outcome.value == "transient":
        assert decision.rate_limited and "no free conductor" in book.seen.transient
    else:
        assert decision.requeue_after == 5


def test_provisioning_failure_then_success() -> None:
    clock = Clock()
    plan = FaultPlan({"ns/h": [Fault("provisioning", times=1)]})
    machine, book = HostMachine(SimulatedProvisioner(faults=plan, clock=clock)), Book("ns/h", now=0)
    inp = host_input(with_image())
    decision = machine.step(book, inp, clock())
    assert book.cursor.error_type == ErrorType.PROVISIONING
    assert "checksum" in book.cursor.error_message
    # the backend's own words go to the operator's log (the reconciler's), not the status
    assert "Image checksum mismatch" not in book.cursor.error_message
    assert decision.backend_said == "Image checksum mismatch"
    drive(machine, book, inp, clock)
    assert book.cursor.state == S.PROVISIONED


def test_power_follows_spec_online_and_is_recorded() -> None:
    sim = SimulatedProvisioner()
    machine, book = HostMachine(sim), Book("ns/h", now=0)
    machine.step(book, host_input(with_image(online=True)), 1)
    assert book.facts.powered_on
    machine.step(book, host_input(with_image(online=False), generation=2), 2)
    assert not book.facts.powered_on and not sim.machine(ADDRESS).powered_on
    assert book.history[-1].reason == "PoweredOff"


def test_power_failure_is_a_power_management_error() -> None:
    plan = FaultPlan({"ns/h": [Fault("power", times=1)]})
    machine, book = HostMachine(SimulatedProvisioner(faults=plan)), Book("ns/h", now=0)
    inp = host_input({"bmc": {"address": ADDRESS, "credentialsName": "c"}, "online": True})
    decision = machine.step(book, inp, 1)
    assert book.cursor.state == S.AVAILABLE
    assert book.cursor.error_type == ErrorType.POWER_MANAGEMENT
    assert decision.requeue_after is not None
    machine.step(book, inp, 1 + decision.requeue_after)  # when the backoff ends
    assert book.cursor.error_type is None and book.facts.powered_on


def test_image_removed_deprovisions_back_to_available() -> None:
    sim = SimulatedProvisioner()
    machine, book = HostMachine(sim), Book("ns/h", now=0)
    machine.step(book, host_input(with_image()), 1)
    machine.step(book, host_input(generation=2), 2)
    assert book.cursor.state == S.AVAILABLE
    assert sim.machine(ADDRESS).disk_image is None
    assert book.facts.image is None


def test_deletion_deprovisions_powers_off_and_releases_the_finalizer() -> None:
    sim = SimulatedProvisioner()
    machine, book = HostMachine(sim), Book("ns/h", now=0)
    machine.step(book, host_input(with_image(online=True)), 1)
    decision = machine.step(book, host_input(with_image(online=True), deleting=True), 2)
    assert decision.remove_finalizer
    assert [t.to_state for t in book.history][-3:] == [
        "deprovisioning", "powering off before delete", "deleting",
    ]  # fmt: skip
    assert sim.machine(ADDRESS).node_id == "" and not sim.machine(ADDRESS).powered_on


def test_detached_host_is_forgotten_then_adopted_without_redeploy() -> None:
    sim = SimulatedProvisioner()
    machine, book = HostMachine(sim), Book("ns/h", now=0)
    machine.step(book, host_input(with_image(online=True)), 1)
    detached = host_input(with_image(online=True), annotations={ann.DETACHED: ""})
    machine.step(book, detached, 2)
    assert book.cursor.operational_status == OperationalStatus.DETACHED
    assert sim.machine(ADDRESS).node_id == "" and sim.machine(ADDRESS).disk_image is not None
    machine.step(book, host_input(with_image(online=True)), 3)
    assert book.cursor.state == S.PROVISIONED
    assert book.cursor.operational_status == OperationalStatus.OK  # type: ignore[comparison-overlap]
    assert sim.machine(ADDRESS).started["provision"] == 1  # adopted, not redeployed
    assert [t.reason for t in book.history][-2:] == ["Reattached", "Adopted"]


def test_deleting_a_detached_host_skips_deprovisioning() -> None:
    sim = SimulatedProvisioner()
    machine, book = HostMachine(sim), Book("ns/h", now=0)
    machine.step(book, host_input(with_image()), 1)
    decision = machine.step(
        book, host_input(with_image(), annotations={ann.DETACHED: ""}, deleting=True), 2
    )
    assert decision.remove_finalizer
    assert sim.machine(ADDRESS).started["deprovision"] == 0
    assert sim.machine(ADDRESS).disk_image is not None


def test_backend_database_lost_means_adoption() -> None:
    sim = SimulatedProvisioner()
    machine, book = HostMachine(sim), Book("ns/h", now=0)
    machine.step(book, host_input(with_image()), 1)
    sim.forget_all_nodes()
    machine.step(book, host_input(with_image()), 2)
    assert book.cursor.state == S.PROVISIONED
    assert book.history[-1].reason == "Adopted"
    assert sim.machine(ADDRESS).started["provision"] == 1


def test_externally_provisioned_host_is_never_deployed() -> None:
    sim = SimulatedProvisioner()
    book = Book("ns/h", now=0)
    HostMachine(sim).step(book, host_input(with_image(externallyProvisioned=True)), 1)
    assert book.cursor.state == S.EXTERNALLY_PROVISIONED
    assert sim.machine(ADDRESS).started["provision"] == 0


def test_inspection_disabled_uses_hardware_details_annotation() -> None:
    book = Book("ns/h", now=0)
    inp = host_input(with_image(), annotations={ann.INSPECT: "disabled"})
    inp = HostInput(**{**inp.__dict__, "hardware_details": {"ramMebibytes": 1024}})
    sim = SimulatedProvisioner()
    HostMachine(sim).step(book, inp, 1)
    assert book.cursor.state == S.PROVISIONED
    assert sim.machine(ADDRESS).started["inspect"] == 0
    assert book.facts.hardware == {"ramMebibytes": 1024}


def test_reinspection_on_request_then_annotation_removed() -> None:
    sim = SimulatedProvisioner()
    machine, book = HostMachine(sim), Book("ns/h", now=0)
    machine.step(book, host_input(), 1)
    assert book.cursor.state == S.AVAILABLE
    decision = machine.step(book, host_input(annotations={ann.INSPECT: ""}), 2)
    assert sim.machine(ADDRESS).started["inspect"] == 2
    assert ann.INSPECT in decision.remove_annotations
    assert book.cursor.state == S.AVAILABLE


def test_an_inspection_started_before_a_crash_is_not_run_again() -> None:
    """The controller died after the backend accepted the inspection and before the move
    to inspecting was written; the inspection ended while no controller ran. The book
    rebuilt from the status (registering) takes the finished inspection."""
    clock = Clock()
    sim = SimulatedProvisioner(timings=Timings(inspect=5), clock=clock)
    machine = HostMachine(sim)
    machine.step(Book("ns/h", now=clock()), host_input(with_image()), clock())
    assert sim.machine(ADDRESS).busy is not None  # inspecting; that book is lost
    clock.advance(6)
    book = Book("ns/h", now=clock())
    drive(machine, book, host_input(with_image()), clock)
    assert book.cursor.state == S.PROVISIONED
    assert sim.machine(ADDRESS).started["inspect"] == 1


def test_reboot_annotation_reboots_once() -> None:
    sim = SimulatedProvisioner()
    machine, book = HostMachine(sim), Book("ns/h", now=0)
    machine.step(book, host_input(with_image(online=True)), 1)
    decision = machine.step(
        book, host_input(with_image(online=True), annotations={ann.REBOOT: ""}), 2
    )
    assert ann.REBOOT in decision.remove_annotations
    assert book.history[-1].reason == "Rebooted"


def test_hanging_step_keeps_host_in_state_until_done() -> None:
    clock = Clock()
    plan = FaultPlan({"ns/h": [Fault("hang", times=1, operation="inspect", seconds=100)]})
    machine = HostMachine(SimulatedProvisioner(faults=plan, clock=clock))
    book = Book("ns/h", now=clock())
    decision = machine.step(book, host_input(with_image()), clock())
    assert book.cursor.state == S.INSPECTING and decision.requeue_after == pytest.approx(100)
    clock.advance(100)
    machine.step(book, host_input(with_image()), clock())
    assert book.cursor.state == S.PROVISIONED  # type: ignore[comparison-overlap]


def test_every_state_has_a_handler_in_both_tables() -> None:
    assert set(LIFECYCLE) == set(S) == set(DELETION)
    assert {s for s, h in LIFECYCLE.items() if not h.registered} == {S.NONE, S.UNMANAGED}
    assert {s for s, h in DELETION.items() if not h.registered} == {S.NONE, S.UNMANAGED, S.DELETING}
