"""Ironic going away: stopped mid-deploy, its database lost, a node locked by another job."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest

from state_controller.cluster.interface import CONTROLLERS, HOSTS, SECRETS, Cluster, NotFound
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.provisioning.results import Outcome
from state_controller.simulation.fleet import create_fleet, host_manifest, secret_manifest
from state_controller.wiring import Observed
from testbed.ironic_server import IronicServer
from tests.ironic.helpers import (
    IronicAPI,
    condition,
    eventually,
    hold_lock,
    host_status,
    moves,
    new_cluster,
    one_provisioned_host,
    provisioner,
    requests,
    running,
    sample,
    state_of,
    status,
    view_of,
    wait_all,
)

pytestmark = pytest.mark.slow


def no_transition_twice(history: list[dict[str, object]]) -> None:
    seen = Counter((h["from"], h["to"], h["reason"]) for h in history)
    assert [k for k, n in seen.items() if n > 1] == [], history
    seqs = [h["seq"] for h in history]
    assert seqs == list(range(1, len(seqs) + 1)), history


def test_ironic_stopped_mid_deploy(slow_ironic: IronicServer) -> None:
    ns, names = "outage", [f"host-{i:04d}" for i in range(3)]
    prov = provisioner(slow_ironic.url)
    cluster = new_cluster()
    with running(cluster, prov) as observed:
        create_fleet(cluster, ns, len(names))
        wait_all(cluster, ns, names, "provisioning")
        api = IronicAPI(slow_ironic.url)
        eventually(
            lambda: all(
                (api.node(f"{ns}~{n}") or {}).get("provision_state") == "deploying" for n in names
            ),
            what="deploys running in Ironic",
        )
        slow_ironic.stop(grace=0)  # a crash, mid-deploy (the fake deploy takes 4 s)
        for name in names:
            eventually(
                lambda name=name: (
                    condition(cluster, ns, name, "Degraded").get("reason") == "BackendUnavailable"
                ),
                what=f"{name} Degraded BackendUnavailable",
            )
        message = condition(cluster, ns, "host-0000", "Degraded")["message"]
        assert f"Ironic at {slow_ironic.url} is unreachable" in message
        # the controller's own status says it once, for all of them
        eventually(
            lambda: (
                controller_condition(cluster, "Degraded").get("reason") == "ProvisionerUnreachable"
            ),
            what="the controller Degraded: ProvisionerUnreachable",
        )
        seen = controller_status(cluster)["provisioner"]
        assert seen["backend"] == "ironic" and seen["reachable"] is False
        assert seen["apiVersion"].startswith("1.")
        assert "ended" not in seen["lastOutage"]
        assert slow_ironic.url in controller_condition(cluster, "Degraded")["message"]
        assert state_of(cluster, ns, "host-0000") == "provisioning"  # nothing moved
        # stay down a while, counting the retries in a window of 3 s: backed off (at
        # most 1 s apart), not a tight loop, however long the waits above took
        before = requests(observed, "register", "transient")
        time.sleep(3.0)
        transient = requests(observed, "register", "transient") - before
        assert before > 0 and 0 < transient < 20 * len(names)
        slow_ironic.start()
        wait_all(cluster, ns, names, "provisioned", timeout=90)
        for name in names:
            node = api.node(f"{ns}~{name}")
            assert node is not None and node["provision_state"] == "active"
            # the deploy Ironic itself failed on restart was retried once, not duplicated
            assert prov.actions[(f"{ns}~{name}", "active")] == 2
            history = status(cluster, ns, name)["history"]
            no_transition_twice(history)
            assert moves(history)[-2:] == ["provisioning", "provisioned"]
            assert host_status(cluster, ns, name)["errorCount"] == 0
            assert condition(cluster, ns, name, "Degraded")["status"] == "False"
        eventually(  # once Ironic has answered for a while (outages.SETTLE)
            lambda: controller_condition(cluster, "Degraded").get("status") == "False",
            what="the controller no longer Degraded",
        )
        seen = controller_status(cluster)["provisioner"]
        assert seen["reachable"] is True
        outage = seen["lastOutage"]
        assert outage["started"] <= outage["ended"]
        assert controller_status(cluster)["hosts"] == len(names)


def controller_status(cluster: Cluster) -> dict[str, Any]:
    return dict(cluster.get(CONTROLLERS, None, "hoststate-system").get("status") or {})


def controller_condition(cluster: Cluster, kind: str) -> dict[str, Any]:
    try:
        conditions = controller_status(cluster).get("conditions") or []
    except NotFound:
        return {}
    return next((c for c in conditions if c["type"] == kind), {})


def test_ironic_database_lost_hosts_are_adopted(
    ironic: IronicServer,
    api: IronicAPI,
    prov: IronicProvisioner,
    cluster: Cluster,
    observed: Observed,
) -> None:
    ns, names = "wiped", [f"host-{i:04d}" for i in range(3)]
    create_fleet(cluster, ns, len(names))
    wait_all(cluster, ns, names, "provisioned")
    eventually(observed.controller.idle)
    before = {n: host_status(cluster, ns, n)["provisioning"]["id"] for n in names}
    deploys = {n: prov.actions[(f"{ns}~{n}", "active")] for n in names}
    ironic.wipe_database()
    assert api.nodes() == []
    for name in names:  # what a periodic resync (or a controller restart) does
        observed.controller.queue.add(f"{ns}/{name}")
    for name in names:
        eventually(
            lambda name=name: any(
                h["reason"] == "Adopted" for h in status(cluster, ns, name)["history"]
            ),
            what=f"{name} adopted",
        )
    eventually(observed.controller.idle)
    for name in names:
        node = api.node(f"{ns}~{name}")
        assert node is not None and node["provision_state"] == "active"
        assert node["instance_info"]["image_source"].endswith(".qcow2")
        assert host_status(cluster, ns, name)["provisioning"]["id"] == node["uuid"]
        assert node["uuid"] != before[name]  # a new node, adopted...
        assert prov.actions[(f"{ns}~{name}", "active")] == deploys[name]  # ...not redeployed
        assert prov.actions[(f"{ns}~{name}", "adopt")] == 1
        assert state_of(cluster, ns, name) == "provisioned"
        history = status(cluster, ns, name)["history"]
        no_transition_twice(history)
        assert moves(history)[-1] == "provisioned"  # the machine state never left it
        adopted = [h for h in history if h["reason"] == "Adopted"]
        assert len(adopted) == 1 and adopted[0]["from"] == adopted[0]["to"] == "provisioned"
        assert host_status(cluster, ns, name)["errorCount"] == 0


def test_externally_provisioned_hosts_are_adopted_again_after_the_database_is_lost(
    ironic: IronicServer,
) -> None:
    """No image, nothing to deploy: adopted as they run, on the fake deploy interface and on
    ``direct`` (a real one, which checks what adoption needs)."""
    ns, names = "external", ["host-0000", "host-0001"]
    api = IronicAPI(ironic.url)
    prov = provisioner(ironic.url, {"host-0001": {"deploy_interface": "direct"}})
    cluster = new_cluster()

    def adoptions(name: str) -> int:
        return [h["reason"] for h in status(cluster, ns, name)["history"]].count("Adopted")

    with running(cluster, prov) as observed:
        for index, name in enumerate(names):
            host = host_manifest(ns, index, image=False)
            host["spec"]["externallyProvisioned"] = True
            cluster.create(SECRETS, secret_manifest(ns, f"{name}-bmc", "admin", f"pw-{index}"))
            cluster.create(HOSTS, host)
        wait_all(cluster, ns, names, "externally provisioned")
        for name in names:
            eventually(lambda name=name: adoptions(name) == 1, what=f"{name} adopted")
        first = {n: (api.node(f"{ns}~{n}") or {}) for n in names}
        assert [node.get("provision_state") for node in first.values()] == ["active"] * 2
        eventually(observed.controller.idle)
        ironic.wipe_database()
        for name in names:
            observed.controller.queue.add(f"{ns}/{name}")
        for name in names:
            eventually(lambda name=name: adoptions(name) == 2, what=f"{name} adopted again")
        eventually(observed.controller.idle)
        for name in names:
            node = api.node(f"{ns}~{name}")
            assert node is not None and node["provision_state"] == "active"
            assert node["uuid"] != first[name]["uuid"]
            history = status(cluster, ns, name)["history"]
            assert [h["seq"] for h in history] == list(range(1, len(history) + 1)), history
            assert moves(history) == ["registering", "externally provisioned"], history
            assert "had lost this host's node" in history[-1]["message"], history
            assert prov.actions[(f"{ns}~{name}", "adopt")] == 2
            assert prov.actions[(f"{ns}~{name}", "active")] == 0  # never deployed
            assert host_status(cluster, ns, name)["errorCount"] == 0


def test_locked_node_means_retry_after_not_error(
    ironic: IronicServer, api: IronicAPI, cluster: Cluster, observed: Observed
) -> None:
    ns, name = "locked", "host-0000"
    node = one_provisioned_host(cluster, observed, api, ns)
    holder = hold_lock(api, node["uuid"])  # another job, for 10 s
    # the controller is asked to power off while the lock is held...
    cluster.patch(HOSTS, ns, name, {"spec": {"online": False}})
    # ...and so is a provisioner, directly: Ironic answers 409 (after retrying the lock
    # for 2 s itself), the provisioner says come back later, naming the lock holder
    result = provisioner(ironic.url).power(view_of(ns, 0, provider_id=node["uuid"]), on=False)
    assert result.outcome is Outcome.RETRY_AFTER, result
    assert result.delay > 0
    assert "locked by hoststate-ironic" in result.message
    eventually(lambda: requests(observed, "power", "retry_after") >= 1, what="retry_after counted")
    assert host_status(cluster, ns, name)["poweredOn"] is True  # nothing recorded yet
    holder.join(timeout=30)
    eventually(lambda: host_status(cluster, ns, name).get("poweredOn") is False, timeout=60)
    assert (api.node(f"{ns}~{name}") or {}).get("power_state") == "power off"
    history = status(cluster, ns, name)["history"]
    assert not [h for h in history if "Failed" in h["reason"]], history
    assert host_status(cluster, ns, name)["errorCount"] == 0
    assert sample(observed, "hoststate_errors_total", {"type": "power management error"}) == 0
