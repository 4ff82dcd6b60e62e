"""The simulated machines kept in sqlite: written when a machine changes, read back as left."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from state_controller.provisioning.hardware_file import HardwareFile, MachineRecord
from state_controller.provisioning.results import Outcome
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from state_controller.provisioning.simulated_machines import Machine
from tests.ironic.helpers import view_of


def test_a_busy_machine_is_written_when_it_changes_not_at_every_poll(tmp_path: Path) -> None:
    kept = HardwareFile(tmp_path / "machines.db")
    sim = SimulatedProvisioner(timings=Timings(inspect=30.0), hardware=kept)
    host = view_of("metal", 0)
    assert sim.register(host, credentials_changed=False).done
    assert not sim.inspect(host, restart=True).done  # 30 s of inspection begin
    written = kept.rows_written
    for _ in range(20):
        assert not sim.inspect(host, restart=False).done  # polled
    assert kept.rows_written == written
    kept.close()

    again = SimulatedProvisioner(hardware=HardwareFile(tmp_path / "machines.db"))
    machine = again.machine(host.bmc_address)
    assert machine.busy is not None and machine.busy[0] == "inspect"
    assert 25.0 < machine.busy[1] - again.clock() <= 30.0  # the same end, across processes
    assert machine.started["inspect"] == 1 and machine.node_id


def test_a_new_owner_that_asks_to_start_work_already_under_way_joins_it(tmp_path: Path) -> None:
    """A replica killed after the backend accepted ``inspect`` but before the Host's
    status said ``inspecting``: its host's new owner, still in ``registering``, asks
    for an inspection from the start. The machine is inspecting, so it answers busy,
    as Ironic answers a node in ``inspect wait``; the first inspection goes on."""
    kept = HardwareFile(tmp_path / "machines.db")
    sim = SimulatedProvisioner(timings=Timings(inspect=30.0), hardware=kept)
    host = view_of("metal", 0)
    assert sim.register(host, credentials_changed=False).done
    assert not sim.inspect(host, restart=True).done  # begun; then the kill
    kept.close()

    again = SimulatedProvisioner(
        timings=Timings(inspect=30.0), hardware=HardwareFile(tmp_path / "machines.db")
    )
    answer = again.inspect(host, restart=True)
    assert not answer.done and 25.0 < answer.delay <= 30.0
    assert again.machine(host.bmc_address).started["inspect"] == 1


def test_an_operation_the_machine_has_moved_past_answers_done_after_a_restart(
    tmp_path: Path,
) -> None:
    """A controller killed after the backend accepted ``provision`` but before its own
    status left ``preparing`` asks ``prepare`` again when it comes back: the machine,
    kept in the file, has moved on and must neither prepare nor provision twice."""
    kept = HardwareFile(tmp_path / "machines.db")
    sim = SimulatedProvisioner(timings=Timings(provision=30.0), hardware=kept)
    host = view_of("metal", 0)
    assert sim.register(host, credentials_changed=False).done
    assert sim.inspect(host, restart=False).done
    assert sim.prepare(host).done
    assert not sim.provision(host).done  # 30 s of deployment begin; then the kill
    kept.close()

    again = SimulatedProvisioner(
        timings=Timings(provision=30.0), hardware=HardwareFile(tmp_path / "machines.db")
    )
    assert again.inspect(host, restart=False).done  # the book, replayed from the start
    assert again.prepare(host).done
    assert not again.provision(host).done  # still the first deployment
    machine = again.machine(host.bmc_address)
    assert machine.started["prepare"] == 1 and machine.started["provision"] == 1
    assert machine.started["inspect"] == 1


def test_a_new_owner_that_registers_again_neither_redoes_nor_cuts_off_the_work(
    tmp_path: Path,
) -> None:
    """A replica killed after its backend registered a machine and began inspecting it,
    before any status said so: the replica taking the host over registers it again with
    the credentials as new. The backend sends them to the node it has (no second
    enrollment), refuses while the inspection runs, as Ironic answers 409, and the
    inspection asked for after is the first one, done."""
    clock = [0.0]
    timings = Timings(register=1.0, inspect=30.0)
    kept = HardwareFile(tmp_path / "machines.db")
    first = SimulatedProvisioner(timings=timings, hardware=kept, clock=lambda: clock[0])
    host = view_of("metal", 0)
    assert not first.register(host, credentials_changed=True).done
    clock[0] = 1.0
    assert first.register(host, credentials_changed=True).done
    assert not first.inspect(host, restart=False).done  # 30 s of inspection; then the kill
    kept.close()

    after = SimulatedProvisioner(
        timings=timings, hardware=HardwareFile(tmp_path / "machines.db"), clock=lambda: clock[0]
    )
    clock[0] = 11.0
    refused = after.register(host, credentials_changed=True)
    # (each process maps its clock to the wall's when it starts: here 1 s apart)
    assert refused.outcome is Outcome.RETRY_AFTER and 19.0 < refused.delay <= 21.0
    clock[0] = 33.0  # the inspection ended while nobody asked
    assert after.register(host, credentials_changed=True).done
    assert after.inspect(host, restart=False).done
    machine = after.machine(host.bmc_address)
    assert machine.started["register"] == 1 and machine.started["inspect"] == 1


def test_an_earlier_operation_is_started_again_once_the_machine_went_back() -> None:
    """After deprovisioning, the machine is no longer past ``prepare``: a new
    deployment prepares it again."""
    sim = SimulatedProvisioner()
    host = view_of("metal", 0)
    assert sim.register(host, credentials_changed=False).done
    for step in (sim.prepare, sim.provision, sim.deprovision, sim.prepare):
        assert step(host).done
    assert sim.machine(host.bmc_address).started["prepare"] == 2


def test_two_backends_on_one_file_share_each_machine_as_one_ironic_would(
    tmp_path: Path,
) -> None:
    """Two replicas sharing the file: the second is asked about a host the first began to
    deploy (the host moved to it) and carries on with that deployment, not a new one."""
    path = tmp_path / "machines.db"
    first = SimulatedProvisioner(timings=Timings(provision=30.0), hardware=HardwareFile(path))
    second = SimulatedProvisioner(timings=Timings(provision=30.0), hardware=HardwareFile(path))
    host = view_of("metal", 0)
    assert second.machines() == {}  # started before the first knew any machine
    registered = first.register(host, credentials_changed=False)
    assert first.inspect(host, restart=False).done and first.prepare(host).done
    assert not first.provision(host).done  # 30 s of deployment begin; then the host moves

    again = second.register(host, credentials_changed=False)
    assert again.done and again.provider_id == registered.provider_id
    assert second.prepare(host).done  # the machine has moved on past it
    answer = second.provision(host)
    assert not answer.done and 25.0 < answer.delay <= 30.0  # the same deployment's end
    machine = second.machine(host.bmc_address)
    assert machine.started == {"register": 1, "inspect": 1, "prepare": 1, "provision": 1}
    assert first.machine(host.bmc_address).busy is not None

    second.reboot(host)  # what either one does, the other sees
    assert first.machine(host.bmc_address).reboots == ["hard"]


def test_a_refusal_written_in_the_file_is_an_outage_of_every_backend_on_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "machines.db"
    backends = [SimulatedProvisioner(hardware=HardwareFile(path)) for _ in range(2)]
    host = view_of("metal", 0)
    assert backends[0].register(host, credentials_changed=False).done
    operator = HardwareFile(path)  # a test or a soak run, in a process of its own
    operator.refuse(60.0, "switched off for a test")
    for backend in backends:
        answer = backend.power(host, on=True)
        assert answer.outcome is Outcome.TRANSIENT and not answer.held
        assert answer.message == "the simulated backend is unavailable: switched off for a test"
    assert backends[1].machine(host.bmc_address).powered_on is False  # nothing was done
    operator.refuse(0)
    assert all(backend.power(host, on=True).done for backend in backends)


def test_a_machine_is_kept_whole_but_its_firmware() -> None:
    """The file keeps every field of a machine but its firmware, by the record's names:
    a field added to the machine and not to the record (or the other way) fails here."""
    kept = {f.name for f in fields(MachineRecord)}
    assert {f.name for f in fields(Machine)} == kept | {"lazy_firmware"}
    machine = Machine("redfish://10.0.0.1", powered_on=True, node_id="n", busy=("inspect", 5.0))
    machine.started["inspect"] += 1
    machine.reboots.append("soft")
    machine.registered_with["architecture"] = "x86_64"
    record = machine.kept(to_wall=100.0)
    assert record.busy == ("inspect", 105.0) and record.started == {"inspect": 1}
    again = Machine(machine.address)
    again.take(record, now=0.0, to_wall=100.0)
    again.reboots.append("hard")  # the record is not changed through the machine
    assert record.reboots == ("soft",)
    again.reboots.pop()
    assert again == machine
