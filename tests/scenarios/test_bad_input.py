"""Bad input is rejected with the field named, or lands in a defined state; nothing crashes."""

from __future__ import annotations

from typing import Any

import pytest

from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, HOSTSTATES, SECRETS, Cluster, Invalid
from state_controller.simulation.fleet import create_fleet, host_manifest, secret_manifest
from testbed.scenarios import condition, events_for, hoststate, state_of, wait_all_in
from tests.conftest import wait_for

NS = "fleet"


@pytest.mark.parametrize(
    ("change", "field", "fix"),
    [
        ({"bmc": {"address": "ipmb://10.0.0.1"}}, "spec.bmc.address", "one of idrac"),
        ({"bmc": {"address": "not an address"}}, "spec.bmc.address", "<type>://<host>"),
        (
            {"image": {"url": "http://x/os.img", "checksum": None}},
            "spec.image.checksum",
            "checksum",
        ),
        ({"bootMACAddress": "zz:zz"}, "spec.bootMACAddress", "six hex pairs"),
        ({"bmc": {"credentialsName": "Not_A_Name"}}, "spec.bmc.credentialsName", "Secret"),
    ],
)
def test_schema_rejects_invalid_specs_naming_field_and_fix(
    cluster: Cluster, change: dict[str, Any], field: str, fix: str
) -> None:
    host = host_manifest(NS, 0)
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(host["spec"].get(key), dict):
            host["spec"][key] = {
                k: v for k, v in {**host["spec"][key], **value}.items() if v is not None
            }
        else:
            host["spec"][key] = value
    with pytest.raises(Invalid) as caught:
        cluster.create(HOSTS, host)
    assert field in caught.value.message and fix in caught.value.message
    assert any(c.field == field for c in caught.value.causes)


def test_unknown_field_is_dropped_by_the_store_as_by_the_api_server(
    cluster: Cluster, run_controller: Any
) -> None:
    """The CRD is closed: a request without fieldValidation (this client's) has a misspelt
    field dropped, not stored; the host goes on as if it had not been written. (kubectl's
    default strict validation refuses it instead: tests/cluster/test_api_schema.py.)"""
    with run_controller(cluster):
        host = host_manifest(NS, 0)
        host["spec"]["onlin"] = False
        cluster.create(SECRETS, secret_manifest(NS, "host-0000-bmc", "admin", "pw"))
        created = cluster.create(HOSTS, host)
        assert "onlin" not in created["spec"] and created["spec"]["online"] is True
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned", what="provisioned")
        state = cluster.get(HOSTSTATES, NS, "host-0000")
        spec_valid = condition(state, "SpecValid")
        assert spec_valid["status"] == "True"
        assert "onlin" not in cluster.get(HOSTS, NS, "host-0000")["spec"]


def test_unknown_field_the_schema_never_saw_is_named(run_controller: Any) -> None:
    """A store without schema (an object stored before the CRD was closed, a restored
    backup) keeps a misspelt field: the controller names it, with a "did you mean"."""
    loose = EmbeddedCluster()
    try:
        with run_controller(loose):
            host = host_manifest(NS, 0)
            host["spec"]["onlin"] = False
            loose.create(SECRETS, secret_manifest(NS, "host-0000-bmc", "admin", "pw"))
            loose.create(HOSTS, host)
            wait_for(lambda: loose.get(HOSTSTATES, NS, "host-0000")["status"]["phase"] == "Failed")
            state = loose.get(HOSTSTATES, NS, "host-0000")
            spec_valid = condition(state, "SpecValid")
            assert spec_valid["status"] == "False" and spec_valid["reason"] == "UnknownField"
            assert "did you mean spec.online?" in spec_valid["message"]
            assert loose.get(HOSTS, NS, "host-0000")["spec"]["onlin"] is False  # nothing lost
            wait_for(lambda: any(e["type"] == "Warning" for e in events_for(loose, "host-0000")))
            loose.patch(HOSTS, NS, "host-0000", {"spec": {"onlin": None}})
            wait_for(lambda: state_of(loose, "host-0000") == "provisioned", what="fix applied")
    finally:
        loose.close()


def test_objects_that_slipped_past_validation_do_not_stop_the_fleet(run_controller: Any) -> None:
    """A store without schema validation (an older CRD, a restore from backup)."""
    loose = EmbeddedCluster()
    try:
        with run_controller(loose):
            broken = [
                {"bmc": {"address": "ipmb://10.0.0.1", "credentialsName": "c"}},
                {"bmc": {"address": "redfish://x", "credentialsName": "c"}, "image": {"url": "x"}},
                "not even an object",
                {"bmc": ["a list"], "online": "sometimes"},
            ]
            for index, spec in enumerate(broken, start=10):
                host = host_manifest(NS, index)
                host["spec"] = spec
                loose.create(HOSTS, host)
            fleet = [k.rpartition("/")[2] for k in create_fleet(loose, NS, 3)]
            wait_all_in(loose, NS, "provisioned", fleet)  # not the broken ones
            names = [f"host-{index:04d}" for index in range(10, 14)]
            wait_for(
                lambda: all(loose.get(HOSTS, NS, n)["status"]["errorMessage"] for n in names),
                timeout=4 * 15,  # as long as 15 s a host
                what="every broken host's error",
            )
            for name in names:
                host = loose.get(HOSTS, NS, name)
                assert host["status"]["provisioning"]["state"] == "registering"
                assert host["status"]["errorType"] == "registration error"
                assert host["status"]["errorMessage"].startswith("spec")
    finally:
        loose.close()


def test_a_checksum_file_that_cannot_be_fetched_is_a_provisioning_error(
    cluster: Cluster, run_controller: Any
) -> None:
    """``.invalid`` never resolves (RFC 2606): the backend cannot fetch the checksum file."""
    checksum = "http://checksums.invalid/os/rhcos-4.16.qcow2.sha256sum"
    with run_controller(cluster):
        host = host_manifest(NS, 0)
        host["spec"]["image"]["checksum"] = checksum
        cluster.create(SECRETS, secret_manifest(NS, "host-0000-bmc", "admin", "pw"))
        cluster.create(HOSTS, host)
        status = wait_for(
            lambda: (
                s
                if (s := cluster.get(HOSTS, NS, "host-0000").get("status") or {}).get("errorType")
                else None
            ),
            what="a provisioning error",
        )
        assert status["errorType"] == "provisioning error"
        assert status["provisioning"]["state"] in ("available", "provisioning")  # not deployed
        message = status["errorMessage"]
        assert message.startswith(
            "deploying the image failed: the simulated backend could not fetch the checksum "
            f"file {checksum} named in spec.image.checksum: Name or service not known; make "
            "it reachable from the simulated backend or put the checksum itself in "
            "spec.image.checksum"
        ), message
        wait_for(lambda: condition(hoststate(cluster, "host-0000"), "Degraded")["status"] == "True")
        degraded = condition(hoststate(cluster, "host-0000"), "Degraded")
        assert degraded["reason"] == "ProvisioningError"
        assert "spec.image.checksum" in degraded["message"]
        warnings = wait_for(
            lambda: [e for e in events_for(cluster, "host-0000") if e["type"] == "Warning"],
            what="a Warning Event",
        )
        assert any("spec.image.checksum" in e["message"] for e in warnings), warnings
