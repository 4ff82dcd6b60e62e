"""``kubectl get hoststates -o wide`` says what each HostState follows, on the real
kube-apiserver: a Host hoststate drives, a metal3 BareMetalHost baremetal-operator drives
(played through BMO's own CRD, simulation/baremetal_operator.py), and a Node with neither.
Without the SOURCE column the three looked alike but for an empty HOST cell.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from state_controller.cluster.interface import HOSTS, HOSTSTATES, SECRETS
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.controller import HostController
from state_controller.simulation.baremetal_operator import PlayedBMO
from state_controller.simulation.fleet import host_manifest, secret_manifest
from state_controller.simulation.nodes import SimulatedNode
from testbed.control_plane import ControlPlane
from testbed.kube import HOSTS_NS, kubectl
from tests.cluster.test_kubectl_columns import parse_table
from tests.conftest import (
    FAST_BACKOFF,
    NODE_STATE_NAMESPACE,
    empty_namespace,
    remove_nodes,
    wait_for,
)

NS = HOSTS_NS
DRIVEN, OBSERVED, LONE = "rack1-node-07", "rack1-bmh-08", "lone-worker-09"
WAIT = 60.0  # generous: two shared cores


@pytest.fixture
def followed(admin: KubeCluster) -> Iterator[KubeCluster]:
    """One HostState of each source, written by the controller."""
    controller = HostController(
        admin,
        SimulatedProvisioner(),
        config=ControllerConfig(
            namespaces=(NS,), backoff=FAST_BACKOFF, observe_baremetalhosts=True
        ),
    )
    controller.start()
    try:
        host = host_manifest(NS, 7)
        host["metadata"]["name"] = DRIVEN
        host["spec"]["bmc"]["credentialsName"] = f"{DRIVEN}-bmc"
        admin.create(SECRETS, secret_manifest(NS, f"{DRIVEN}-bmc", "admin", "pw"))
        admin.create(HOSTS, host)
        PlayedBMO(admin, NS, OBSERVED).show("registering", started=("register",))
        SimulatedNode(admin, LONE, labels={"node-role.kubernetes.io/worker": ""}).register()
        for namespace, name in ((NS, DRIVEN), (NS, OBSERVED), (NODE_STATE_NAMESPACE, LONE)):
            wait_for(
                lambda n=namespace, m=name: (admin.get(HOSTSTATES, n, m).get("status") or {}).get(
                    "source"
                ),
                WAIT,
                f"the HostState of {name} written",
            )
        yield admin
    finally:
        controller.stop()
        remove_nodes(admin)
        empty_namespace(admin, NS)
        empty_namespace(admin, NODE_STATE_NAMESPACE)


def test_wide_says_what_each_hoststate_follows(
    control_plane: ControlPlane, followed: KubeCluster
) -> None:
    out = kubectl(control_plane, "get", "hoststates", "-A", "-o", "wide").stdout
    print(out)
    rows = {row["NAME"]: row for row in parse_table(out)}
    assert (rows[DRIVEN]["SOURCE"], rows[DRIVEN]["HOST"]) == ("Host", DRIVEN)
    assert (rows[OBSERVED]["SOURCE"], rows[OBSERVED]["HOST"]) == ("BareMetalHost", "")
    assert (rows[LONE]["SOURCE"], rows[LONE]["NODE"]) == ("Node", LONE)
    header = out.splitlines()[0].split()
    assert header.index("SOURCE") == header.index("NAME") + 1  # it leads -o wide
    plain = kubectl(control_plane, "get", "hoststates", "-A").stdout
    assert "SOURCE" not in plain.splitlines()[0]
