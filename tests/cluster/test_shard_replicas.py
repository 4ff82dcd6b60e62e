"""`state-controller run --shard` in processes of their own on a real control plane: each
replica holds its shard's Lease, one of them the sharder's; the Hosts are shared out by
label between them and each is provisioned; a replica killed with SIGKILL has its hosts
given to the one left once its Lease has died (twice its duration without a renew),
the sharder moving with it when the killed replica held that Lease too; a third that
joins has its share drained from the one left, and given back at once when it stops
cleanly (it gives up its Lease); one of three killed while its hosts are mid-flight.

The first tests give each replica simulated machines of its own (in its memory), so the
one left adopts the hosts it is given ("adopted the running host, not deployed"); the
others share one backend, as replicas share one Ironic (``--simulated-hardware`` on one
file): a host that moves mid-flight carries on with its machine, and no state is
entered twice."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from state_controller.cluster.interface import (
    CONTROLLERS,
    HOSTS,
    HOSTSTATES,
    LEASES,
    NODEPOOLS,
    NotFound,
)
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.hardware_file import HardwareFile
from state_controller.runtime.shards.sharder import SHARDER_LEASE
from state_controller.sharding.leases import LEASE_PREFIX, SHARD_LABEL
from state_controller.sharding.ring import Ring
from state_controller.simulation.fleet import create_fleet
from state_controller.simulation.nodes import SimulatedNode
from testbed.control_plane import ControlPlane
from testbed.kube import HOSTS_NS
from testbed.scenarios import pool, step_of, wait_all_in
from testbed.shards import SHARD_NS, ShardProcess, lease_holder, shard_argv, shard_members
from testbed.tcp_proxy import TcpProxy
from tests.conftest import wait_for

NS = HOSTS_NS
LEASE = 4  # seconds: a dead shard's hosts move 8 s after its last renew
FLEET = 12
SCALED_FLEET = 30  # at the demo's timings: a host takes about 10 s to provision
KILLED_FLEET = 60  # at the demo's timings, on three replicas


class Shard(ShardProcess):
    """`state-controller run --shard NAME` in its own process, started at once."""

    def __init__(
        self,
        plane: ControlPlane,
        workdir: Path,
        name: str,
        *,
        kubeconfig: Path | None = None,
        timings: str = "zero",
        hardware: Path | None = None,  # one backend shared with the replicas given it too
        nodes: bool = False,  # follow Nodes (node-only HostStates in SHARD_NS)
    ) -> None:
        argv = shard_argv(
            name,
            kubeconfig=kubeconfig or plane.kubeconfig,
            namespace=NS,
            lease_namespace=SHARD_NS,
            lease_duration=LEASE,
            timings=timings,
            hardware=hardware,
            nodes=nodes,
            node_state_namespace=SHARD_NS,
        )
        super().__init__(name, argv, workdir / f"shard-{name}.log")
        self.launch()

    def stopped(self) -> int | None:
        """SIGTERM, as Kubernetes stops a pod: the exit code."""
        self.stop()
        return self.last_exit


def owners(admin: KubeCluster) -> dict[str, str]:
    return {
        f"{NS}/{h['metadata']['name']}": (h["metadata"].get("labels") or {}).get(SHARD_LABEL, "")
        for h in admin.list(HOSTS, NS)[0]
    }


def forget_shards(admin: KubeCluster) -> None:
    """The Leases and the controller's status the replicas leave behind."""
    for lease in admin.list(LEASES, SHARD_NS)[0]:
        name = lease["metadata"]["name"]
        if name.startswith(LEASE_PREFIX) or name == SHARDER_LEASE:
            with contextlib.suppress(NotFound):
                admin.delete(LEASES, SHARD_NS, name)
    with contextlib.suppress(NotFound):
        admin.delete(CONTROLLERS, None, SHARD_NS)


def leases_held(admin: KubeCluster, shards: dict[str, Shard]) -> None:
    for name in shards:
        wait_for(lambda: lease_holder(admin, LEASE_PREFIX + name).startswith(f"{name}_"),  # noqa: B023
                 timeout=30, what=f"shard {name}'s Lease held")  # fmt: skip


def placed(admin: KubeCluster, names: list[str], count: int) -> bool:
    """All ``count`` hosts labelled with the owner the ring of ``names`` gives them."""
    ring, now = Ring.of(names), owners(admin)
    return len(now) == count and all(v == ring.owner(k) for k, v in now.items())


