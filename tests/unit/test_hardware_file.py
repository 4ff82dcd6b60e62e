"""The simulated machines kept in sqlite: written when a machine changes, read back as left."""

from __future__ import annotations

from pathlib import Path

from state_controller.provisioning.hardware_file import HardwareFile
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
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
