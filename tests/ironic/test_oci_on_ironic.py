"""An ``oci://`` image and its pull secret on a real Ironic (tools/ironic/requirements.txt):
the node gets the image as ``image_source`` with no checksum, and the pull secret as
``instance_info.image_pull_secret``, as baremetal-operator v0.13.2 writes them
(pkg/provisioner/ironic/ironic.go ``setDirectDeployUpdateOptsForNode``); a registry that
does not answer fails the deploy in our words, which never carry the credentials."""

from __future__ import annotations

import base64
from dataclasses import replace

import pytest

from state_controller.provisioning.provisioner import HostData
from state_controller.provisioning.results import Outcome
from testbed.ironic_server import IronicServer
from tests.ironic.helpers import IronicAPI, provisioner, registered, settled, view_of

pytestmark = pytest.mark.slow

REGISTRY = "127.0.0.1:9"  # nothing listens on the discard port
IMAGE = f"oci://{REGISTRY}/project/os:1.2.3"
LOGIN = base64.b64encode(b"robot:Pull-T0ken-Secret").decode()


def test_an_oci_image_goes_to_ironic_without_a_checksum_with_its_pull_secret(
    ironic: IronicServer, api: IronicAPI
) -> None:
    prov = provisioner(ironic.url, {"host-0000": {"deploy_interface": "direct"}})
    view = replace(
        view_of("oci", 0),
        image={"url": IMAGE},
        data=HostData(image_pull_secret=LOGIN),
        automated_cleaning=False,
    )
    view = registered(prov, view)
    result = settled(lambda: prov.provision(view), "the deploy failed")
    assert result.outcome is Outcome.FAILED, result
    assert result.message == (
        f"deploying the image failed: Ironic could not reach the OCI registry {REGISTRY} of "
        "spec.image.url (Connection refused); check spec.image.url and that the registry is "
        "reachable from Ironic"
    )
    for text in (result.message, result.details):
        assert LOGIN not in text and "Pull-T0ken-Secret" not in text
    node = api.node(view.provider_id)
    assert node is not None and node["provision_state"] == "deploy failed"
    info = node["instance_info"]
    assert info["image_source"] == IMAGE
    assert not {"image_checksum", "image_os_hash_value"} & set(info)
    assert info["image_pull_secret"] == "******"  # kept by Ironic, shown masked