def stop_all(admin: KubeCluster, shards: dict[str, Shard]) -> None:
    for shard in shards.values():
        shard.kill()
    forget_shards(admin)


def test_shards_share_the_hosts_and_a_killed_ones_move_to_the_other(
    control_plane: ControlPlane, admin: KubeCluster, tmp_path: Path, manifests: Any
) -> None:
    shards = {name: Shard(control_plane, tmp_path, name) for name in ("a", "b")}
    try:
        leases_held(admin, shards)
        sharder = wait_for(lambda: lease_holder(admin, SHARDER_LEASE), timeout=30, what="a sharder")
        create_fleet(admin, NS, FLEET)
        wait_for(lambda: placed(admin, list(shards), FLEET), timeout=60, what="hosts shared out")
        wait_all_in(admin, NS, "provisioned", timeout=60, reported=False)
        assert set(owners(admin).values()) == {"a", "b"}
        counts = {name: list(owners(admin).values()).count(name) for name in shards}
        wait_for(lambda: shard_members(admin) == counts, timeout=30,
                 what=f"the controller's status showing the shares {counts}")  # fmt: skip

        killed = shards[sharder.split("_", 1)[0]]  # the one running the sharder too
        left = next(name for name in shards if name != killed.shard)
        killed.kill()
        began = time.monotonic()
        wait_for(lambda: set(owners(admin).values()) == {left}, timeout=60,
                 what=f"{killed.shard}'s hosts given to {left}")  # fmt: skip
        moved = time.monotonic() - began
        print(f"shard {killed.shard} killed; its hosts given to {left} in {moved:.1f}s")
        assert lease_holder(admin, SHARDER_LEASE).startswith(f"{left}_")
        text = shards[left].log_text()
        assert "elected to run the sharder" in text, text[-2000:]
        wait_all_in(admin, NS, "provisioned", timeout=60, reported=False)
        wait_for(lambda: shard_members(admin) == {left: FLEET}, timeout=30,
                 what=f"the status showing {left} alone, with every host")  # fmt: skip

        # a third joins: its share drained from the one left, across processes
        shards["c"] = Shard(control_plane, tmp_path, "c")
        wait_for(lambda: placed(admin, [left, "c"], FLEET),
                 timeout=60, what=f"c's share drained from {left} and given to c")  # fmt: skip
        assert "c" in owners(admin).values()
        wait_for(lambda: (shown := shard_members(admin)).keys() == {left, "c"}
                 and sum(shown.values()) == FLEET,
                 timeout=30, what="the status showing c beside the one left")  # fmt: skip
        # and leaves cleanly: its Lease given up, its hosts back at once, not at expiry
        assert shards["c"].stopped() == 0, shards["c"].log_text()[-2000:]
        assert "released the Lease hoststate-shard-c" in shards["c"].log_text()
        began = time.monotonic()
        wait_for(lambda: set(owners(admin).values()) == {left}, timeout=60,
                 what=f"c's hosts back with {left}")  # fmt: skip
        print(f"shard c stopped; its hosts back with {left} in {time.monotonic() - began:.1f}s")
        wait_all_in(admin, NS, "provisioned", timeout=60, reported=False)
        wait_for(lambda: shard_members(admin) == {left: FLEET}, timeout=30,
                 what="c gone from the status once its Lease is given up")  # fmt: skip
    finally:
        stop_all(admin, shards)


def kubeconfig_through(plane: ControlPlane, proxy: TcpProxy, workdir: Path) -> Path:
    """The admin kubeconfig, its server reached through ``proxy``."""
    text = plane.kubeconfig.read_text()
    port = urlsplit(plane.url).port
    path = workdir / f"through-{proxy.port}.kubeconfig"
    path.write_text(text.replace(f"127.0.0.1:{port}", f"127.0.0.1:{proxy.port}"))
    return path


