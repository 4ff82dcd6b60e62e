"""The CRD schemas as a user meets them, on a real kube-apiserver and on the embedded
store: unknown fields, invalid values and their messages, image checksums.

Tests taking ``cluster`` run twice, on the embedded store and on the session's real
control plane (tests/conftest.py), and must see the same thing; the others drive
the real server directly, with kubectl or the Python ``kubernetes`` client.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from state_controller.api import API_VERSION
from state_controller.api.bmc import ADDRESS_FIX
from state_controller.api.host import CHECKSUM_MESSAGE, IMAGE_URL_FIX, MAC_FIX, SECRET_NAME_FIX
from state_controller.cluster.interface import HOSTS, HOSTSTATES, Cluster, Invalid
from state_controller.cluster.kube import KubeCluster
from testbed.control_plane import ControlPlane
from tests.conftest import SCENARIO_NAMESPACE, empty_namespace

NS = SCENARIO_NAMESPACE
BMC = {"address": "ipmi://192.0.2.10:623", "credentialsName": "h-bmc"}


def host(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Host",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"bmc": dict(BMC), **spec},
    }


@pytest.fixture
def kube(control_plane: ControlPlane) -> Iterator[KubeCluster]:
    cluster = KubeCluster.from_kubeconfig(str(control_plane.kubeconfig))
    yield cluster
    empty_namespace(cluster, NS)
    cluster.close()


def kubectl_apply(
    plane: ControlPlane, tmp_path: Path, obj: dict[str, Any], *flags: str
) -> subprocess.CompletedProcess[str]:
    manifest = tmp_path / f"{obj['metadata']['name']}.yaml"
    manifest.write_text(yaml.safe_dump(obj))
    return subprocess.run(
        plane.kubectl_argv("apply", "-f", str(manifest), *flags),
        capture_output=True,
        text=True,
        timeout=60,
    )


# -- unknown fields ------------------------------------------------------------------------

TYPOS = {
    "onlin": True,
    "bmc": {**BMC, "adress": "ipmi://192.0.2.11"},
    "image": {"url": "http://i.example/os.img", "checksum": "0" * 64, "sha": "x"},
    "rootDeviceHints": {"deviceName": "/dev/sda", "sizeGB": 100},
}
TYPO_PATHS = ["spec.bmc.adress", "spec.image.sha", "spec.onlin", "spec.rootDeviceHints.sizeGB"]


def test_unknown_fields_are_dropped_and_the_rest_kept(cluster: Cluster) -> None:
    """What a client that asks for no field validation gets (the Python client, this
    controller): the server's default, Warn, drops the fields; the embedded store too."""
    created = cluster.create(HOSTS, {**host("typos", **TYPOS), "extra": "x"})
    stored = cluster.get(HOSTS, NS, "typos")
    for obj in (created, stored):
        spec = obj["spec"]
        assert "onlin" not in spec and "extra" not in obj
        assert spec["bmc"]["address"] == BMC["address"] and "adress" not in spec["bmc"]
        assert spec["image"]["checksum"] == "0" * 64 and "sha" not in spec["image"]
        assert spec["rootDeviceHints"] == {"deviceName": "/dev/sda"}
        assert obj["metadata"]["generation"] == 1

    # A change that is only an unknown field changes nothing: no new version, no generation.
    patched = cluster.patch(HOSTS, NS, "typos", {"spec": {"onlin": False, "bmc": {"x": 1}}})
    assert patched["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert patched["metadata"]["generation"] == 1 and "onlin" not in patched["spec"]

    # Status writes are pruned too, at every level.
    status = {"poweredOn": True, "bogus": 1, "provisioning": {"state": "available", "x": 2}}
    written = cluster.update_status(HOSTS, {**stored, "status": status})
    assert cluster.get(HOSTS, NS, "typos")["status"] == written["status"]
    assert written["status"] == {"poweredOn": True, "provisioning": {"state": "available"}}


def test_unknown_fields_strict_warn_and_ignore_on_the_real_server(
    control_plane: ControlPlane, kube: KubeCluster, tmp_path: Path
) -> None:
    """kubectl's default (--validate=strict, fieldValidation=Strict) refuses the object and
    names every unknown field; no fieldValidation at all (the Python client) means Warn:
    stored without them, each named in a Warning header; --validate=false means Ignore."""
    strict = kubectl_apply(control_plane, tmp_path, host("strict", **TYPOS))
    assert strict.returncode == 1
    assert 'Host in version "v1alpha1" cannot be handled as a Host: strict decoding error:' in (
        strict.stderr
    )
    for path in TYPO_PATHS:
        assert f'unknown field "{path}"' in strict.stderr, strict.stderr
    assert [h["metadata"]["name"] for h in kube.list(HOSTS, NS)[0]] == []

    response = client.CustomObjectsApi(kube.api).create_namespaced_custom_object(
        "hoststate.io", "v1alpha1", NS, "hosts", host("plain", **TYPOS), _preload_content=False
    )
    assert response.status == 201
    warnings = sorted(response.headers.getlist("Warning"))
    assert warnings == [f'299 - "unknown field \\"{path}\\""' for path in TYPO_PATHS]
    stored = json.loads(response.data)["spec"]
    assert "onlin" not in stored and "adress" not in stored["bmc"]

    warn = kubectl_apply(control_plane, tmp_path, host("warn", **TYPOS), "--validate=warn")
    assert warn.returncode == 0, warn.stderr
    assert all(f'Warning: unknown field "{path}"' in warn.stderr for path in TYPO_PATHS)
    ignore = kubectl_apply(control_plane, tmp_path, host("ignore", **TYPOS), "--validate=false")
    assert ignore.returncode == 0 and "unknown field" not in ignore.stderr, ignore.stderr
    for name in ("plain", "warn", "ignore"):
        assert "onlin" not in kube.get(HOSTS, NS, name)["spec"]


def test_hoststate_spec_is_closed_too(cluster: Cluster) -> None:
    state = {
        "apiVersion": API_VERSION,
        "kind": "HostState",
        "metadata": {"name": "s", "namespace": NS},
        "spec": {"host": "s", "nod": "n"},
    }
    for obj in (cluster.create(HOSTSTATES, state), cluster.get(HOSTSTATES, NS, "s")):
        assert obj["spec"]["host"] == "s" and "nod" not in obj["spec"]


# -- invalid values: one error each, naming the field and its fix --------------------------

BAD_CHECKSUM = {"checksum": "not-a-sha256!", "checksumType": "sha256"}
INVALID = [
    pytest.param(
        {"bmc": {**BMC, "address": "ipmb://192.0.2.10"}},
        "spec.bmc.address",
        '"ipmb://192.0.2.10"',
        f"spec.bmc.address: {ADDRESS_FIX}",
        id="bmc-address",
    ),
    pytest.param(
        {"bmc": {**BMC, "credentialsName": "Not_A_Name"}},
        "spec.bmc.credentialsName",
        '"Not_A_Name"',
        f"spec.bmc.credentialsName: {SECRET_NAME_FIX}",
        id="secret-name",
    ),
    pytest.param(
        {"bootMACAddress": "52-54-00-12-34-56"},
        "spec.bootMACAddress",
        '"52-54-00-12-34-56"',
        f"spec.bootMACAddress: {MAC_FIX}",
        id="mac",
    ),
    pytest.param(
        {"image": {"url": "ftp://i.example/os.img", "checksum": "0" * 64}},
        "spec.image.url",
        '"ftp://i.example/os.img"',
        f"spec.image.url: {IMAGE_URL_FIX}",
        id="image-url",
    ),
    pytest.param(
        {"image": {"url": "http://i.example/os.img", **BAD_CHECKSUM}},
        "spec.image.checksum",
        None,  # a rule on the image object: the server quotes no value
        CHECKSUM_MESSAGE,
        id="checksum",
    ),
]


@pytest.mark.parametrize(("spec", "field", "value", "message"), INVALID)
def test_an_invalid_field_is_one_error_naming_it_and_the_fix(
    cluster: Cluster, spec: dict[str, Any], field: str, value: str | None, message: str
) -> None:
    with pytest.raises(Invalid) as caught:
        cluster.create(HOSTS, host("bad", **spec))
    error = caught.value
    assert [c.field for c in error.causes] == [field]
    assert error.message.count(message) == 1, error.message
    if isinstance(cluster, KubeCluster):  # the API server's own words around it
        shown = f": {value}" if value is not None else ""
        expected = f"{field}: Invalid value{shown}: {message}"
        assert error.message == f'Host.hoststate.io "bad" is invalid: {expected}'
    else:  # the same message, after the embedded store's own words
        assert error.message == f'Host "bad" is invalid: {message}'


def test_kubectl_shows_each_invalid_field_once_with_its_fix(
    control_plane: ControlPlane, kube: KubeCluster, tmp_path: Path
) -> None:
    spec = {
        "bmc": {"address": "ipmb://192.0.2.10", "credentialsName": "Not_A_Name"},
        "bootMACAddress": "52-54-00-12-34-56",
        "image": {"url": "ftp://i.example/os.img", **BAD_CHECKSUM},
    }
    result = kubectl_apply(control_plane, tmp_path, host("bad", **spec))
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.startswith("* ")]
    assert result.stderr.startswith('The Host "bad" is invalid: \n'), result.stderr
    assert len(lines) == len(INVALID), result.stderr
    for param in INVALID:
        _, field, value, message = param.values
        shown = f": {value}" if value is not None else ""
        assert f"* {field}: Invalid value{shown}: {message}" in lines, result.stderr
        assert result.stderr.count(message) == 1


