"""Remediation end to end, on the embedded store and a real kube-apiserver, with the
simulated provisioner: a Node that never came back from its update's reboot is
power-cycled through its Host's BMC and comes back; one that never does is power-cycled as
often as allowed, then left to a person; a pool with too many such Nodes is held until it
has fewer; the attempts made survive a restart of the controller; a machine whose BMC
says a part failed is not power-cycled until the part is replaced."""

from __future__ import annotations

from typing import Any

from state_controller.api.updates import DEFAULT_STEP_THRESHOLDS, UpdateStep
from state_controller.books.stuck import StuckPolicy
from state_controller.cluster.interface import Cluster
from state_controller.provisioning.fault_plan import Fault, FaultPlan
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.remediation.policy import RemediationPolicy
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.fleet import create_fleet, host_manifest
from state_controller.simulation.nodes import SimulatedNode
from state_controller.updates.signals import (
    OWN_CURRENT_CONFIG,
    OWN_DESIRED_CONFIG,
    OWN_UPDATE_STATE,
)
from testbed.clocks import Clock
from testbed.scenarios import (
    NS,
    WORKER,
    events_for,
    hoststate,
    state_of,
    step_of,
    wait_all_in,
)
from tests.conftest import FAST_BACKOFF, wait_for

REBOOT_ALLOWED = 1.0  # seconds in the rebooting step before a Node's reboot counts as lost


def config(**policy: Any) -> ControllerConfig:
    steps = {**DEFAULT_STEP_THRESHOLDS, UpdateStep.REBOOTING: REBOOT_ALLOWED}
    settings = {"first_wait": 0.5, "max_wait": 1.0, "max_unhealthy": 1.0, **policy}
    return ControllerConfig(
        workers=2,
        backoff=FAST_BACKOFF,
        stuck=StuckPolicy(step_thresholds=steps),
        remediation=RemediationPolicy(**settings),
    )


def address(index: int) -> str:
    return str(host_manifest(NS, index)["spec"]["bmc"]["address"])


def hard_reboots(sim: SimulatedProvisioner, index: int) -> int:
    return sim.machine(address(index)).reboots.count("hard")


def node_for(cluster: Cluster, index: int) -> SimulatedNode:
    """The Node of host ``index``, Ready at its first configuration."""
    host = f"host-{index:04d}"
    node = SimulatedNode(
        cluster, f"worker-{index}", labels=WORKER, provider_id=f"metal3://{NS}/{host}/m-{index}"
    )
    node.register()
    node.annotate({OWN_DESIRED_CONFIG: "a", OWN_CURRENT_CONFIG: "a", OWN_UPDATE_STATE: "Done"})
    wait_for(lambda: hoststate(cluster, host)["spec"]["node"] == node.name, what="linked")
    return node


def lose_reboot(cluster: Cluster, index: int, node: SimulatedNode) -> None:
    """The node's update reboots it, and it does not come back."""
    node.annotate({OWN_DESIRED_CONFIG: "b", OWN_UPDATE_STATE: "Working"})
    node.go_down()
    wait_for(lambda: step_of(cluster, NS, f"host-{index:04d}") == "rebooting", what="rebooting")


def remediation_of(cluster: Cluster, index: int) -> dict[str, Any] | None:
    status = hoststate(cluster, f"host-{index:04d}").get("status") or {}
    shown = status.get("remediation")
    return dict(shown) if shown else None


def action(cluster: Cluster, index: int) -> str:
    return str((remediation_of(cluster, index) or {}).get("action", ""))


def told(cluster: Cluster, index: int, *also: str) -> list[Any]:
    """The reasons of the Events about host ``index`` (with ``also``: tuples with those)."""
    events = events_for(cluster, f"host-{index:04d}")
    if not also:
        return [e["reason"] for e in events]
    return [(e["reason"], *(e[k] for k in also)) for e in events]


def reasons(cluster: Cluster, index: int) -> list[str]:
    return [h["reason"] for h in hoststate(cluster, f"host-{index:04d}")["status"]["history"]]


def test_a_lost_reboot_is_power_cycled_and_the_node_comes_back(
    cluster: Cluster, run_controller: Any
) -> None:
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim, config(max_attempts=3)) as running:
        create_fleet(cluster, NS, 1)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned", what="provisioned")
        node = node_for(cluster, 0)
        lose_reboot(cluster, 0, node)
        wait_for(lambda: hard_reboots(sim, 0) == 1, what="a power-cycle through the BMC")
        node.come_back()  # the power-cycle brought it back
        wait_for(lambda: step_of(cluster, NS, "host-0000") == "resuming", what="back")
        wait_for(lambda: remediation_of(cluster, 0) is None, what="remediation over")
        wait_for(lambda: "Remediated" in reasons(cluster, 0), what="the return recorded")
        wait_for(running.controller.idle)
        assert hard_reboots(sim, 0) == 1
        history = hoststate(cluster, "host-0000")["status"]["history"]
        cycled = next(h for h in history if h["reason"] == "PowerCycled")
        assert cycled["from"] == cycled["to"] == "rebooting"  # told inside the update
        assert cycled["message"] == ("RebootLost: power-cycling through the BMC, attempt 1 of 3")
        back = next(h for h in history if h["reason"] == "Remediated")
        assert (
            back["message"] == "the Node is Ready again after being power-cycled once (RebootLost)"
        )
        wanted = {("PowerCycled", "Warning"), ("Remediated", "Normal")}
        wait_for(lambda: wanted <= set(told(cluster, 0, "type")), what=f"Events {wanted}")
        outcome = "hoststate_remediations_total"
        assert running.sample(outcome, {"outcome": "power_cycled"}) == 1
        assert running.sample(outcome, {"outcome": "recovered"}) == 1
        assert running.sample(outcome, {"outcome": "exhausted"}) == 0


