"""Hosts whose records were lost (a new cluster, a restore without status) meet machines that
Ironic already runs: taken over when the spec says what they run, never wiped. And the
other way round: a machine torn down behind the controller's back is not claimed as running."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from state_controller.api import annotations as ann
from state_controller.cluster.interface import HOSTS, SECRETS
from state_controller.provisioning.results import Outcome
from state_controller.simulation.fleet import create_fleet, host_manifest, secret_manifest
from testbed.ironic_server import IronicServer
from tests.ironic.helpers import (
    IronicAPI,
    eventually,
    host_status,
    moves,
    new_cluster,
    provisioner,
    registered,
    running,
    settled,
    state_of,
    status,
    view_of,
    wait_all,
)

pytestmark = pytest.mark.slow

NS = "lost"


def test_running_hosts_are_taken_over_or_left_alone_never_wiped(ironic: IronicServer) -> None:
    api = IronicAPI(ironic.url)
    names = ["host-0000", "host-0001"]
    first = new_cluster()
    with running(first, provisioner(ironic.url)):
        create_fleet(first, NS, 2)
        wait_all(first, NS, names, "provisioned")
    nodes = {n: api.node(f"{NS}~{n}") or {} for n in names}
    assert all(node.get("provision_state") == "active" for node in nodes.values())

    # a new cluster: host-0000 as before; host-0001 with no image and inspection disabled,
    # the path that would go straight to preparing (cleaning) the machine
    second = new_cluster()
    prov = provisioner(ironic.url)
    with running(second, prov) as observed:
        create_fleet(second, NS, 1)
        bare = host_manifest(NS, 1, image=False)
        bare["metadata"]["annotations"] = {ann.INSPECT: ann.INSPECT_DISABLED}
        second.create(SECRETS, secret_manifest(NS, "host-0001-bmc", "admin", "pw-1"))
        second.create(HOSTS, bare)

        wait_all(second, NS, ["host-0000"], "provisioned")
        history = status(second, NS, "host-0000")["history"]
        assert moves(history) == ["registering", "provisioned"], history
        assert history[-1]["reason"] == "FoundProvisioned"
        assert (
            host_status(second, NS, "host-0000")["provisioning"]["id"] == nodes["host-0000"]["uuid"]
        )

        refused = eventually(
            lambda: (
                s
                if (s := host_status(second, NS, "host-0001")).get("errorType")
                == "registration error"
                else None
            ),
            what="host-0001 refused",
        )
        assert refused["provisioning"]["state"] == "registering"
        assert (
            "already runs an image on this host (http://images.demo.example/os/"
            in (refused["errorMessage"])
        )
        assert "it will not wipe a running host" in refused["errorMessage"]
        assert not refused["provisioning"].get("id")  # not taken over: no ID recorded
        tried = refused["errorCount"]
        eventually(  # a few more backed-off attempts, each refused the same way
            lambda: host_status(second, NS, "host-0001")["errorCount"] >= tried + 2,
            what="two more refused registrations",
        )
        assert sum(prov.actions.values()) == 0  # nothing deployed, cleaned or torn down
        for name in names:
            node = api.node(f"{NS}~{name}")
            assert node is not None
            assert (node["uuid"], node["provision_state"]) == (nodes[name]["uuid"], "active")

        # deleting the host it never took over leaves the machine as it is
        second.delete(HOSTS, NS, "host-0001")
        eventually(lambda: state_of(second, NS, "host-0001") == "<gone>", what="deleted")
        eventually(observed.controller.idle)
        left = api.node(f"{NS}~host-0001")
        assert left is not None and left["provision_state"] == "active"
        assert sum(prov.actions.values()) == 0


def test_a_node_torn_down_behind_our_back_is_not_adopted(
    ironic: IronicServer, api: IronicAPI
) -> None:
    # every call reads Ironic: a read serves the next call for a second, and the
    # teardown below may well take less
    prov = provisioner(ironic.url, fresh_for=0.0)
    view = registered(prov, replace(view_of(NS, 0), automated_cleaning=False))
    deployed = settled(lambda: prov.provision(view), "deployed")
    assert deployed.outcome is Outcome.COMPLETE, deployed
    uuid = view.provider_id
    code, _, text = api.request("PUT", f"/v1/nodes/{uuid}/states/provision", {"target": "deleted"})
    assert code == 202, text
    before = eventually(
        lambda: (
            node
            if (node := api.node(uuid))
            and node["provision_state"] == "available"
            and not node["reservation"]
            else None
        ),
        what="the node torn down (and its lock let go)",
    )
    calls, actions = Counter(prov.calls), Counter(prov.actions)

    result = prov.adopt(view)
    assert result.outcome is Outcome.FAILED, result
    assert result.message == (
        f"the Ironic node {NS}~host-0000 is available: it was torn down outside hoststate and "
        "its image no longer runs; to deploy it again, remove spec.image and set it back"
    )
    assert [call for call in prov.calls - calls if not call.startswith("GET ")] == []
    assert prov.actions == actions  # nothing asked of Ironic...
    after = api.node(uuid)
    assert after is not None
    fields = ("provision_state", "target_provision_state", "updated_at", "instance_info")
    assert {f: after[f] for f in fields} == {f: before[f] for f in fields}  # ...nor changed