def test_a_replica_cut_off_from_the_api_server_stops_before_its_hosts_move(
    control_plane: ControlPlane, admin: KubeCluster, tmp_path: Path, manifests: Any
) -> None:
    """Its election cannot renew, so it exits (after --renew-deadline) before its Lease
    dies; only then does the sharder take the Lease and move its hosts."""
    port = urlsplit(control_plane.url).port
    assert port is not None
    proxy = TcpProxy("127.0.0.1", port)
    shards = {"a": Shard(control_plane, tmp_path, "a")}
    shards["b"] = Shard(control_plane, tmp_path, "b",
                        kubeconfig=kubeconfig_through(control_plane, proxy, tmp_path))  # fmt: skip
    try:
        leases_held(admin, shards)
        create_fleet(admin, NS, FLEET)
        wait_for(lambda: placed(admin, list(shards), FLEET), timeout=60, what="hosts shared out")
        wait_all_in(admin, NS, "provisioned", timeout=60, reported=False)
        theirs = {key for key, shard in owners(admin).items() if shard == "b"}
        assert theirs

        proxy.cut()
        cut = time.monotonic()
        exited = moved = None
        while (exited is None or moved is None) and time.monotonic() - cut < 60:
            if exited is None and shards["b"].exited() is not None:
                exited = time.monotonic() - cut
            if moved is None and any(owners(admin)[key] != "b" for key in theirs):
                moved = time.monotonic() - cut
            time.sleep(0.05)
        print(f"b cut off: exited after {exited}s, its first host moved after {moved}s")
        assert exited is not None and moved is not None, (exited, moved)
        assert exited < moved, (exited, moved)
        assert shards["b"].exited() == 1
        text = shards["b"].log_text()
        assert "lost the shard Lease" in text or "lost the sharder Lease" in text, text[-2000:]
        wait_for(lambda: set(owners(admin).values()) == {"a"}, timeout=60,
                 what="b's hosts all with a")  # fmt: skip
        assert lease_holder(admin, LEASE_PREFIX + "b").startswith("sharder/") or not lease_holder(
            admin, LEASE_PREFIX + "b"
        )
        wait_all_in(admin, NS, "provisioned", timeout=60, reported=False)
    finally:
        proxy.close()
        for shard in shards.values():
            shard.kill()
        forget_shards(admin)


def test_scaling_from_three_to_five_to_two_while_hosts_provision(
    control_plane: ControlPlane, admin: KubeCluster, tmp_path: Path, manifests: Any
) -> None:
    """Two replicas join mid-flight and take their shares, drained first; then three
    leave cleanly and give theirs back; every host ends provisioned, its history in
    order with no gap and no state entered twice: the replicas share one backend, so a
    host that moves mid-flight carries on with its machine."""
    hardware = tmp_path / "hardware.db"

    def start(name: str) -> Shard:
        return Shard(control_plane, tmp_path, name, timings="demo", hardware=hardware)

    shards = {name: start(name) for name in ("a", "b", "c")}
    try:
        leases_held(admin, shards)
        create_fleet(admin, NS, SCALED_FLEET)

        def placed_on(names: list[str]) -> bool:
            return placed(admin, names, SCALED_FLEET)

        wait_for(lambda: placed_on(["a", "b", "c"]), timeout=60, what="shared out on three")
        wait_for(lambda: busy(admin) > 0, timeout=60, what="hosts mid-flight")

        for name in ("d", "e"):
            shards[name] = start(name)
        began = time.monotonic()
        wait_for(lambda: placed_on(list(shards)), timeout=90, what="shared out on five")
        grown = time.monotonic() - began
        mid_flight = busy(admin)

        for name in ("c", "d", "e"):
            assert shards[name].stopped() == 0, shards[name].log_text()[-2000:]
        began = time.monotonic()
        wait_for(lambda: placed_on(["a", "b"]), timeout=60, what="shared out on two")
        shrunk = time.monotonic() - began
        print(f"3 -> 5: shares in place after {grown:.1f}s ({mid_flight} hosts mid-flight); "
              f"5 -> 2: after {shrunk:.1f}s")  # fmt: skip
        every_host_told_and_deployed_once(admin, hardware, SCALED_FLEET, timeout=120)
    finally:
        stop_all(admin, shards)


