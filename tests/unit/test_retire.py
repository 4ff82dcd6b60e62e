"""``adopt --retire``: the commands keep every owner and finalizer that is not
baremetal-operator's, and a BareMetalHost not safe to delete is refused with the reason
and the way on. What baremetal-operator v0.13.2 leaves on a host is as its source writes
it (``pkg/secretutils/secret_manager.go``, ``claimSecret``;
``internal/controller/metal3.io/baremetalhost_controller.go``); the commands themselves
are run on a real kube-apiserver in ``tests/ironic/test_retire_on_ironic.py``."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from state_controller.adopt.retire import FINALIZER, SECRET_FINALIZER, retirement
from state_controller.api import annotations as ann
from state_controller.api.baremetalhost import PAUSED
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import BAREMETALHOSTS, HOSTS, SECRETS
from state_controller.cluster.schema import validators
from state_controller.simulation.fleet import host_manifest

NS = "metal"


def handed_over(cluster: EmbeddedCluster, **spec: Any) -> dict[str, Any]:
    bmh = cluster.create(BAREMETALHOSTS, {
        "apiVersion": BAREMETALHOSTS.api_version, "kind": BAREMETALHOSTS.kind,
        "metadata": {"name": "host-0000", "namespace": NS, "finalizers": [FINALIZER],
                     "annotations": {PAUSED: "hoststate.io/adopt",
                                     ann.HANDED_OVER_TO: f"Host {NS}/host-0000"}},
        "spec": {"bmc": {"address": "redfish://192.0.2.10/redfish/v1/Systems/1",
                         "credentialsName": "shared-bmc"},
                 "bootMACAddress": "52:54:00:00:00:01", "online": True, **spec},
    })  # fmt: skip
    owner = {"apiVersion": BAREMETALHOSTS.api_version, "kind": "BareMetalHost",
             "name": "host-0000", "uid": bmh["metadata"]["uid"]}  # fmt: skip
    other = {**owner, "name": "host-0001", "uid": "uid-of-another-bmh"}
    cluster.create(SECRETS, {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "shared-bmc", "namespace": NS, "ownerReferences": [owner, other],
                     "finalizers": [SECRET_FINALIZER, "example.com/keep"]},
        "stringData": {"username": "u", "password": "p"},
    })  # fmt: skip
    host = host_manifest(NS, 0)
    host["metadata"]["annotations"] = {ann.ADOPTED_FROM: bmh["metadata"]["uid"]}
    cluster.create(HOSTS, host)
    return bmh


def merge_patch(command: str) -> dict[str, Any]:
    words = shlex.split(command)
    patch: dict[str, Any] = json.loads(words[words.index("-p") + 1])
    return patch


def test_the_secret_keeps_its_other_owners_and_finalizers() -> None:
    with EmbeddedCluster(validators=validators()) as cluster:
        handed_over(cluster)
        done = retirement(cluster, NS, "host-0000")
        assert done.refusal == "", done.refusal
        secret, bmh, delete = done.commands  # no HardwareData here: no command for it
        assert shlex.split(secret)[:4] == ["kubectl", "patch", "secret", "shared-bmc"]
        kept = merge_patch(secret)["metadata"]
        assert [o["name"] for o in kept["ownerReferences"]] == ["host-0001"]
        assert kept["finalizers"] == ["example.com/keep"]
        assert merge_patch(bmh) == {"metadata": {"finalizers": None}}
        assert delete == f"kubectl delete bmh host-0000 -n {NS}"


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"metadata": {"annotations": {PAUSED: None}}}, "pause it again first"),
        ({"metadata": {"annotations": {ann.HANDED_OVER_TO: None}}}, "run adopt first"),
        (
            {"spec": {"consumerRef": {"kind": "Metal3Machine", "name": "m", "namespace": NS}}},
            "spec.consumerRef",
        ),
    ],
)
def test_a_baremetalhost_not_safe_to_delete_is_refused(change: dict[str, Any], says: str) -> None:
    with EmbeddedCluster(validators=validators()) as cluster:
        handed_over(cluster)
        cluster.patch(BAREMETALHOSTS, NS, "host-0000", change)
        done = retirement(cluster, NS, "host-0000")
        assert says in done.refusal and done.commands == []
        assert done.text().startswith(f"{NS}/host-0000: not retired: ")


def test_no_host_adopted_from_it_is_refused() -> None:
    """The machine would be nobody's: a Host of that name not adopted from it does not do."""
    with EmbeddedCluster(validators=validators()) as cluster:
        handed_over(cluster)
        cluster.patch(
            HOSTS, NS, "host-0000", {"metadata": {"annotations": {ann.ADOPTED_FROM: "other"}}}
        )
        assert (
            "no Host metal/host-0000 adopted from it"
            in retirement(cluster, NS, "host-0000").refusal
        )
