"""The controller on a real control plane: its ServiceAccount, kubectl's view, leader
election across processes, and an API server restart under a running controller."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from state_controller.api import API_VERSION
from state_controller.api.columns import (
    HOST_COLUMNS,
    HOSTSTATE_COLUMNS,
    NODEPOOL_COLUMNS,
    Column,
)
from state_controller.api.timefmt import parse_rfc3339
from state_controller.cluster.interface import HOSTS, HOSTSTATES, NODEPOOLS, SECRETS, ApiError
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.controller import HostController
from state_controller.screens.tables import rows
from state_controller.simulation.fleet import create_fleet
from state_controller.simulation.nodes import SimulatedNode
from testbed.control_plane import ControlPlane
from testbed.kube import HOSTS_NS, host_states, kubectl, wait_for_garbage_collection
from testbed.scenarios import wait_all_in
from tests.conftest import FAST_BACKOFF, remove_nodes, wait_for

NS = HOSTS_NS
SA = "hoststate-controller"
SA_NS = "hoststate-system"


def as_service_account(plane: ControlPlane) -> KubeCluster:
    token = kubectl(plane, "create", "token", SA, "-n", SA_NS, "--duration=1h").stdout.strip()
    configuration = client.Configuration(host=plane.url)
    configuration.api_key = {"authorization": token}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    configuration.ssl_ca_cert = str(plane.ca_file)
    return KubeCluster(client.ApiClient(configuration))


def phases(kube: KubeCluster) -> dict[str, str]:
    """HostState phases by name; a HostState created but not yet written shows ``""``."""
    return {
        s["metadata"]["name"]: (s.get("status") or {}).get("phase", "")
        for s in kube.list(HOSTSTATES, NS)[0]
    }


def assert_no_transition_twice(kube: KubeCluster) -> None:
    for state in kube.list(HOSTSTATES, NS)[0]:
        history = state["status"]["history"]
        seqs = [h["seq"] for h in history]
        assert seqs == sorted(set(seqs)), state["metadata"]["name"]
        moves = [(h["from"], h["to"]) for h in history if h["from"] != h["to"]]
        assert len(moves) == len(set(moves)), (state["metadata"]["name"], moves)


def test_controller_works_as_its_service_account_and_nothing_more(
    control_plane: ControlPlane, manifests: Any, admin: KubeCluster
) -> None:
    identity = as_service_account(control_plane)
    controller = HostController(
        identity,
        SimulatedProvisioner(),
        config=ControllerConfig(workers=2, namespaces=(NS,), backoff=FAST_BACKOFF),
    )
    controller.start()
    try:
        create_fleet(admin, NS, 3)
        wait_all_in(admin, NS, "provisioned", reported=False)
        admin.delete(HOSTS, NS, "host-0000")
        wait_for(lambda: "host-0000" not in host_states(admin), what="deleted through finalizer")
        # Nodes: one on a Host (spec.node patched), one on none (a HostState of its own,
        # its pods watched once cordoned), all with the ServiceAccount's rights only
        SimulatedNode(admin, "host-0001", provider_id=f"metal3://{NS}/host-0001/m-1").register()
        lone = SimulatedNode(admin, "lone-1")
        lone.register()
        lone.cordon()
        wait_for(
            lambda: admin.get(HOSTSTATES, NS, "host-0001")["spec"]["node"] == "host-0001",
            what="the Node named in its Host's HostState",
        )
        wait_for(
            lambda: (
                admin.get(HOSTSTATES, SA_NS, "lone-1")["status"]["update"]["step"]
                == "applying update"
            ),
            what="the node-only HostState drained",
        )
        lone.delete()
        wait_for(
            lambda: not [s for s in admin.list(HOSTSTATES, SA_NS)[0]],
            what="the node-only HostState deleted with its Node",
        )
    finally:
        controller.stop()
        remove_nodes(admin)
    for forbidden in (
        lambda: identity.get(SECRETS, "kube-system", "anything"),
        lambda: identity.list(SECRETS, "default"),
        lambda: identity.list(HOSTS, None),
    ):
        with pytest.raises(ApiError) as refused:
            forbidden()
        assert refused.value.code == 403
    identity.close()


def same_cells_as_kubectl(
    control_plane: ControlPlane,
    args: list[str],
    objs: list[dict[str, Any]],
    columns: tuple[Column, ...],
    wide: bool,
) -> str:
    """What ``kubectl args`` printed, checked cell by cell against our own
    table of ``objs``; an age may tick over while kubectl runs, so each cell may be ours
    from just before or just after it."""
    before = rows(objs, columns, wide=wide)
    printed = kubectl(control_plane, *args).stdout
    after = rows(objs, columns, wide=wide)
    table = parse_table(printed)
    assert list(table[0]) == before[0]
    theirs = [list(r.values()) for r in table]
    assert len(theirs) == len(before) - 1, printed
    for row, early, late in zip(theirs, before[1:], after[1:], strict=True):
        assert all(c in (e, la) for c, e, la in zip(row, early, late, strict=True)), (
            row, early, late,
        )  # fmt: skip
    return printed


def test_kubectl_get_shows_the_printer_columns(
    control_plane: ControlPlane, admin: KubeCluster
) -> None:
    controller = HostController(
        admin, SimulatedProvisioner(), config=ControllerConfig(namespaces=(NS,))
    )
    controller.start()
    try:
        create_fleet(admin, NS, 2)
        wait_all_in(admin, NS, "provisioned", reported=False)
        wait_for(lambda: set(phases(admin).values()) == {"Provisioned"})
        node = SimulatedNode(admin, "host-0001", provider_id=f"metal3://{NS}/host-0001/m-1")
        node.register()
        node.cordon()
        wait_for(lambda: phases(admin)["host-0001"] == "Updating")
        wait_for(
            lambda: (
                (admin.get(NODEPOOLS, None, "unlabeled").get("status") or {}).get(
                    "updatingMachineCount"
                )
                == 1
            ),
            what="the pool's count written (at most once a second)",
        )
        wait_for(  # a cordoned Node is drained once its pods are counted (on another thread)
            lambda: (
                admin.get(HOSTSTATES, NS, "host-0001")["status"]["update"]["step"]
                == "applying update"
            ),
            what="host-0001 drained",
        )
        wait_for(controller.idle)
        printed = same_cells_as_kubectl(
            control_plane, ["get", "nodepools", "-o", "wide"],
            admin.list(NODEPOOLS)[0], NODEPOOL_COLUMNS, True,
        )  # fmt: skip
        pools = parse_table(printed)
        assert pools == [
            {
                "NAME": "unlabeled",
                "MACHINES": "1",
                "UPDATED": "0",
                "UPDATING": "1",
                "DEGRADED": "0",
                "UNAVAILABLE": "1",
                "AGE": pools[0]["AGE"],
                "ENDS": "",
                "CONFIG": "",
                "LABEL": "node-role.kubernetes.io/*",
            },
        ]  # fmt: skip  (no update learned yet: no estimate)
    finally:
        controller.stop()
        remove_nodes(admin)
    # a HostState no controller wrote yet: kubectl leaves its missing dates blank
    unwritten = {"metadata": {"name": "zz-unwritten", "namespace": NS}, "spec": {"host": "zz"}}
    admin.create(HOSTSTATES, {"apiVersion": API_VERSION, "kind": "HostState", **unwritten})
    for kind, columns, resource in (
        ("hoststates", HOSTSTATE_COLUMNS, HOSTSTATES),
        ("hosts", HOST_COLUMNS, HOSTS),
    ):
        for wide in (False, True):
            args = ["get", kind, "-n", NS] + (["-o", "wide"] if wide else [])
            printed = same_cells_as_kubectl(
                control_plane, args, admin.list(resource, NS)[0], columns, wide
            )
            assert wide or max(map(len, printed.splitlines())) <= 120, printed  # fits a terminal
    # state-controller get reads the same cluster and prints the same table, cell by cell
    for kind in ("hoststates", "hosts"):
        printed = kubectl(control_plane, "get", kind, "-n", NS, "-o", "wide").stdout
        mine = subprocess.run(
            [sys.executable, "-m", "state_controller.cli", "get", kind, "-n", NS, "-o", "wide",
             "--kubeconfig", str(control_plane.kubeconfig)],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
        ages = {"AGE", "IN-STATE", "IN-STEP"}  # relative times move on between the two calls
        assert [{k: v for k, v in row.items() if k not in ages} for row in parse_table(mine)] == [
            {k: v for k, v in row.items() if k not in ages} for row in parse_table(printed)
        ]
    one = subprocess.run(
        [sys.executable, "-m", "state_controller.cli", "get", "hs", "host-0001", "-n", NS,
         "--kubeconfig", str(control_plane.kubeconfig)],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert [row["NAME"] for row in parse_table(one)] == ["host-0001"]
    state = parse_table(kubectl(control_plane, "get", "hs", "-n", NS, "-o", "wide").stdout)[0]
    assert (state["PHASE"], state["STATE"], state["STUCK"], state["ERRORS"]) == (
        "Provisioned", "provisioned", "False", "0",
    )  # fmt: skip
    assert [state[c] for c in ("REGISTERED", "INSPECTED", "PREPARED", "PROVISIONED")] == [
        "True"
    ] * 4
    assert (state["NODE"], state["UPDATED"], state["STEP"]) == ("", "", "")  # no Node
    updating = parse_table(kubectl(control_plane, "get", "hs", "-n", NS, "-o", "wide").stdout)[1]
    assert (updating["NODE"], updating["PHASE"], updating["STEP"]) == (
        "host-0001", "Updating", "applying update",
    )  # fmt: skip
    assert (updating["UPDATED"], updating["UPDATEEXECUTED"], updating["DRAINED"]) == (
        "False", "Unknown", "True",
    )  # fmt: skip


def parse_table(text: str) -> list[dict[str, str]]:
    """kubectl's table, cut at the header's column starts (cells may be empty)."""
    lines = text.rstrip("\n").splitlines()
    header = lines[0]
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    names = header.split()
    out = []
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        out.append(dict(zip(names, cells, strict=True)))
    return out


def test_apiserver_restart_under_a_running_controller(
    control_plane: ControlPlane, admin: KubeCluster
) -> None:
    sim = SimulatedProvisioner(timings=Timings(provision=4.0))
    controller = HostController(
        admin, sim, config=ControllerConfig(namespaces=(NS,), backoff=FAST_BACKOFF)
    )
    controller.start()
    try:
        create_fleet(admin, NS, 5)
        wait_all_in(admin, NS, "provisioning", reported=False)
        control_plane.stop_apiserver()
        time.sleep(2)
        control_plane.start_apiserver()
        wait_all_in(admin, NS, "provisioned", timeout=60, reported=False)
        wait_for(controller.idle)
    finally:
        controller.stop()
    assert_no_transition_twice(admin)
    for i in range(5):
        address = f"redfish://bmc-{i:04d}.demo.example/redfish/v1/Systems/1"
        assert sim.machine(address).started["provision"] == 1  # polled, never restarted
    wait_for_garbage_collection(control_plane)  # the restarted GC rediscovers CRDs (≤30 s)


class Replica:
    """`state-controller run --leader-elect` in its own process."""

    def __init__(self, plane: ControlPlane, workdir: Path, name: str) -> None:
        self.log = workdir / f"{name}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "state_controller.cli", "run",
             "--kubeconfig", str(plane.kubeconfig), "--namespace", NS,
             "--leader-elect", "--leader-election-namespace", SA_NS,
             "--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "1",
             "--metrics-bind-address", "127.0.0.1:0",
             "--health-probe-bind-address", "127.0.0.1:0"],
            stdout=subprocess.DEVNULL, stderr=self.log.open("w"), stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip

    def port(self, what: str) -> int:
        def found() -> int | None:
            match = re.search(rf"{what}: 127\.0\.0\.1:(\d+)", self.log.read_text())
            return int(match.group(1)) if match else None

        return int(wait_for(found, what=f"{what} port in {self.log.name}"))

    def ready(self) -> bool:
        return self.get("/readyz")[0] == 200

    def get(self, path: str) -> tuple[int, str]:
        import urllib.error
        import urllib.request

        port = self.port("probes" if path.endswith("z") else "metrics")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, ""

    def reconciles(self) -> float:
        _, body = self.get("/metrics")
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in body.splitlines()
            if line.startswith("controller_runtime_reconcile_total{")
        )

    def leading(self) -> float:
        """``leader_election_master_status`` of the lease, as this replica reports it."""
        _, body = self.get("/metrics")
        [value] = [
            float(line.rsplit(" ", 1)[1])
            for line in body.splitlines()
            if line.startswith('leader_election_master_status{name="hoststate-controller"}')
        ]
        return value

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


def lease_spec(plane: ControlPlane) -> dict[str, Any]:
    done = kubectl(
        plane, "get", "lease", "hoststate-controller", "-n", SA_NS, "-o", "json", check=False
    )
    return dict(json.loads(done.stdout)["spec"]) if done.returncode == 0 else {}


def lease_holder(plane: ControlPlane) -> str:
    return str(lease_spec(plane).get("holderIdentity", ""))


def test_one_leader_reconciles_and_the_other_takes_over(
    control_plane: ControlPlane, admin: KubeCluster, tmp_path: Path, manifests: Any
) -> None:
    replicas = [Replica(control_plane, tmp_path, name) for name in ("a", "b")]
    try:
        for replica in replicas:
            wait_for(replica.ready, timeout=30, what="ready")
        holder = wait_for(lambda: lease_holder(control_plane), timeout=30, what="a leader")
        create_fleet(admin, NS, 3)
        wait_all_in(admin, NS, "provisioned", timeout=30, reported=False)
        # a reconcile is counted after both its status writes: wait for the count itself
        wait_for(lambda: sum(r.reconciles() for r in replicas) >= 3, what="reconciles counted")
        counts = [r.reconciles() for r in replicas]
        logs = "\n".join(r.log.read_text()[-1500:] for r in replicas)
        assert sorted(c > 0 for c in counts) == [False, True], f"{counts}\n{logs}"  # one acts
        leader = replicas[counts.index(max(counts))]
        standby = replicas[1 - replicas.index(leader)]
        assert [r.leading() for r in (leader, standby)] == [1.0, 0.0]

        leader.kill()
        killed = time.time()
        spec = wait_for(
            lambda: (
                (s := lease_spec(control_plane)).get("holderIdentity") not in (None, "", holder)
                and s
            ),
            timeout=30,
            what="failover",
        )
        # as the Lease says it (its acquireTime), not as late as a poll of it saw it
        acquired = parse_rfc3339(spec.get("acquireTime"))
        assert acquired is not None, spec
        takeover = acquired - killed
        print(f"leader killed; lease taken over in {takeover:.1f}s")
        assert takeover <= 4 + 2 * 1, f"takeover took {takeover:.1f}s (lease 4 s, retry 1 s)"
        admin.create(SECRETS, _secret(3))
        admin.create(HOSTS, _host(3))
        wait_for(lambda: host_states(admin).get("host-0003") == "provisioned", timeout=30)
        # Host.status is written before the HostState is created and filled in
        wait_for(lambda: phases(admin).get("host-0003") == "Provisioned", what="its HostState")
        assert standby.reconciles() > 0
        assert standby.leading() == 1.0
        assert_no_transition_twice(admin)
    finally:
        for replica in replicas:
            replica.kill()


def _secret(index: int) -> dict[str, Any]:
    from state_controller.simulation.fleet import secret_manifest

    return secret_manifest(NS, f"host-{index:04d}-bmc", "admin", "pw")


def _host(index: int) -> dict[str, Any]:
    from state_controller.simulation.fleet import host_manifest

    return host_manifest(NS, index)