def test_one_of_three_killed_mid_flight_its_hosts_finish_once_on_the_other_two(
    control_plane: ControlPlane, admin: KubeCluster, tmp_path: Path, manifests: Any
) -> None:
    """Three replicas on one backend, at the demo's timings; SIGKILL of one (not the
    sharder) while hosts of its own are mid-flight: nothing of it runs on, yet its hosts
    stay with it until its Lease has died, then go to the two left. Every host ends
    provisioned with each state told once and in order, and each machine went through
    each step once: no host reconciled by two replicas at once, none adopted."""
    hardware = tmp_path / "hardware.db"
    shards = {n: Shard(control_plane, tmp_path, n, timings="demo", hardware=hardware)
              for n in ("a", "b", "c")}  # fmt: skip
    try:
        leases_held(admin, shards)
        sharder = wait_for(lambda: lease_holder(admin, SHARDER_LEASE), timeout=30, what="a sharder")
        create_fleet(admin, NS, KILLED_FLEET)
        wait_for(lambda: placed(admin, list(shards), KILLED_FLEET), timeout=60,
                 what="shared out on three")  # fmt: skip
        victim = next(n for n in shards if not sharder.startswith(f"{n}_"))
        left = [n for n in shards if n != victim]

        def its_mid_flight() -> int:
            states, now = host_states(admin), owners(admin)
            return sum(1 for k, v in now.items()
                       if v == victim and states.get(k) not in ("", "provisioned"))  # fmt: skip

        wait_for(lambda: its_mid_flight() >= 3, timeout=60, what=f"hosts of {victim} mid-flight")
        theirs = {k for k, v in owners(admin).items() if v == victim}
        mid_flight = its_mid_flight()
        shards[victim].kill()
        began = time.monotonic()
        wait_for(lambda: not {k for k, v in owners(admin).items() if v == victim}, timeout=60,
                 what=f"{victim}'s hosts moved")  # fmt: skip
        moved = time.monotonic() - began
        assert moved >= LEASE, f"{victim}'s hosts moved {moved:.1f}s after the kill"
        assert placed(admin, left, KILLED_FLEET)
        print(f"{victim} killed with {mid_flight} of its {len(theirs)} hosts mid-flight; "
              f"moved to {left} {moved:.1f}s later")  # fmt: skip
        every_host_told_and_deployed_once(admin, hardware, KILLED_FLEET, timeout=120)
        wait_for(lambda: set(shard_members(admin)) == set(left)
                 and sum(shard_members(admin).values()) == KILLED_FLEET,
                 timeout=30, what=f"the status showing {left} with every host")  # fmt: skip
    finally:
        stop_all(admin, shards)


def test_a_host_moved_mid_deployment_finishes_it_on_the_shared_backend(
    control_plane: ControlPlane, admin: KubeCluster, tmp_path: Path, manifests: Any
) -> None:
    """Two replicas share one simulated backend; one stops while a host of its own is
    being deployed. Its new owner finds the deployment under way on the shared machine
    and waits for it to end: no second deployment, no adoption."""
    hardware = tmp_path / "hardware.db"
    shards = {n: Shard(control_plane, tmp_path, n, timings="demo", hardware=hardware)
              for n in ("a", "b")}  # fmt: skip
    try:
        leases_held(admin, shards)
        create_fleet(admin, NS, FLEET)
        wait_for(lambda: placed(admin, list(shards), FLEET), timeout=60, what="hosts shared out")

        def deploying_on_b() -> str:
            states = host_states(admin)
            return next((k for k, v in owners(admin).items()
                         if v == "b" and states.get(k) == "provisioning"), "")  # fmt: skip

        moved = wait_for(deploying_on_b, timeout=60, what="a host of b's being deployed")
        assert shards["b"].stopped() == 0, shards["b"].log_text()[-2000:]
        wait_for(lambda: owners(admin)[moved] == "a", timeout=30, what=f"{moved} given to a")
        every_host_told_and_deployed_once(admin, hardware, FLEET, timeout=60)
    finally:
        stop_all(admin, shards)


def host_states(admin: KubeCluster) -> dict[str, str]:
    return {
        f"{NS}/{h['metadata']['name']}": ((h.get("status") or {}).get("provisioning") or {}).get(
            "state", ""
        )
        for h in admin.list(HOSTS, NS)[0]
    }


def deployed_once(path: Path, count: int) -> None:
    """Each machine of the shared backend went through each step once, and none was
    adopted: no replica took a machine for one it did not know."""
    hardware = HardwareFile(path)
    try:
        machines = list(hardware.load())
    finally:
        hardware.close()
    assert len(machines) == count
    once = {"register": 1, "inspect": 1, "prepare": 1, "provision": 1}
    for machine in machines:
        assert machine.started == once, (machine.address, machine.started)


