"""Bootstrap through a real Ironic, a kill -9 mid-deploy, a pivot into a real cluster: the
Ironic nodes are the ones the bootstrap made, inspected and deployed once.

Ironic itself counts what a controller did to a node: a registration creates it (its
UUID and ``created_at``), an inspection sets ``inspection_started_at``, a deploy (and
any later provisioning action, adoption included) moves ``provision_updated_at``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from state_controller.cluster.interface import HOSTS, HOSTSTATES
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.ironic import node_name_prefix
from state_controller.runtime.config import ControllerConfig
from state_controller.wiring import observed_controller
from testbed.bootstrap import (
    arrived,
    assert_continuous,
    bootstrap_process,
    provisioned,
    store_objects,
    store_states,
    write_hosts_file,
)
from testbed.control_plane import ControlPlane
from testbed.ironic_server import IronicServer
from testbed.processes import cli
from tests.conftest import FAST_BACKOFF, empty_namespace, wait_for
from tests.ironic.helpers import IronicAPI, provisioner, requests

pytestmark = pytest.mark.slow

NS = "ironic-boot"
# Ironic clears inspection_started_at when an inspection finishes and sets
# inspection_finished_at: together they show whether a node was inspected again
FIELDS = (
    "uuid",
    "created_at",
    "inspection_started_at",
    "inspection_finished_at",
    "provision_updated_at",
)


def _nodes(api: IronicAPI, names: list[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for name in names:
        node = api.node(node_name_prefix(NS) + name)
        if node is not None:
            out[name] = {f: node.get(f) for f in (*FIELDS, "provision_state")}
    return out


def test_bootstrap_through_ironic_killed_then_pivoted_redoes_nothing(
    control_plane: ControlPlane, slow_ironic: IronicServer, tmp_path: Path
) -> None:
    api = IronicAPI(slow_ironic.url)
    state_dir = tmp_path / "bootstrap"
    hosts_file = tmp_path / "hosts.yaml"
    names = write_hosts_file(hosts_file, NS, 3)
    ironic_flags = [
        "--provisioner", "ironic", "--ironic-url", slow_ironic.url,
        "--ironic-driver", "fake-hardware", "--ironic-poll-delay", "0.3",
    ]  # fmt: skip

    with bootstrap_process(state_dir, tmp_path / "bootstrap.log", ironic_flags) as boot:
        boot.start("--hosts", str(hosts_file))
        wait_for(
            lambda: "provisioning" in store_states(state_dir).values(),
            timeout=120,
            what=f"a host deploying; log:\n{boot.tail()}",
        )
        boot.kill9()
        at_kill = _nodes(api, names)
        assert set(store_states(state_dir).values()) - {"provisioned"}  # killed mid-way
        boot.start("--exit-when-settled")
        assert boot.wait(timeout=180) == 0, boot.tail()

    settled = _nodes(api, names)
    assert {n["provision_state"] for n in settled.values()} == {"active"}, settled
    for name, before in at_kill.items():
        # the same node, registered and inspected once, whatever the kill interrupted
        assert (
            settled[name]["uuid"] == before["uuid"]
            and settled[name]["created_at"] == (before["created_at"])
        ), name
        if before["inspection_finished_at"]:  # inspected before the kill: not again
            assert settled[name]["inspection_finished_at"] == before["inspection_finished_at"]
        elif before["inspection_started_at"]:  # inspecting at the kill: finished, not begun again
            assert settled[name]["inspection_finished_at"], name
            assert settled[name]["inspection_started_at"] in (None, before["inspection_started_at"])
    for state in store_objects(state_dir).values():
        assert_continuous(state, pivots=0)

    kube = KubeCluster.from_kubeconfig(str(control_plane.kubeconfig))
    kubeconfig = str(control_plane.kubeconfig)
    moved = cli("pivot", "--state-dir", str(state_dir), "--kubeconfig", kubeconfig)
    assert moved.returncode == 0, moved.stderr
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, namespaces=(NS,))
    observed = observed_controller(kube, provisioner(slow_ironic.url), config)
    observed.controller.start()
    try:
        wait_for(lambda: arrived(kube, NS, names, 1), timeout=60, what="arrivals")
        wait_for(observed.controller.idle, timeout=30)
        assert provisioned(kube, NS, names)
        for state in kube.list(HOSTS, NS)[0]:
            assert not (state["metadata"].get("annotations") or {})
        for name in names:
            assert_continuous(kube.get(HOSTSTATES, NS, name), pivots=1)
        # Ironic saw no second registration, inspection, deploy or adoption
        after = _nodes(api, names)
        assert {n: {f: v[f] for f in FIELDS} for n, v in after.items()} == {
            n: {f: v[f] for f in FIELDS} for n, v in settled.items()
        }
        # (adopt is asked of every provisioned host and answers at once for an active
        # node: provision_updated_at above shows that Ironic adopted nothing)
        for operation in ("inspect", "provision"):
            assert requests(observed, operation, "complete") == 0, operation
            assert requests(observed, operation, "continuing") == 0, operation
    finally:
        observed.controller.stop()
        empty_namespace(kube, NS)
        kube.close()
