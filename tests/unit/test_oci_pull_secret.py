"""An ``oci://`` image pulled with the registry credentials its ``ociAuthSecretName`` names,
as baremetal-operator v0.13.2 sends them (``ExtractRegistryCredentials``,
pkg/secretutils/dockerconfig.go: base64 of ``username:password`` for the image's
registry, in ``instance_info.image_pull_secret``, pkg/provisioner/ironic/ironic.go
``setDirectDeployUpdateOptsForNode``); a Secret missing, unlabelled or without that
registry stops the deploy in one line naming the field."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from state_controller.adopt import translate
from state_controller.api import annotations as ann
from state_controller.api.host import HostSpec
from state_controller.bootstrap.hostsfile import apply_hosts_file, read_hosts_file
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, SECRETS
from state_controller.cluster.schema import validators
from state_controller.provisioning.ironic.faults import readable
from state_controller.provisioning.ironic.nodes import deploy_patch
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.hosts.data import read_host_data
from state_controller.runtime.hosts.pull_secret import pull_secret
from testbed.scenarios import wait_all_in
from tests.conftest import wait_for
from tests.ironic.helpers import view_of

URL = "oci://registry.example.com:5000/project/os:1.2.3"
LOGIN = base64.b64encode(b"robot:t0ken").decode()


def docker_config(registry: str, **entry: str) -> str:
    auths = {registry: entry or {"auth": LOGIN}}
    return base64.b64encode(json.dumps({"auths": auths}).encode()).decode()


def secret(data: dict[str, str], *, labelled: bool = True) -> dict[str, Any]:
    labels = {ann.HOST_DATA: "true"} if labelled else {}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "pull", "namespace": "metal", "labels": labels},
        "data": data,
    }


def test_the_registrys_credentials_are_taken_as_ironic_wants_them() -> None:
    config = {".dockerconfigjson": docker_config("https://registry.example.com:5000/v1/")}
    assert pull_secret(secret(config), "metal", "pull", URL) == (LOGIN, "")
    plain = {".dockerconfigjson": docker_config("registry.example.com:5000", username="robot",
                                                 password="t0ken")}  # fmt: skip
    assert pull_secret(secret(plain), "metal", "pull", URL) == (LOGIN, "")
    hub = {".dockerconfigjson": docker_config("https://index.docker.io/v1/")}
    assert pull_secret(secret(hub), "metal", "pull", "oci://docker.io/library/os:1")[0] == LOGIN


def test_a_secret_that_cannot_serve_is_one_line_naming_the_field() -> None:
    other = {".dockerconfigjson": docker_config("quay.io")}
    cases = {
        "not found; create it": None,
        "has no label hoststate.io/host-data=true": secret(other, labelled=False),
        "has no credentials for the registry registry.example.com:5000": secret(other),
        'holds no registry credentials under ".dockerconfigjson"': secret({"x": "eA=="}),
    }
    for says, given in cases.items():
        login, problem = pull_secret(given, "metal", "pull", URL)
        assert login is None and problem.startswith("spec.image.ociAuthSecretName: "), problem
        assert says in problem and "t0ken" not in problem and "\n" not in problem


def test_ironic_gets_the_pull_secret_of_an_oci_image_only() -> None:
    config = secret({".dockerconfigjson": docker_config("registry.example.com:5000")})
    found = {"metal/pull": config}
    oci = HostSpec.model_validate({"image": {"url": URL, "ociAuthSecretName": "pull"}})
    read = read_host_data(oci, "metal", found.get)
    assert read.problem is None and read.data is not None
    assert read.data.image_pull_secret == LOGIN and "t0ken" not in repr(read.data)
    view = replace(view_of("metal", 0), image={"url": URL}, data=read.data)
    [info] = [op["value"] for op in deploy_patch(view) if op["path"] == "/instance_info"]
    assert info == {"image_source": URL, "image_pull_secret": LOGIN}
    http = HostSpec.model_validate(
        {
            "image": {
                "url": "https://i.example/os.img",
                "checksum": "0" * 64,
                "ociAuthSecretName": "pull",
            }
        }
    )
    assert read_host_data(http, "metal", {}.get).data is None  # not read, as in BMO


BMH = """\
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {name: worker-0, namespace: metal}
spec:
  online: true
  bmc: {address: "redfish://192.0.2.20/redfish/v1/Systems/1", credentialsName: worker-0-bmc}
  image: {url: "URL", ociAuthSecretName: pull}
