"""Ironic maintenance: a node in someone's hands is waited for, visibly, with no error counted
and nothing written to it; maintenance Ironic set after a cleaning failure is cleared by the
retry."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

import pytest

from state_controller.cluster.interface import HOSTS, Cluster
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.provisioning.results import Outcome, Result
from state_controller.simulation.fleet import IMAGE
from state_controller.wiring import Observed
from testbed.ironic_server import IronicServer
from tests.ironic.helpers import (
    IronicAPI,
    condition,
    eventually,
    host_status,
    one_available_host,
    provisioner,
    registered,
    requests,
    sample,
    settled,
    state_of,
    view_of,
    wait_all,
)

pytestmark = pytest.mark.slow


def test_operator_maintenance_holds_the_host_without_an_error(
    api: IronicAPI,
    prov: IronicProvisioner,
    cluster: Cluster,
    observed: Observed,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ns, name = "maint", "host-0000"
    node = one_available_host(cluster, observed, api, ns)
    status, _, _ = api.request(
        "PUT", f"/v1/nodes/{node['uuid']}/maintenance", {"reason": "replacing a DIMM"}
    )
    assert status == 202

    cluster.patch(HOSTS, ns, name, {"spec": {"image": dict(IMAGE), "online": False}})
    degraded = eventually(
        lambda: (
            c if (c := condition(cluster, ns, name, "Degraded")).get("status") == "True" else None
        ),
        what="Degraded while in maintenance",
    )
    assert degraded["reason"] == "BackendUnavailable"
    assert (
        f"the Ironic node {ns}~{name} is in maintenance (replacing a DIMM)" in (degraded["message"])
    )
    held = requests(observed, "provision", "transient")
    eventually(  # several backed-off retries, each refused while maintenance lasts
        lambda: requests(observed, "provision", "transient") >= held + 3,
        what="three more refused attempts",
    )
    assert state_of(cluster, ns, name) == "available"  # nothing started...
    assert prov.actions[(f"{ns}~{name}", "active")] == 0
    assert host_status(cluster, ns, name)["errorCount"] == 0  # ...and nothing failed
    assert sample(observed, "hoststate_errors_total", {"type": "provisioning error"}) == 0
    # one node in someone's hands is no outage of Ironic: nobody is told it is unreachable
    told = [r.getMessage() for r in caplog.records if getattr(r, "outage", "")]
    assert told == []

    api.request("DELETE", f"/v1/nodes/{node['uuid']}/maintenance")
    wait_all(cluster, ns, [name], "provisioned")
    eventually(lambda: host_status(cluster, ns, name).get("poweredOn") is False)
    assert condition(cluster, ns, name, "Degraded")["status"] == "False"
    assert prov.actions[(f"{ns}~{name}", "active")] == 1


def test_a_node_in_maintenance_is_not_written_to(ironic: IronicServer, api: IronicAPI) -> None:
    """Ironic would take a new instance_info from a node in maintenance (it refuses only
    the deploy): written before the refusal, it would be written again on every retry."""
    # every call reads Ironic: a read serves the next call for a second, and a read from
    # before the maintenance is the race test_http fakes
    prov = provisioner(ironic.url, fresh_for=0.0)
    view = registered(prov, replace(view_of("held", 0), automated_cleaning=False))
    prepared = settled(lambda: prov.prepare(view), "available")
    assert prepared.outcome is Outcome.COMPLETE, prepared
    uuid = view.provider_id
    code, _, text = api.request("PUT", f"/v1/nodes/{uuid}/maintenance", {"reason": "DIMM"})
    assert code == 202, text
    before = eventually(
        lambda: node if (node := api.node(uuid)) and node["maintenance"] else None,
        what="the node in maintenance",
    )
    calls = Counter(prov.calls)

    for _ in range(2):  # the first attempt and a retry
        result = prov.provision(view)
        assert result.outcome is Outcome.TRANSIENT, result
        assert "the Ironic node held~host-0000 is in maintenance (DIMM)" in result.message

    assert [call for call in prov.calls - calls if not call.startswith("GET ")] == []
    after = api.node(uuid)
    assert after is not None
    fields = ("provision_state", "updated_at", "instance_info", "maintenance_reason")
    assert {f: after[f] for f in fields} == {f: before[f] for f in fields}
    assert before["provision_state"] == "available" and not before["instance_info"]


def test_cleaning_failure_maintenance_is_cleared_by_the_retry(
    api: IronicAPI, prov: IronicProvisioner
) -> None:
    view = view_of("cleanfail", 0)

    def until(call: Callable[[], Result], outcome: Outcome, timeout: float = 30.0) -> Result:
        deadline = time.monotonic() + timeout
        while True:
            result = call()
            if result.outcome is outcome or time.monotonic() > deadline:
                return result
            time.sleep(0.2)

    registered = until(lambda: prov.register(view, credentials_changed=True), Outcome.COMPLETE)
    assert registered.outcome is Outcome.COMPLETE, registered
    uuid = registered.provider_id
    # a manual cleaning step that fails at once; Ironic puts the node in maintenance for it
    status, _, text = api.request(
        "PUT",
        f"/v1/nodes/{uuid}/states/provision",
        {
            "target": "clean",
            "clean_steps": [
                {"interface": "bios", "step": "apply_configuration", "args": {"settings": [{}]}}
            ],
        },
    )
    assert status == 202, text

    def clean_failed() -> dict[str, object] | None:
        node = api.node(f"cleanfail~{view.name}")
        return node if node and node["provision_state"] == "clean failed" else None

    node = eventually(clean_failed, what="clean failed")
    assert (node["maintenance"], node["fault"]) == (True, "clean failure")

    # (a read of the node under a second old may still say manageable: Ironic refuses the
    # provide, the provisioner reads again and says retry_after; the next call sees it)
    first = until(lambda: prov.prepare(view), Outcome.FAILED, timeout=10)
    assert first.outcome is Outcome.FAILED
    assert first.message.startswith("cleaning the host failed:"), first
    done = until(lambda: prov.prepare(view), Outcome.COMPLETE)
    assert done.outcome is Outcome.COMPLETE, done
    node = api.node(f"cleanfail~{view.name}")
    assert node is not None
    assert (node["provision_state"], node["maintenance"]) == ("available", False)
