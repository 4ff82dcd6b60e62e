"""A Host's image as baremetal-operator v0.13.2 takes a BareMetalHost's: a checksum is
required but for a live ISO and an ``oci://`` image (``Image.GetChecksum`` in
apis/metal3.io/v1alpha1/baremetalhost_types.go), on the embedded store and on a real
kube-apiserver alike (the CRD's CEL rules and pydantic's say the same), and what Ironic
is told for each (``setDirectDeployUpdateOptsForNode`` and ``setLiveIsoUpdateOptsForNode``
in pkg/provisioner/ironic/ironic.go: no checksum fields for an OCI image without one)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from state_controller.api import API_VERSION
from state_controller.api.host import CHECKSUM_REQUIRED, HostSpec
from state_controller.api.reach import Allowlist, Reach
from state_controller.cluster.interface import HOSTS, Cluster, Invalid
from state_controller.provisioning.ironic.nodes import instance_info
from tests.conftest import SCENARIO_NAMESPACE

NS = SCENARIO_NAMESPACE
BMC = {"address": "ipmi://192.0.2.10:623", "credentialsName": "h-bmc"}
OCI_TAG = "oci://registry.example.com/project/myimage:1.2.3"
OCI_DIGEST = "oci://registry.example.com/project/myimage@sha256:" + "ab" * 32
ISO = "http://1.2.3.4/image.iso"


def host(name: str, image: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Host",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"bmc": dict(BMC), "image": image},
    }


WITHOUT_CHECKSUM = [
    {"url": ISO, "diskFormat": "live-iso"},
    {"url": OCI_TAG},
    {"url": OCI_DIGEST, "diskFormat": "raw"},
]


def test_a_live_iso_and_an_oci_image_need_no_checksum(cluster: Cluster) -> None:
    for index, image in enumerate(WITHOUT_CHECKSUM):
        HostSpec.model_validate({"image": image})
        cluster.create(HOSTS, host(f"nosum-{index}", image))
        stored = cluster.get(HOSTS, NS, f"nosum-{index}")["spec"]["image"]
        assert stored["url"] == image["url"] and not stored.get("checksum")


def test_any_other_image_without_a_checksum_is_refused_naming_the_field(cluster: Cluster) -> None:
    for index, image in enumerate(
        [{"url": "http://i.example/os.qcow2"}, {"url": "file:///images/os.img", "checksum": ""}]
    ):
        with pytest.raises(ValidationError) as parsed:
            HostSpec.model_validate({"image": image})
        assert CHECKSUM_REQUIRED in str(parsed.value)
        with pytest.raises(Invalid) as caught:
            cluster.create(HOSTS, host(f"sum-{index}", image))
        assert CHECKSUM_REQUIRED in caught.value.message
        assert [c.field for c in caught.value.causes] == ["spec.image.checksum"]
    # an OCI image may still say its checksum: then it must fit its type, as any other
    cluster.create(HOSTS, host("oci-sum", {"url": OCI_TAG, "checksum": "cd" * 32}))


def test_ironic_gets_an_oci_image_without_checksum_fields() -> None:
    assert instance_info({"url": OCI_TAG}) == {"image_source": OCI_TAG}
    digest = instance_info({"url": OCI_DIGEST, "checksum": "ab" * 32, "checksumType": "sha256"})
    assert digest == {
        "image_source": OCI_DIGEST,
        "image_os_hash_algo": "sha256",
        "image_os_hash_value": "ab" * 32,
    }
    assert instance_info({"url": ISO, "diskFormat": "live-iso"}) == {"boot_iso": ISO}


def test_an_oci_registry_is_held_to_the_image_hosts_allowed() -> None:
    """The registry is where Ironic's conductor connects: the same limits as any image
    server (:mod:`state_controller.api.reach`)."""
    spec = HostSpec.model_validate({"image": {"url": OCI_TAG}})
    assert Reach().problem(spec) == ""
    local = HostSpec.model_validate({"image": {"url": "oci://127.0.0.1:5000/os:1"}})
    assert "spec.image.url" in Reach().problem(local)
    only = Reach(images=Allowlist.parse(["images.example"], "--allow-image-host"))
    assert "spec.image.url" in only.problem(spec)
