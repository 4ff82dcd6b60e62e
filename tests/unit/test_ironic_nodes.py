"""What a Host's image becomes in an Ironic node's instance_info."""

from __future__ import annotations

from dataclasses import replace

import pytest

from state_controller.api.host_status import HardwareDetails
from state_controller.provisioning.ironic.faults import Answer
from state_controller.provisioning.ironic.nodes import (
    config_drive,
    custom_deploy_steps,
    deploy_patch,
    deployed_image,
    hardware_from_inventory,
    instance_info,
    new_node,
    unsupported_node_fields,
)
from state_controller.provisioning.provisioner import HostData
from tests.ironic.helpers import view_of

URL = "http://images.example/os.qcow2"
SHA256 = "ab" * 32


def test_a_checksum_file_url_goes_where_ironic_fetches_it_whatever_its_type() -> None:
    for kind in ("sha256", "sha512", "md5", "auto"):
        info = instance_info({"url": URL, "checksum": URL + ".sha256sum", "checksumType": kind})
        assert info == {"image_source": URL, "image_checksum": URL + ".sha256sum"}


def test_a_named_sha_checksum_goes_in_os_hash() -> None:
    info = instance_info({"url": URL, "checksum": SHA256, "checksumType": "sha256"})
    assert info["image_os_hash_algo"] == "sha256" and info["image_os_hash_value"] == SHA256
    assert "image_checksum" not in info


def test_an_md5_or_unnamed_checksum_goes_in_image_checksum() -> None:
    assert instance_info({"url": URL, "checksum": "cd" * 16, "checksumType": "md5"}) == {
        "image_source": URL,
        "image_checksum": "cd" * 16,
    }
    assert instance_info({"url": URL, "checksum": SHA256})["image_checksum"] == SHA256


def test_a_live_iso_is_booted_by_the_ramdisk_deploy_not_written() -> None:
    iso = "http://images.example/live.iso"
    image = {"url": iso, "checksum": SHA256, "diskFormat": "live-iso"}
    assert instance_info(image) == {"boot_iso": iso}  # no source or checksum, as in BMO
    host = replace(view_of("ns", 0), image=image)
    assert deploy_patch(host) == [
        {"op": "add", "path": "/instance_info", "value": {"boot_iso": iso}},
        {"op": "add", "path": "/deploy_interface", "value": "ramdisk"},
    ]
    node = {"provision_state": "active", "instance_info": {"boot_iso": iso}}
    assert deployed_image(node) == iso


def test_other_images_take_a_live_isos_ramdisk_deploy_back_and_leave_others_alone() -> None:
    host = replace(view_of("ns", 0), image={"url": URL, "diskFormat": "qcow2"})
    assert deploy_patch(host)[1:] == []
    assert deploy_patch(host, deploy_interface="direct")[1:] == []
    assert deploy_patch(host, deploy_interface="ramdisk")[1:] == [
        {"op": "remove", "path": "/deploy_interface"}  # Ironic's default again
    ]
    assert deploy_patch(host, deploy_interface="ramdisk", configured="ansible")[1:] == [
        {"op": "add", "path": "/deploy_interface", "value": "ansible"}
    ]
    assert deploy_patch(host, deploy_interface="ramdisk", configured="ramdisk")[1:] == []


def test_ironic_gets_the_drive_as_json_only_from_api_1_56() -> None:
    data = HostData(user_data="#cloud-config\n", network_data={"links": []})
    host = replace(view_of("ns", 0, provider_id="node-uuid"), data=data)
    drive = config_drive(host, (1, 56))
    assert drive is not None
    assert drive["user_data"] == "#cloud-config\n" and drive["network_data"] == {"links": []}
    with pytest.raises(Answer) as refused:
        config_drive(host, (1, 55))
    assert "API 1.56" in str(refused.value.result.message)
    # a host that gives no data is deployed without a drive by an Ironic that takes none,
    # and a live ISO given none gets none (as with baremetal-operator)
    assert config_drive(replace(host, data=None), (1, 55)) is None
    live = {"url": "http://images.example/live.iso", "diskFormat": "live-iso"}
    assert config_drive(replace(host, data=None, image=live), (1, 56)) is None
    assert config_drive(replace(host, image=live), (1, 56)) is not None


