"""What a Host's image becomes in an Ironic node's instance_info."""

from __future__ import annotations

from dataclasses import replace

import pytest

from state_controller.provisioning.ironic.faults import Answer
from state_controller.provisioning.ironic.nodes import (
    config_drive,
    deploy_patch,
    deployed_image,
    instance_info,
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
    assert config_drive(data, (1, 56)) == {
        "user_data": "#cloud-config\n",
        "network_data": {"links": []},
    }
    with pytest.raises(Answer) as refused:
        config_drive(data, (1, 55))
    assert "API 1.56" in str(refused.value.result.message)
