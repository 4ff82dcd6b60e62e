"""``state-controller demo --observe``: a fleet a played baremetal-operator drives, with
its faults, told by hoststate in observe mode as a baremetal-operator user would see it
in their own cluster: the states BMO wrote, its retried deploy error, the inspection
that hung, and the BMC health it reported, each on the host it happened to."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from state_controller.cli import build_parser
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import BAREMETALHOSTS, EVENTS, HOSTSTATES, Cluster
from state_controller.cluster.schema import validators
from state_controller.commands import demo as demo_command
from state_controller.demo import DemoOptions
from state_controller.demo.observed import run_observed_demo
from state_controller.demo.session import demo_policy
from state_controller.provisioning.simulated_machines import model_of
from state_controller.simulation.bmo_fleet import IMAGE, BmoFault, PlayedFleet, hardware_details
from testbed.processes import cli
from testbed.scenarios import NS as SCENARIO_NAMESPACE

NS = "demo"
CLEAN = ["registering", "inspecting", "preparing", "available", "provisioning", "provisioned"]


@pytest.fixture
def store() -> Iterator[EmbeddedCluster]:
    embedded = EmbeddedCluster(validators=validators())
    yield embedded
    embedded.close()


def conditions(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in item["status"].get("conditions") or ()}


def reasons(cluster: EmbeddedCluster, name: str) -> Counter[str]:
    """The Events told of ``name``, by reason (an Event told again is counted, not repeated)."""
    told: Counter[str] = Counter()
    for event in cluster.list(EVENTS, NS)[0]:
        if event["involvedObject"]["name"] == name:
            told[event["reason"]] += event.get("count", 1)
    return told


def test_the_observe_demo_tells_bmos_fleet_and_its_faults_host_by_host(
    store: EmbeddedCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = store
    opts = DemoOptions(
        hosts=8, namespace=NS, faults=True, fault_rate=0.5, speed=2.0, workers=2,
        exit_when_settled=True, timeout=90.0, json=True, table=False, observe=True,
    )  # fmt: skip
    assert run_observed_demo(opts, demo_policy, cluster=cluster) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["settled"] is True and summary["by_state"] == {"provisioned": 8}
    faults = {key.rpartition("/")[2]: BmoFault(kind) for key, kind in summary["faults"].items()}
    assert sorted(faults.values()) == sorted(BmoFault)  # the seed deals each kind once
    by_fault = {kind: name for name, kind in faults.items()}

    states = {i["metadata"]["name"]: i for i in cluster.list(HOSTSTATES, NS)[0]}
    assert len(states) == 8
    for name, item in states.items():
        status = item["status"]
        assert status["source"] == "BareMetalHost" and status["phase"] == "Provisioned"
        # what inspection found and who claimed the host, as BMO and CAPM3 wrote them
        assert status["inventory"]["model"] == model_of(name)
        assert status["inventory"]["biosVersion"] == "1.4.2"
        assert status["consumer"] == f"Metal3Machine {NS}/{name}-m"
        tos = [h["to"] for h in status["history"] if h["to"] != h["from"]]
        if name not in faults:
            assert tos == CLEAN, (name, tos)
            assert conditions(item)["HardwareHealthy"]["reason"] == "Healthy"

    # the BMC's health rollup, on the hosts whose BMC reported it, and in the summary
    critical = states[by_fault[BmoFault.HEALTH_CRITICAL]]
    health = conditions(critical)["HardwareHealthy"]
    assert (health["status"], health["reason"]) == ("False", "CriticalError")
    warning = conditions(states[by_fault[BmoFault.HEALTH_WARNING]])["HardwareHealthy"]
    assert (warning["status"], warning["reason"]) == ("False", "Warning")
    assert sorted(summary["hardware_unhealthy"]) == sorted(
        by_fault[k] for k in (BmoFault.HEALTH_CRITICAL, BmoFault.HEALTH_WARNING)
    )
    assert "HealthyCriticalError" in reasons(cluster, by_fault[BmoFault.HEALTH_CRITICAL])

    # the deploy failed twice (the default attempts), each failure a record, then it took
    failing = by_fault[BmoFault.PROVISIONING_ERROR]
    history = states[failing]["status"]["history"]
    deploying = [h["reason"] for h in history if h["from"] == "provisioning"]
    assert deploying == ["ProvisioningFailed", "Recovered"] * 2 + ["Observed"], history
    assert reasons(cluster, failing)["ProvisioningFailed"] == 2
    assert history[-1]["to"] == "provisioned"

    # the hung inspection was flagged stuck, then went on when BMO did
    assert "Stuck" in reasons(cluster, by_fault[BmoFault.STUCK_INSPECTING])

    # observed, never written: no finalizer nor annotation of hoststate's on a BareMetalHost
    for bmh in cluster.list(BAREMETALHOSTS, NS)[0]:
        assert not bmh["metadata"].get("finalizers")
        assert not any("hoststate" in a for a in bmh["metadata"].get("annotations") or {})


def test_the_played_fleet_writes_only_what_bmos_own_crd_keeps(cluster: Cluster) -> None:
    """Each write of the played baremetal-operator, from creation to provisioned with a
    failed deploy and an unhealthy BMC on the way, stored through BMO's own CRD (on the
    real kube-apiserver, which prunes what the CRD does not declare) as it was written."""
    names = [f"host-{i:04d}" for i in range(3)]
    faults = {"host-0001": BmoFault.PROVISIONING_ERROR, "host-0002": BmoFault.HEALTH_CRITICAL}
    fleet = PlayedFleet(cluster, SCENARIO_NAMESPACE, 3, faults=faults, attempts=1)
    fleet.create()
    now = time.time()
    written: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for _ in range(12):  # registering → … → provisioned, and a failed deploy retried
        now += 60
        fleet.tick(now)
        for name in names:
            bmh = cluster.get(BAREMETALHOSTS, SCENARIO_NAMESPACE, name)
            if not written[name] or written[name][-1] != bmh:
                written[name].append(bmh)
    assert [host.name for host in fleet.hosts] == names
    for name in names:
        stored = cluster.get(BAREMETALHOSTS, SCENARIO_NAMESPACE, name)
        assert stored["spec"]["image"] == IMAGE
        assert stored["status"]["hardware"] == hardware_details(name, int(name[-4:]), 1)
        assert stored["status"]["provisioning"]["state"] == "provisioned"
    seen = [w["status"] for w in written["host-0001"] if w.get("status")]
    assert any(
        s["operationalStatus"] == "error" and s["errorType"] == "provisioning error" for s in seen
    )
    healthy = {c["type"]: c for c in written["host-0002"][-1]["status"]["conditions"]}["Healthy"]
    assert (healthy["status"], healthy["reason"]) == ("False", "CriticalError")


@pytest.mark.slow
def test_demo_observe_runs_from_the_command_line_to_its_json_summary() -> None:
    done = cli(
        "demo", "--observe", "--hosts", "4", "--speed", "4", "--faults", "--fault-rate", "0.5",
        "--fault-kinds", "health-critical", "--exit-when-settled", "--json", "--timeout", "60",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["settled"] is True and summary["source"] == "BareMetalHost"
    assert summary["by_state"] == {"provisioned": 4}
    # then their Nodes, linked to the BareMetalHosts by providerID, rolled to a new config
    assert (summary["update"]["nodes"], summary["update"]["updated"]) == (4, 4)
    critical = sorted(k.rpartition("/")[2] for k in summary["faults"])
    assert len(critical) == 2 and sorted(summary["hardware_unhealthy"]) == critical
    assert "hardware unhealthy: " + " CriticalError, ".join(critical) in done.stderr


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--firmware-rollout"], "--firmware-rollout"),
        (["--remediation", "off", "--keep"], "--remediation, --keep"),
        (
            ["--provisioner", "ironic", "--ironic-url", "http://127.0.0.1:6385"],
            "--provisioner ironic",
        ),
    ],
)
def test_the_observe_demo_refuses_what_only_a_driven_fleet_has(
    flags: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = build_parser().parse_args(["demo", "--observe", *flags])
    assert demo_command.main(args) == 2
    said = capsys.readouterr().err
    assert f"--observe with {named}" in said and "drop --observe" in said


def test_the_observe_demo_knows_only_baremetal_operators_faults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = build_parser().parse_args(["demo", "--observe", "--fault-kinds", "reboot-lost"])
    assert demo_command.main(args) == 2
    said = capsys.readouterr().err
    assert "--fault-kinds: unknown reboot-lost; use some of provisioning-error" in said
