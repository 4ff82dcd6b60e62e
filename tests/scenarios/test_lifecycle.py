"""End-to-end host lifecycles through a running controller, on every cluster backend."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from state_controller.api import annotations as ann
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, SECRETS, Cluster, NotFound
from state_controller.cluster.schema import validators
from state_controller.provisioning.backoff import Backoff
from state_controller.provisioning.fault_plan import Fault, FaultPlan
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.provisioning.simulated_firmware import SHIPPED_BIOS
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.fleet import create_fleet, host_manifest, secret_manifest
from testbed.scenarios import condition, events_for, hoststate, state_of, wait_all_in
from tests.conftest import wait_for

NS = "fleet"


def test_fleet_is_provisioned_and_reported(cluster: Cluster, run_controller: Any) -> None:
    with run_controller(cluster) as running:
        create_fleet(cluster, NS, 5)
        wait_all_in(cluster, NS, "provisioned", timeout=5 * 15)  # as long as 15 s a host
        wait_for(running.controller.idle)
        state = hoststate(cluster, "host-0000")
        status = state["status"]
        assert status["phase"] == "Provisioned"
        assert condition(state, "Ready")["status"] == "True"
        assert condition(state, "Progressing")["status"] == "False"
        assert condition(state, "Provisioned")["status"] == "True"
        assert [h["to"] for h in status["history"]] == [
            "registering", "inspecting", "preparing", "available", "provisioning", "provisioned",
        ]  # fmt: skip
        assert [c["name"] for c in status["chapters"]] == [
            "registration", "inspection", "preparation", "provisioning",
        ]  # fmt: skip
        host = cluster.get(HOSTS, NS, "host-0000")
        assert ann.FINALIZER in host["metadata"]["finalizers"]
        assert host["status"]["poweredOn"] is True
        assert host["status"]["hardware"]["cpu"]["count"] > 0
        # the BIOS the inspection found, kept by the Host's schema, in the inventory shown
        assert host["status"]["hardware"]["firmware"]["bios"]["version"] == SHIPPED_BIOS
        assert status["inventory"]["biosVersion"] == SHIPPED_BIOS
        assert state["metadata"]["ownerReferences"][0]["uid"] == host["metadata"]["uid"]
        reasons = [e["reason"] for e in events_for(cluster, "host-0000")]
        assert {"Registered", "InspectionComplete", "ImageRequested"} <= set(reasons)
        assert running.sample("hoststate_hosts", {"namespace": NS, "state": "provisioned"}) == 5
        assert (
            running.sample(
                "hoststate_transitions_total", {"from": "provisioning", "to": "provisioned"}
            )
            == 5
        )
        assert (
            running.sample(
                "controller_runtime_reconcile_total", {"controller": "host", "result": "success"}
            )
            >= 5
        )


def test_nothing_is_written_once_settled(cluster: Cluster, run_controller: Any) -> None:
    with run_controller(cluster) as running:
        create_fleet(cluster, NS, 3)
        wait_all_in(cluster, NS, "provisioned")
        wait_for(running.controller.idle)  # settled (the proof is the forced reconcile below)
        before = dict(cluster.stats)  # type: ignore[attr-defined]
        writes_total = "hoststate_status_writes_total"
        outcomes = {o: {"resource": "hosts", "outcome": o} for o in ("unchanged", "written")}
        counted = {o: running.sample(writes_total, v) for o, v in outcomes.items()}

        def decided() -> float:  # status writes decided on, written or not
            return float(sum(running.sample(writes_total, v) for v in outcomes.values()))

        running.controller.queue.add(f"{NS}/host-0001")  # a reconcile with nothing to do
        wait_for(lambda: decided() > sum(counted.values()), what="the forced reconcile")
        after = dict(cluster.stats)  # type: ignore[attr-defined]
        writes = ("create", "update", "update_status", "patch", "delete")
        assert {k: after[k] - before[k] for k in writes} == dict.fromkeys(writes, 0)
        assert running.sample(writes_total, outcomes["written"]) == counted["written"]


def test_errors_back_off_and_recover_with_visible_cause(
    cluster: Cluster, run_controller: Any
) -> None:
    plan = FaultPlan({f"{NS}/host-0000": [Fault("credentials", times=2)]})
    with run_controller(cluster, SimulatedProvisioner(faults=plan)) as running:
        create_fleet(cluster, NS, 2)
        wait_for(lambda: state_of(cluster, "host-0001") == "provisioned")
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned", what="recovery")
        history = hoststate(cluster, "host-0000")["status"]["history"]
        failure = next(h for h in history if h["reason"] == "RegistrationFailed")
        assert "rejected user 'admin'" in failure["message"]
        warnings = [e for e in events_for(cluster, "host-0000") if e["type"] == "Warning"]
        assert warnings and "rejected user" in warnings[0]["message"]
        assert running.sample("hoststate_errors_total", {"type": "registration error"}) == 2


def failing_host_retries(cluster: Cluster, run_controller: Any) -> int:
    """Attempts of a host whose BMC never accepts its credentials, in 3 s after the first:
    with a 0.5 s backoff doubling to 1 s, about 4. Its own status writes wake it too."""
    plan = FaultPlan({f"{NS}/host-0000": [Fault("credentials", times=None)]})
    config = ControllerConfig(workers=2, backoff=Backoff(base=0.5, cap=1.0, jitter=0.0))
    with run_controller(cluster, SimulatedProvisioner(faults=plan), config) as running:
        create_fleet(cluster, NS, 1)
        key = f"{NS}/host-0000"
        wait_for(lambda: running.book(key) is not None and running.book(key).cursor.error_count)
        time.sleep(3.0)
        return int(running.book(key).cursor.error_count)


def test_a_failing_host_retries_at_its_backoff_not_at_its_own_writes(
    cluster: Cluster, run_controller: Any
) -> None:
    assert 2 <= failing_host_retries(cluster, run_controller) <= 6


def test_a_failing_host_backs_off_on_the_sqlite_store(run_controller: Any, tmp_path: Path) -> None:
    # where the watch event of a write often arrives before the write's answer
    store = EmbeddedCluster(path=str(tmp_path / "store.db"), validators=validators())
    try:
        assert 2 <= failing_host_retries(store, run_controller) <= 6
    finally:
        store.close()


def test_stuck_host_is_flagged_then_cleared(cluster: Cluster, run_controller: Any) -> None:
    from state_controller.api.states import ProvisioningState as S
    from state_controller.books.stuck import StuckPolicy
    from state_controller.runtime.config import ControllerConfig
    from tests.conftest import FAST_BACKOFF

    plan = FaultPlan(
        {f"{NS}/host-0000": [Fault("hang", times=1, operation="inspect", seconds=4.0)]}
    )
    config = ControllerConfig(
        workers=2, backoff=FAST_BACKOFF, stuck=StuckPolicy({S.INSPECTING: 0.5})
    )
    with run_controller(cluster, SimulatedProvisioner(faults=plan), config) as running:
        create_fleet(cluster, NS, 1)
        # stuck after 0.5 s, the hang over after 4 s: the flag is read in between
        state = wait_for(
            lambda: (s := hoststate(cluster, "host-0000"))["status"]["stuck"] and s,
            what="stuck flag",
        )
        assert state["status"]["phase"] == "Inspecting"
        assert condition(state, "Stuck")["reason"] == "StateTimeout"
        assert (
            running.sample("hoststate_stuck_hosts", {"namespace": NS, "state": "inspecting"}) == 1
        )
        wait_for(lambda: any(e["reason"] == "Stuck" for e in events_for(cluster, "host-0000")))
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned", what="hang to end")
        wait_for(lambda: not hoststate(cluster, "host-0000")["status"]["stuck"])
        assert (
            running.sample("hoststate_stuck_hosts", {"namespace": NS, "state": "inspecting"}) == 0
        )


def test_deletion_deprovisions_and_removes_everything(
    cluster: Cluster, run_controller: Any
) -> None:
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim) as running:
        create_fleet(cluster, NS, 2)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned")
        cluster.delete(HOSTS, NS, "host-0000")
        wait_for(lambda: state_of(cluster, "host-0000") == "<gone>", what="host deleted")
        wait_for(lambda: running.book(f"{NS}/host-0000") is None, what="book dropped")
        assert running.controller.hosts.get(f"{NS}/host-0000") is None
        wait_for(lambda: _absent(cluster, "host-0000"), what="hoststate collected")
        machine = sim.machine("redfish://bmc-0000.demo.example/redfish/v1/Systems/1")
        assert machine.disk_image is None and machine.node_id == "" and not machine.powered_on
        assert state_of(cluster, "host-0001") == "provisioned"  # the other host was not touched


def _absent(cluster: Cluster, name: str) -> bool:
    try:
        hoststate(cluster, name)
    except NotFound:
        return True
    return False


def test_removing_the_image_deprovisions(cluster: Cluster, run_controller: Any) -> None:
    with run_controller(cluster):
        create_fleet(cluster, NS, 1)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned")
        cluster.patch(HOSTS, NS, "host-0000", {"spec": {"image": None}})
        wait_for(lambda: state_of(cluster, "host-0000") == "available", what="deprovisioned")
        state = hoststate(cluster, "host-0000")
        assert state["status"]["chapters"][-1]["name"] == "preparation"
        assert any(h["reason"] == "ImageRemoved" for h in state["status"]["history"])


def test_missing_secret_then_created(cluster: Cluster, run_controller: Any) -> None:
    with run_controller(cluster):
        cluster.create(HOSTS, host_manifest(NS, 7))
        wait_for(
            lambda: hoststate(cluster, "host-0007")["status"]["provisioning"]["errorCount"] >= 1
        )
        state = hoststate(cluster, "host-0007")
        assert state["status"]["phase"] == "Failed"
        assert condition(state, "Degraded")["reason"] == "RegistrationError"
        message = condition(state, "Degraded")["message"]
        assert 'Secret "host-0007-bmc" not found' in message and "username" in message
        cluster.create(SECRETS, secret_manifest(NS, "host-0007-bmc", "admin", "pw"))
        wait_for(lambda: state_of(cluster, "host-0007") == "provisioned", what="recovery on secret")


def test_secret_without_password_is_named(cluster: Cluster, run_controller: Any) -> None:
    with run_controller(cluster):
        secret = secret_manifest(NS, "host-0003-bmc", "admin", "pw")
        del secret["data"]["password"]
        cluster.create(SECRETS, secret)
        cluster.create(HOSTS, host_manifest(NS, 3))
        wait_for(lambda: state_of(cluster, "host-0003") == "registering")
        wait_for(lambda: cluster.get(HOSTS, NS, "host-0003")["status"]["errorMessage"])
        host = cluster.get(HOSTS, NS, "host-0003")
        assert host["status"]["errorType"] == "registration error"
        assert 'has no "password" key' in host["status"]["errorMessage"]
