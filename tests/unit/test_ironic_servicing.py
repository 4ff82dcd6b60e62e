"""Servicing's requests to Ironic, as written: software RAID is the agent RAID interface's
one in-band step (delete and build in one), refused before the request where Ironic could
not run it; hardware RAID deletes, then builds."""

from __future__ import annotations

from typing import Any

from state_controller.api.host import HostSpec
from state_controller.provisioning.ironic.servicing import service_steps, software_raid_refusal
from state_controller.servicing.plan import plan_for

BMC = {"address": "redfish://192.0.2.1/redfish/v1/Systems/1", "credentialsName": "bmc"}


def spec(**fields: Any) -> HostSpec:
    return HostSpec.model_validate({"bmc": BMC, "servicingPolicy": "rolling", **fields})


def node(raid_interface: str) -> dict[str, Any]:
    return {"uuid": "u-1", "name": "host-1", "raid_interface": raid_interface}


def test_software_volumes_are_one_in_band_step_with_disks_by_their_hints() -> None:
    disks = [{"deviceName": "/dev/sda"}, {"serialNumber": "S2", "minSizeGigabytes": 100}]
    plan = plan_for(
        spec(
            raid={
                "softwareRAIDVolumes": [
                    {"level": "1", "physicalDisks": disks},
                    {"level": "1+0", "sizeGibibytes": 20},
                ]
            }
        )
    )
    assert plan.labels == ("configuring RAID: 2 software volumes",)
    [step] = service_steps(plan)
    assert (step["interface"], step["step"], step["args"]["delete_existing"]) == (
        "raid",
        "apply_configuration",
        True,
    )
    assert step["args"]["raid_config"]["logical_disks"] == [
        {
            "controller": "software",
            "size_gb": "MAX",
            "raid_level": "1",
            "physical_disks": [{"name": "/dev/sda"}, {"serial": "S2", "size": ">= 100"}],
        },
        {"controller": "software", "size_gb": 20, "raid_level": "1+0"},
    ]


def test_hardware_volumes_are_deleted_then_built_out_of_band() -> None:
    plan = plan_for(spec(raid={"hardwareRAIDVolumes": [{"level": "5", "name": "data"}]}))
    steps = service_steps(plan)
    assert [s["step"] for s in steps] == ["delete_configuration", "apply_configuration"]
    [disk] = steps[1]["args"]["raid_config"]["logical_disks"]
    assert disk == {"size_gb": "MAX", "raid_level": "5", "is_root_volume": True,
                    "volume_name": "data"}  # fmt: skip


def test_software_raid_is_refused_without_the_agent_interface_or_with_nothing_to_build() -> None:
    wanted = plan_for(spec(raid={"softwareRAIDVolumes": [{"level": "1"}]}))
    refusal = software_raid_refusal(node("redfish"), wanted)
    assert refusal is not None
    assert refusal.startswith("spec.raid.softwareRAIDVolumes: software RAID needs")
    assert "node host-1 has 'redfish'; set raid_interface: agent" in refusal
    assert software_raid_refusal(node("agent"), wanted) is None
    nothing = plan_for(spec(raid={"softwareRAIDVolumes": []}))
    assert "name the volumes to build" in (software_raid_refusal(node("agent"), nothing) or "")
    hardware = plan_for(spec(raid={"hardwareRAIDVolumes": [{"level": "1"}]}))
    assert software_raid_refusal(node("redfish"), hardware) is None


def test_the_kinds_of_raid_digest_differently_and_a_plan_without_raid_has_no_raid_task() -> None:
    empty_software = plan_for(spec(raid={"softwareRAIDVolumes": []}))
    empty_hardware = plan_for(spec(raid={"hardwareRAIDVolumes": []}))
    assert empty_software.labels == empty_hardware.labels == ("configuring RAID: none",)
    assert empty_software.digest != empty_hardware.digest
    assert plan_for(spec(raid={})).tasks == ()
