"""What the controller writes fits the CRDs, however long a backend's error is: the fast
checks that need no API server. No field the schema lacks (the API server would drop it,
and every reconcile would see a difference to write), and the long texts cut to the
lengths the schema declares.

The proof that the API server takes these statuses whole (nothing refused, nothing
pruned: written and read back equal) and refuses what breaks the schema is
tests/cluster/test_status_fits_schema_on_apiserver.py, against the session's real kube-apiserver."""

from __future__ import annotations

from typing import Any

from state_controller.api import crds
from state_controller.api.base import CONDITION_MESSAGE_MAX, MESSAGE_MAX
from state_controller.books.book import DEFAULT_HISTORY_LIMIT
from state_controller.cluster.schema import prune
from testbed.worst_case import FAILURES, endless_error_statuses, mid_update_status

HOSTS_CRD = "hoststate.io_hosts.yaml"
HOSTSTATES_CRD = "hoststate.io_hoststates.yaml"


def _status_schema(file: str) -> dict[str, Any]:
    crd = crds.generate()[file]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema["properties"]["status"]  # type: ignore[no-any-return]


def test_statuses_of_a_host_with_an_endless_error_declare_every_field() -> None:
    host, hoststate = endless_error_statuses()
    assert prune(host, _status_schema(HOSTS_CRD)) == host, "fields the schema does not declare"
    assert prune(hoststate, _status_schema(HOSTSTATES_CRD)) == hoststate


def test_an_endless_error_is_cut_to_the_lengths_the_schema_declares() -> None:
    host, hoststate = endless_error_statuses()
    assert len(hoststate["history"]) == DEFAULT_HISTORY_LIMIT
    assert {len(h["message"]) for h in hoststate["history"][-5:]} == {MESSAGE_MAX}
    assert hoststate["provisioning"]["errorMessage"].endswith("x…")
    stuck = next(c for c in hoststate["conditions"] if c["type"] == "Stuck")
    assert stuck["status"] == "True" and len(stuck["message"]) == CONDITION_MESSAGE_MAX
    assert len(host["errorMessage"]) == MESSAGE_MAX
    assert host["errorMessage"].startswith(f"{FAILURES - 1}: the backend said: ")


def test_the_status_of_a_host_whose_node_is_mid_update_declares_every_field() -> None:
    """Every field of status.update is declared: one the schema lacked (``bootID``) was
    dropped by the API server, and a restarted controller lost the boot a reboot is
    told from."""
    status = mid_update_status()
    assert status["update"]["bootID"] == "boot-1"
    assert prune(status, _status_schema(HOSTSTATES_CRD)) == status


def test_the_check_above_finds_an_undeclared_field() -> None:
    _, status = endless_error_statuses()
    status["bogus"] = True
    status["history"][0]["bogus"] = True
    pruned = prune(status, _status_schema(HOSTSTATES_CRD))
    assert "bogus" not in pruned and "bogus" not in pruned["history"][0]