---
apiVersion: v1
kind: Secret
metadata: {name: worker-0-bmc, namespace: metal}
stringData: {username: admin, password: s3cret}
"""


def test_a_converted_host_waits_for_its_pull_secret_then_provisions(
    tmp_path: Path, run_controller: Any
) -> None:
    """From BareMetalHost to provisioned on the simulated hardware: the Host waits with an
    error naming spec.image.ociAuthSecretName until the Secret exists (convert's notes say
    to label it), then deploys."""
    path = tmp_path / "hosts.yaml"
    path.write_text(BMH.replace("URL", URL))
    read = read_hosts_file(path)
    assert read.hosts[0]["spec"]["image"] == {"url": URL, "ociAuthSecretName": "pull"}
    [note] = read.notes
    assert "Secret metal/pull (spec.image.ociAuthSecretName of Host metal/worker-0)" in note
    assert note.endswith("kubectl label secret pull -n metal hoststate.io/host-data=true")
    with EmbeddedCluster(validators=validators()) as cluster:
        apply_hosts_file(cluster, read)
        with run_controller(cluster, SimulatedProvisioner()):

            def refused() -> bool:
                status = cluster.get(HOSTS, "metal", "worker-0").get("status") or {}
                return "spec.image.ociAuthSecretName" in str(status.get("errorMessage") or "")

            wait_for(refused, what="the deploy refused, naming the field")
            config = {".dockerconfigjson": docker_config("registry.example.com:5000")}
            cluster.create(SECRETS, secret(config))
            wait_all_in(cluster, "metal", "provisioned", ["worker-0"], timeout=60)


def test_a_registry_failure_is_not_blamed_on_the_bmc() -> None:
    """Ironic's registry client names the registry's API root, /v2/; its words (a refused
    connection, measured on Ironic 39.0.0 in tests/ironic/test_oci_on_ironic.py, or any
    other answer) point at spec.image, never at the BMC."""
    refused = (
        "Failed to prepare to deploy. Exception: HTTPSConnectionPool(host='registry.example', "
        "port=443): Max retries exceeded with url: /v2/ (Caused by NewConnectionError(... "
        "[Errno 111] Connection refused))"
    )
    assert readable(refused) == (
        "Ironic could not reach the OCI registry registry.example:443 of spec.image.url "
        "(Connection refused); check spec.image.url and that the registry is reachable from "
        "Ironic"
    )
    denied = "Failed to prepare to deploy. 401 Client Error: Unauthorized for url: /v2/x"
    assert readable(denied).startswith("Ironic could not use the OCI registry of spec.image.url")


def test_a_handover_labels_the_pull_secret_and_tells_deploys_apart_without_it() -> None:
    """adopt: the registry's credentials go over with the host's other data Secrets;
    baremetal-operator's status image may lack them, and that is no deploy to do."""
    spec = {"image": {"url": URL, "ociAuthSecretName": "pull"}, "userData": {"name": "ud"}}
    assert translate.data_secret_names(spec) == ["ud", "pull"]
    bmh = {
        "metadata": {"name": "w", "namespace": "metal"},
        "spec": {"online": True, **spec},
        "status": {
            "operationalStatus": "OK",
            "poweredOn": True,
            "provisioning": {"state": "provisioned", "ID": "n-1", "image": {"url": URL}},
        },
    }
    assert translate.bmh_refusal(bmh, include_consumed=False) == ""
    restored = translate.restored_status(bmh, "")
    assert restored["provisioning"]["image"] == {"url": URL}