def test_without_meta_data_the_drive_names_the_host_as_baremetal_operator_does() -> None:
    host = view_of("ns", 0, provider_id="node-uuid")
    drive = config_drive(host, (1, 56))
    assert drive is not None and set(drive) == {"meta_data"}
    meta = drive["meta_data"]
    assert meta["uuid"] == "node-uuid"
    name = host.name
    assert meta["local-hostname"] == meta["local_hostname"] == meta["name"] == name
    assert (meta["metal3-name"], meta["metal3-namespace"]) == (name, "ns")
    assert (meta["hoststate-name"], meta["hoststate-namespace"]) == (name, "ns")
    given = HostData(meta_data={"local-hostname": "mine"})
    assert config_drive(replace(host, data=given), (1, 56)) == {
        "meta_data": {"local-hostname": "mine"}
    }


def test_the_ramdisks_network_is_the_deployed_oss_unless_network_data_is_set() -> None:
    ramdisk = {"links": [{"id": "ramdisk"}]}
    host = replace(view_of("ns", 0, provider_id="u"), data=HostData(ramdisk_network_data=ramdisk))
    drive = config_drive(host, (1, 66))
    assert drive is not None and drive["network_data"] == ramdisk
    own = HostData(network_data={"links": []}, ramdisk_network_data=ramdisk)
    drive = config_drive(replace(host, data=own), (1, 66))
    assert drive is not None and drive["network_data"] == {"links": []}


def test_registration_fields_go_on_the_new_node_or_are_refused_by_an_older_ironic() -> None:
    ramdisk = {"links": [{"id": "ramdisk"}]}
    host = replace(
        view_of("ns", 0),
        architecture="aarch64",
        disable_power_off=True,
        data=HostData(ramdisk_network_data=ramdisk),
    )
    node = new_node(host, driver=None, interfaces={}, overrides=None)
    assert node["properties"]["cpu_arch"] == "aarch64"
    assert node["disable_power_off"] is True and node["network_data"] == ramdisk
    assert unsupported_node_fields(host, (1, 95)) == ""
    assert unsupported_node_fields(host, (1, 66)) == (
        "spec.disablePowerOff needs Ironic API 1.95 or newer, and Ironic offers 1.66"
    )
    assert "spec.preprovisioningNetworkDataName needs Ironic API 1.66" in (
        unsupported_node_fields(host, (1, 65))
    )
    plain = new_node(view_of("ns", 0), driver=None, interfaces={}, overrides=None)
    assert "disable_power_off" not in plain and "network_data" not in plain
    assert "cpu_arch" not in plain["properties"]


def test_a_custom_deploy_runs_its_step_with_custom_agent_and_the_next_image_undoes_it() -> None:
    host = replace(view_of("ns", 0), image=None, custom_deploy="install_coreos")
    assert deploy_patch(host) == [
        {"op": "add", "path": "/instance_info", "value": {}},
        {"op": "add", "path": "/deploy_interface", "value": "custom-agent"},
    ]
    assert custom_deploy_steps(host, (1, 69)) == [
        {"interface": "deploy", "step": "install_coreos", "args": {}, "priority": 80}
    ]
    with pytest.raises(Answer) as refused:
        custom_deploy_steps(host, (1, 68))
    assert "spec.customDeploy needs Ironic API 1.69" in str(refused.value.result.message)
    assert custom_deploy_steps(view_of("ns", 0), (1, 69)) is None
    image = view_of("ns", 0)
    assert deploy_patch(image, deploy_interface="custom-agent")[1:] == [
        {"op": "remove", "path": "/deploy_interface"}
    ]


def test_an_inventorys_bios_is_the_hosts_firmware_as_metal3_names_it() -> None:
    # IPA's inventory (ironic-python-agent hardware.py, SystemFirmware): the BIOS is under
    # system_vendor.firmware; baremetal-operator maps it to HardwareDetails.firmware.bios
    vendor = {
        "manufacturer": "Dell Inc.",
        "product_name": "PowerEdge R750",
        "firmware": {"vendor": "Dell Inc.", "version": "1.6.5", "build_date": "01/10/2023"},
    }
    hardware = hardware_from_inventory({"system_vendor": vendor})
    bios = {"vendor": "Dell Inc.", "version": "1.6.5", "date": "01/10/2023"}
    assert hardware["firmware"] == {"bios": bios}
    # the Host's schema keeps it (the status is closed: a field it lacks would be dropped)
    assert HardwareDetails.model_validate(hardware).firmware.bios.version == "1.6.5"
    # an inventory without firmware: every field the schema has, empty (unknown), as the
    # status would read back through it
    unknown = hardware_from_inventory({"system_vendor": {}})
    assert unknown["firmware"] == {"bios": {"date": "", "vendor": "", "version": ""}}
    assert (
        HardwareDetails.model_validate(unknown).model_dump(by_alias=True)["firmware"]
        == (unknown["firmware"])
    )
