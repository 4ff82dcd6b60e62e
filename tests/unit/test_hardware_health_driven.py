"""A driven machine's hardware health, as its backend reads it from the BMC: noted in the
book (the HardwareHealthy condition), told as an Event when it goes bad and comes back,
read again while the host rests; and what Ironic's ``health`` field means, read by the
Ironic provisioner (the real Ironic's side is in tests/ironic/test_redfish.py)."""

from __future__ import annotations

from state_controller.api.hardware import Health
from state_controller.api.states import ProvisioningState as S
from state_controller.books.book import Book
from state_controller.books.journal import Notice
from state_controller.provisioning.fault_plan import Fault, FaultPlan, health_faults
from state_controller.provisioning.ironic.health import SOURCE, node_fields, node_health
from state_controller.provisioning.machine import HostMachine
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from testbed.clocks import Clock
from tests.unit.test_state_machine import Stepped, host_input, with_image

KEY = "ns/h"
TROUBLE = 30.0  # seconds the fault's part is bad
EVERY = 5.0  # seconds between health reads of a resting host


def healthy(book: Book) -> tuple[str, str, str]:
    """The HardwareHealthy condition as the HostState shows it now."""
    condition = book.stamped_conditions()["HardwareHealthy"][0]
    return condition.status, condition.reason, condition.message


def told(book: Book) -> list[tuple[str, str, str]]:
    return [
        (e.type, e.reason, e.message)
        for e in book.journal.since(0)[0]
        if isinstance(e, Notice) and e.reason.startswith("Hardware")
    ]


def test_a_failing_part_is_read_at_rest_told_and_shown_until_it_is_replaced() -> None:
    clock = Clock(1000.0)
    plan = FaultPlan({KEY: [Fault("health", times=1, seconds=TROUBLE)]})
    sim = SimulatedProvisioner(timings=Timings(), faults=plan, clock=clock, health_every=EVERY)
    book = Book(KEY, now=clock())
    host = Stepped(HostMachine(sim), book)

    decision = host.step(host_input(with_image()), clock())
    assert book.cursor.state == S.PROVISIONED
    # deployed: the module goes bad, and the resting host is read again EVERY seconds
    health = book.facts.health
    assert health is not None and health.health is Health.WARNING, health
    assert decision.requeue_after == EVERY
    assert healthy(book)[:2] == ("False", "Warning")

    clock.advance(TROUBLE / 2)
    host.step(host_input(with_image()), clock())
    health = book.facts.health
    assert health is not None and health.health is Health.CRITICAL
    status, reason, message = healthy(book)
    assert (status, reason) == ("False", "CriticalError")
    assert "DIMM A2 failed" in message and "as the simulated BMC says" in message

    clock.advance(TROUBLE)
    decision = host.step(host_input(with_image()), clock())
    assert healthy(book)[:2] == ("True", "Healthy")
    assert decision.requeue_after == EVERY  # it still reports: still watched
    assert [(t, r) for t, r, _ in told(book)] == [
        ("Warning", "HardwareUnhealthy"),
        ("Warning", "HardwareUnhealthy"),
        ("Normal", "HardwareHealthy"),
    ]
    assert "Critical (was Warning)" in told(book)[1][2]


def test_a_machine_whose_bmc_reports_no_health_is_not_watched() -> None:
    clock = Clock(1000.0)
    sim = SimulatedProvisioner(timings=Timings(), clock=clock, health_every=EVERY)
    book = Book(KEY, now=clock())
    decision = Stepped(HostMachine(sim), book).step(host_input(with_image()), clock())
    assert book.cursor.state == S.PROVISIONED
    assert book.facts.health is None and "HardwareHealthy" not in book.stamped_conditions()
    assert decision.requeue_after is None  # at rest: nothing to read again


def test_health_faults_are_drawn_apart_and_recover_as_asked() -> None:
    keys = [f"demo/host-{i:04}" for i in range(50)]
    faults = health_faults(keys, 0.3, seed=1, seconds=20.0)
    assert len(faults) == 2 and all(f.kind == "health" and f.times == 1 for f in faults.values())
    assert health_faults(keys, 0.3, seed=1, seconds=20.0) == faults  # reproducible
    never = health_faults(keys, 0.3, seed=1, seconds=20.0, recovers=False)
    assert all(f.times is None for f in never.values())
    assert health_faults(keys, 0.0, seed=1, seconds=20.0) == {}
    # a health fault fails no attempt: registration still succeeds
    plan = FaultPlan({KEY: [Fault("health")]})
    assert plan.take(KEY, "register") is None and plan.health(KEY) == Fault("health")


def test_ironic_health_is_read_where_the_api_has_it_and_never_made_up() -> None:
    new, old = (1, 115), (1, 108)
    assert node_health({"health": "Critical"}, new).health is Health.CRITICAL
    assert node_health({"health": "Warning"}, new).health is Health.WARNING
    ok = node_health({"health": "OK"}, new)
    assert (ok.health, ok.source) == (Health.OK, SOURCE)
    unread = node_health({"health": None}, new)
    assert unread.health is Health.UNKNOWN and "read no health" in unread.message
    assert node_health({"health": "Degraded"}, new).health is Health.UNKNOWN
    older = node_health({}, old)
    assert older.health is Health.UNKNOWN and "API 1.108" in older.message
    # an older Ironic refuses a field it does not know: not asked for there
    assert node_fields("uuid,name", new) == "uuid,name,health"
    assert node_fields("uuid,name", old) == "uuid,name"