def test_the_troubleshooting_page_shows_what_kubectl_prints(
    control_plane: ControlPlane, kube: KubeCluster, tmp_path: Path
) -> None:
    """The page's sample of a refused Host is the real kubectl's output, word for word."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md").read_text()
    found = re.search(r"\$ kubectl apply -f host.yaml\n(.*?)\n```", page, re.S)
    assert found, "docs/troubleshooting.md lost its kubectl apply sample"
    bad = host("worker-7", image={"url": "http://i.example/os.img", **BAD_CHECKSUM})
    result = kubectl_apply(control_plane, tmp_path, bad)
    assert result.returncode == 1
    assert result.stderr.strip() == found.group(1).strip()


# -- image checksums --------------------------------------------------------------------


def test_a_checksum_must_fit_its_type(cluster: Cluster) -> None:
    """`not-a-sha256!` with checksumType sha256 used to be accepted and provisioned."""
    url = "http://i.example/os.img"
    with pytest.raises(Invalid) as caught:
        cluster.create(HOSTS, host("c1", image={"url": url, **BAD_CHECKSUM}))
    assert CHECKSUM_MESSAGE in caught.value.message
    assert [c.field for c in caught.value.causes] == ["spec.image.checksum"]

    good = [
        {"checksum": "3f" * 32, "checksumType": "sha256"},
        {"checksum": "A0" * 64, "checksumType": "sha512"},
        {"checksum": "0" * 32},  # auto: md5's length
        {"checksum": "https://i.example/os.img.sha256sum", "checksumType": "sha256"},
    ]
    for index, image in enumerate(good):
        cluster.create(HOSTS, host(f"ok-{index}", image={"url": url, **image}))

    # The rule reads both fields: changing only the type can make the checksum wrong.
    with pytest.raises(Invalid) as caught:
        cluster.patch(HOSTS, NS, "ok-0", {"spec": {"image": {"checksumType": "md5"}}})
    assert CHECKSUM_MESSAGE in caught.value.message
