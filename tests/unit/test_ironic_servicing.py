"""Servicing's requests to Ironic, as written: software RAID is the agent RAID interface's
one in-band step (delete and build in one), refused before the request where Ironic could
not run it; hardware RAID deletes, then builds; a failed run is told by the step that failed, never
by what a server answered."""

from __future__ import annotations

from typing import Any, cast

from state_controller.api.host import HostSpec
from state_controller.provisioning.ironic.faults import NOT_SHOWN
from state_controller.provisioning.ironic.servicing import (
    FIRMWARE_FAILED,
    service,
    service_failure,
    service_steps,
    software_raid_refusal,
)
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


def test_a_failed_firmware_update_reads_the_same_whatever_the_url_answered() -> None:
    """The URL is the Host author's: whether its server refused, timed out or served a
    page must not show in what they read (it would make Ironic a port scanner)."""
    plan = plan_for(spec(firmwareUpdates=[{"component": "bios", "url": "http://10.1.2.3/b.bin"}]))
    step = "{'interface': 'firmware', 'step': 'update', 'args': {}, 'priority': 0}"
    told: set[str] = set()
    for answer in (
        "Connection refused",
        "timed out",
        "No route to host",
        "401 Unauthorized",
        "HTTP 404 Not Found <title>internal admin</title>",
        "checksum mismatch",
    ):
        for last_error in (
            f"Firmware update failed for node u-1, firmware http://10.1.2.3/b.bin. Error: {answer}",
            f"Node u-1 failed step {step}: {answer}",
        ):
            failed = {"uuid": "u-1", "name": "host-1", "provision_state": "service failed",
                      "last_error": last_error}  # fmt: skip
            result = service(cast(Any, None), failed, plan, cast(Any, None), started=True, poll=1)
            assert result.details == last_error  # for the operator's log
            told.add(result.message)
    assert told == {FIRMWARE_FAILED}


def test_a_service_failure_is_told_by_ironics_frame_not_by_what_follows() -> None:
    settings = "Node u-1 failed step {'interface': 'bios', 'step': 'apply_configuration'}: x"
    assert "spec.firmwareSettings" in service_failure(settings)
    # a remote server's answer that quotes a frame chooses nothing
    quoted = "Unexpected error: the server said failed step {'interface': 'bios'"
    assert service_failure(quoted) == NOT_SHOWN
    assert service_failure("") == "Ironic gave no reason"
