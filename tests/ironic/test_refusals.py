"""What Ironic refuses moves nothing: the Host's state stays, its history records nothing,
no error is counted, and the work goes on once Ironic can take it."""

from __future__ import annotations

import base64

import pytest

from state_controller.cluster.interface import HOSTS, SECRETS, Cluster
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.simulation.fleet import IMAGE, create_fleet
from state_controller.wiring import Observed
from testbed.ironic_server import IronicServer
from tests.ironic.helpers import (
    IronicAPI,
    eventually,
    hold_lock,
    host_status,
    moves,
    new_cluster,
    one_available_host,
    provisioner,
    requests,
    running,
    sample,
    state_of,
    status,
    wait_all,
)

pytestmark = pytest.mark.slow


def test_a_deploy_ironic_refuses_moves_nothing(
    api: IronicAPI, prov: IronicProvisioner, cluster: Cluster, observed: Observed
) -> None:
    ns, name = "refused", "host-0000"
    node = one_available_host(cluster, observed, api, ns)
    before = status(cluster, ns, name)["history"]

    holder = hold_lock(api, node["uuid"])
    cluster.patch(HOSTS, ns, name, {"spec": {"image": dict(IMAGE)}})
    eventually(
        lambda: requests(observed, "provision", "retry_after"),
        what="the deploy refused with 409",
    )
    state, history = state_of(cluster, ns, name), status(cluster, ns, name)["history"]
    errors = host_status(cluster, ns, name).get("errorCount", 0)
    # read while Ironic still refused: the lock is held yet
    assert (api.node(node["uuid"]) or {}).get("reservation"), "lock ended too early"
    assert state == "available"  # the host did not move...
    assert history == before  # ...and nothing was recorded as started
    assert errors == 0
    assert prov.actions[(f"{ns}~{name}", "active")] == 0

    holder.join(timeout=30)
    wait_all(cluster, ns, [name], "provisioned")
    after = status(cluster, ns, name)["history"][len(before) :]
    assert moves(after) == ["provisioning", "provisioned"]
    assert prov.actions[(f"{ns}~{name}", "active")] == 1
    assert host_status(cluster, ns, name).get("errorCount", 0) == 0


def test_bmc_password_rotated_while_deploying_waits_for_the_deploy(
    slow_ironic: IronicServer,
) -> None:
    """Ironic refuses to update a node between provision states (409): the new password
    is sent when the deploy ends, with no registration error on the way."""
    ns, name = "rotate", "host-0000"
    api = IronicAPI(slow_ironic.url)
    prov = provisioner(slow_ironic.url)
    cluster = new_cluster()
    with running(cluster, prov) as observed:
        create_fleet(cluster, ns, 1)
        eventually(
            lambda: (api.node(f"{ns}~{name}") or {}).get("provision_state") == "deploying",
            what="the deploy running in Ironic",
        )
        new_password = base64.b64encode(b"rotated-pw").decode()
        secret = cluster.patch(SECRETS, ns, f"{name}-bmc", {"data": {"password": new_password}})
        version = secret["metadata"]["resourceVersion"]
        eventually(
            lambda: requests(observed, "register", "retry_after"),
            what="the update refused while deploying",
        )
        assert (api.node(f"{ns}~{name}") or {}).get("provision_state") == "deploying"
        wait_all(cluster, ns, [name], "provisioned")
        eventually(
            lambda: host_status(cluster, ns, name)["goodCredentials"]["version"] == version,
            what="the new credentials taken",
        )
        assert host_status(cluster, ns, name).get("errorCount", 0) == 0
        assert not [h for h in status(cluster, ns, name)["history"] if "Fail" in h["reason"]]
        assert sample(observed, "hoststate_errors_total", {"type": "registration error"}) == 0
        assert prov.actions[(f"{ns}~{name}", "active")] == 1
