"""The longest statuses the controller writes fit the CRDs as the real kube-apiserver
enforces them: written through the status subresource and read back equal (nothing
refused, nothing pruned), and a status that breaks the schema is refused with every
offending field named. tests/unit/test_status_fits_schema.py holds the fast checks
against the generated schema; this is the proof."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from state_controller.api import API_VERSION
from state_controller.api.base import MESSAGE_MAX
from state_controller.cluster.interface import HOSTS, HOSTSTATES, Invalid, Resource
from state_controller.cluster.kube import KubeCluster
from state_controller.pivot.target import ensure_namespaces
from testbed.control_plane import ControlPlane
from testbed.worst_case import endless_error_statuses, mid_update_status
from tests.conftest import empty_namespace

NS = "status-limits"  # this module's own: no other test writes here


@pytest.fixture
def kube(control_plane: ControlPlane) -> Iterator[KubeCluster]:
    cluster = KubeCluster.from_kubeconfig(str(control_plane.kubeconfig))
    ensure_namespaces(cluster, [NS])
    yield cluster
    empty_namespace(cluster, NS)
    cluster.close()


def created(kube: KubeCluster, resource: Resource, name: str) -> dict[str, Any]:
    obj = {"apiVersion": API_VERSION, "kind": resource.kind, "spec": {}}
    return kube.create(resource, {**obj, "metadata": {"name": name, "namespace": NS}})


def written(kube: KubeCluster, resource: Resource, name: str, status: dict[str, Any]) -> Any:
    """``status`` written to a new object's status subresource; the status read back."""
    obj = created(kube, resource, name)
    answered = kube.update_status(resource, {**obj, "status": copy.deepcopy(status)})
    stored = kube.get(resource, NS, name)
    assert answered["status"] == stored["status"]
    return stored["status"]


def test_the_statuses_of_a_host_with_an_endless_error_are_stored_whole(
    kube: KubeCluster,
) -> None:
    host, hoststate = endless_error_statuses()
    assert written(kube, HOSTS, "endless-error", host) == host
    assert written(kube, HOSTSTATES, "endless-error", hoststate) == hoststate


def test_the_status_of_a_host_whose_node_is_mid_update_is_stored_whole(
    kube: KubeCluster,
) -> None:
    """``bootID`` included: when the schema lacked it the server dropped it, and a
    restarted controller lost the boot a reboot is told from."""
    status = mid_update_status()
    assert status["update"]["bootID"] == "boot-1"
    assert written(kube, HOSTSTATES, "mid-update", status) == status


def test_a_status_breaking_the_schema_is_refused_naming_each_field(kube: KubeCluster) -> None:
    _, status = endless_error_statuses()
    status["history"][0]["message"] = "y" * (MESSAGE_MAX + 1)
    status["history"][1]["at"] = "yesterday"
    status["conditions"][0]["reason"] = ""
    status["lastSeq"] = -1
    obj = created(kube, HOSTSTATES, "refused")
    with pytest.raises(Invalid) as caught:
        kube.update_status(HOSTSTATES, {**obj, "status": status})
    error = caught.value
    said = {  # each field, and the start of what the server says of it
        "status.history[0].message": "Too long",
        "status.history[1].at": 'Invalid value: "yesterday"',
        "status.conditions[0].reason": 'Invalid value: ""',
        "status.lastSeq": "Invalid value: -1",
    }
    assert {c.field for c in error.causes} == set(said), error.message
    for field, words in said.items():
        assert f"{field}: {words}" in error.message, error.message
    assert "status" not in kube.get(HOSTSTATES, NS, "refused")  # nothing of it stored


def test_an_undeclared_status_field_is_pruned(kube: KubeCluster) -> None:
    _, status = endless_error_statuses()
    bogus = copy.deepcopy(status)
    bogus["bogus"] = True
    bogus["history"][0]["bogus"] = True
    assert written(kube, HOSTSTATES, "bogus", bogus) == status