def test_a_node_that_never_comes_back_is_power_cycled_as_often_as_allowed_then_left(
    cluster: Cluster, run_controller: Any
) -> None:
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim, config(max_attempts=2)) as running:
        create_fleet(cluster, NS, 1)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned", what="provisioned")
        lose_reboot(cluster, 0, node_for(cluster, 0))
        wait_for(
            lambda: action(cluster, 0) == "Exhausted",
            what="every attempt made",
        )
        shown = remediation_of(cluster, 0)
        assert shown is not None and shown["attempts"] == 2 and shown["trouble"] == "RebootLost"
        assert shown["message"].startswith("power-cycled 2 times and still RebootLost")
        assert hard_reboots(sim, 0) == 2
        wait_for(lambda: "RemediationExhausted" in told(cluster, 0), what="the Event")
        assert told(cluster, 0).count("RemediationExhausted") == 1
        series = {"namespace": NS, "host": "host-0000", "trouble": "RebootLost"}
        attempts = "hoststate_host_remediation_attempts"
        assert running.sample(attempts, {**series, "action": "Exhausted"}) == 2
        assert running.sample("hoststate_remediations_total", {"outcome": "exhausted"}) == 1

    # a restart keeps the attempts made: nothing is power-cycled again
    with run_controller(cluster, sim, config(max_attempts=2)) as running:
        wait_for(running.controller.idle)
        assert (remediation_of(cluster, 0) or {}).get("attempts") == 2
        assert hard_reboots(sim, 0) == 2


def test_a_pool_with_too_many_unhealthy_nodes_is_held_until_it_has_fewer(
    cluster: Cluster, run_controller: Any
) -> None:
    sim = SimulatedProvisioner()
    # 40 % of 3 Nodes: one unhealthy Node may be power-cycled, two may not
    with run_controller(cluster, sim, config(max_unhealthy=0.4)) as running:
        create_fleet(cluster, NS, 3)
        wait_all_in(cluster, NS, "provisioned")
        nodes = [node_for(cluster, index) for index in range(3)]
        lose_reboot(cluster, 0, nodes[0])
        lose_reboot(cluster, 1, nodes[1])
        wait_for(lambda: [action(cluster, i) for i in (0, 1)] == ["Held", "Held"], what="held")
        assert hard_reboots(sim, 0) == hard_reboots(sim, 1) == 0
        held = remediation_of(cluster, 0) or {}
        assert held["message"].startswith("2 of the pool's 3 machines are unhealthy")
        wait_for(lambda: "RemediationHeld" in told(cluster, 0), what="the Event")

        nodes[1].come_back()  # one comes back by itself: the pool is within its budget
        wait_for(lambda: hard_reboots(sim, 0) == 1, what="the other one power-cycled")
        nodes[0].come_back()
        wait_for(lambda: remediation_of(cluster, 0) is None, what="remediation over")
        wait_for(running.controller.idle)
        assert hard_reboots(sim, 1) == 0 and hard_reboots(sim, 2) == 0
        assert "PowerCycled" not in reasons(cluster, 1)


def test_a_machine_whose_bmc_says_a_part_failed_is_not_power_cycled_until_it_is_replaced(
    cluster: Cluster, run_controller: Any
) -> None:
    """The simulated BMC's health rollup (the demo's ``health`` fault, on a clock the test
    moves): Critical holds remediation, says why, shows in the HostState and the gauge;
    the part replaced, the lost reboot is power-cycled."""
    clock = Clock(0.0)
    plan = FaultPlan({f"{NS}/host-0000": [Fault("health", times=1, seconds=60.0)]})
    sim = SimulatedProvisioner(faults=plan, clock=clock, health_every=0.2)
    with run_controller(cluster, sim, config(max_attempts=3)) as running:
        create_fleet(cluster, NS, 1)
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned", what="provisioned")
        clock.advance(30.0)  # the module failed
        wait_for(
            lambda: hardware_healthy(cluster, 0)[:2] == ("False", "CriticalError"),
            what="HardwareHealthy False, CriticalError",
        )
        lose_reboot(cluster, 0, node_for(cluster, 0))
        wait_for(lambda: action(cluster, 0) == "Blocked", what="remediation held off")
        assert hard_reboots(sim, 0) == 0
        held = remediation_of(cluster, 0) or {}
        assert "(Critical, as the simulated BMC says)" in held["message"], held
        assert "a power-cycle mends no failed part" in held["message"]
        series = {"namespace": NS, "host": "host-0000", "health": "Critical"}
        unhealthy = {**series, "source": "simulated BMC"}
        assert running.sample("hoststate_host_hardware_unhealthy", unhealthy) == 1
        wait_for(lambda: "HardwareUnhealthy" in told(cluster, 0), what="the Event")

        clock.advance(60.0)  # the module replaced: OK again, and the Node still lost
        wait_for(lambda: hard_reboots(sim, 0) == 1, what="power-cycled once the part is OK")
        assert hardware_healthy(cluster, 0)[:2] == ("True", "Healthy")
        wait_for(lambda: "HardwareHealthy" in told(cluster, 0), what="the Event")


def hardware_healthy(cluster: Cluster, index: int) -> tuple[str, str, str]:
    """The HostState's HardwareHealthy condition: status, reason, message."""
    status = hoststate(cluster, f"host-{index:04d}").get("status") or {}
    found = next((c for c in status.get("conditions") or [] if c["type"] == "HardwareHealthy"), {})
    return found.get("status", ""), found.get("reason", ""), found.get("message", "")