def every_host_told_and_deployed_once(
    admin: KubeCluster, hardware: Path, count: int, *, timeout: float
) -> None:
    """Every host provisioned, each state told once and in order, each machine deployed
    once on the shared backend."""
    wait_all_in(admin, NS, "provisioned", timeout=timeout, reported=False)
    # each HostState is written just after its Host: wait until every one has told it too
    wait_for(
        lambda: len(told_provisioned(admin)) == count,
        timeout=timeout,
        what=f"{count} HostStates told provisioned",
    )
    for key in owners(admin):
        told_once_in_order(admin, key.split("/", 1)[1])
    deployed_once(hardware, count)


def told_provisioned(admin: KubeCluster) -> list[str]:
    """The HostStates whose history ends with provisioned."""
    return [
        s["metadata"]["name"]
        for s in admin.list(HOSTSTATES, NS)[0]
        if ((s.get("status") or {}).get("history") or [{}])[-1].get("to") == "provisioned"
    ]


def busy(admin: KubeCluster) -> int:
    """Hosts between registering and provisioned, as their status says."""
    states = [
        ((h.get("status") or {}).get("provisioning") or {}).get("state", "")
        for h in admin.list(HOSTS, NS)[0]
    ]
    return sum(1 for state in states if state not in ("", "provisioned"))


def told_once_in_order(admin: KubeCluster, name: str) -> None:
    history = (admin.get(HOSTSTATES, NS, name).get("status") or {}).get("history") or []
    seqs = [record["seq"] for record in history]
    assert seqs == list(range(1, len(seqs) + 1)), (name, seqs)
    entered = Counter(record["to"] for record in history)
    assert set(entered.values()) == {1} and history[-1]["to"] == "provisioned", (name, history)
    assert not [r for r in history if r.get("reason") == "Adopted"], (name, history)


def test_the_lead_keeps_a_node_with_no_host_and_a_new_lead_carries_on_with_it(
    control_plane: ControlPlane, admin: KubeCluster, tmp_path: Path, manifests: Any
) -> None:
    """Processes following Nodes: the replica holding the sharder's Lease keeps the Node
    with no Host (its HostState, its NodePool); killed, the other takes the sharder's
    Lease and the Node's book from its HostState, and follows its next update."""
    shards = {name: Shard(control_plane, tmp_path, name, nodes=True) for name in ("a", "b")}
    edge = SimulatedNode(admin, "edge-lead-0", labels={"node-role.kubernetes.io/edge": ""})
    try:
        lead = wait_for(lambda: lease_holder(admin, SHARDER_LEASE), timeout=30, what="a sharder")
        edge.register()
        edge.annotate({"hoststate.io/current-config": "v1"})
        wait_for(lambda: step_of(admin, SHARD_NS, edge.name) == "updated", timeout=30,
                 what="the node-only HostState")  # fmt: skip
        wait_for(lambda: (pool(admin, "edge") or {}).get("updatedMachineCount") == 1,
                 timeout=30, what="its NodePool")  # fmt: skip
        killed = shards[lead.split("_", 1)[0]]
        left = next(name for name in shards if name != killed.shard)
        killed.kill()
        wait_for(lambda: lease_holder(admin, SHARDER_LEASE).startswith(f"{left}_"), timeout=60,
                 what=f"{left} running the sharder")  # fmt: skip
        edge.annotate({"hoststate.io/desired-config": "v2", "hoststate.io/update-state": "Working"})
        wait_for(lambda: step_of(admin, SHARD_NS, edge.name) == "preparing update", timeout=30,
                 what=f"{left} following the Node's update")  # fmt: skip
        wait_for(lambda: (pool(admin, "edge") or {}).get("updatingMachineCount") == 1,
                 timeout=30, what="the NodePool counted by the new lead")  # fmt: skip
        history = admin.get(HOSTSTATES, SHARD_NS, edge.name)["status"]["history"]
        assert [h["to"] for h in history] == ["preparing update"], history
        assert "keeping the Nodes with no Host" in shards[left].log_text()
    finally:
        for shard in shards.values():
            shard.kill()
        with contextlib.suppress(NotFound):
            edge.delete()
        with contextlib.suppress(NotFound):
            admin.delete(NODEPOOLS, None, "edge")
        with contextlib.suppress(NotFound):
            admin.delete(HOSTSTATES, SHARD_NS, edge.name)
        forget_shards(admin)
