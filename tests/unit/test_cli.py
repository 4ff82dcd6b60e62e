"""The command line as a user runs it: demo exit codes, JSON summary, get, gen."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from state_controller.api.columns import HOST_COLUMNS, HOSTSTATE_COLUMNS
from state_controller.cli import build_parser
from state_controller.commands.run import run_options
from state_controller.manager import RunOptions, provisioner_for
from testbed.processes import cli

pytestmark = pytest.mark.slow  # each test runs state-controller as a process, most to their end


def refused(*argv: str) -> str:
    """What ``state-controller run ARGV`` refuses, asked of the command's own checks in
    this process: each refusal's wording, without a process per case (each test runs one
    as a process too, for its exit status and its one line)."""
    with pytest.raises(ValueError) as refusal:
        run_options(build_parser().parse_args(["run", *argv]))
    return str(refusal.value)


def test_demo_settles_and_prints_a_json_summary(tmp_path: Path) -> None:
    store = tmp_path / "demo.db"
    done = cli(
        "demo", "--hosts", "12", "--speed", "20", "--faults", "--fault-rate", "0.5",
        "--exit-when-settled", "--json", "--store", str(store), "--timeout", "180",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["settled"] is True
    assert summary["at_target"] == 12 and summary["by_state"] == {"provisioned": 12}
    assert summary["faults"], "the seed must have injected faults"
    assert "metrics: http://127.0.0.1:" in done.stderr
    # then every Node rolled to its new configuration, as the controller's books tell it
    update = summary["update"]
    assert update["nodes"] == 12 and update["updated"] == 12, update
    assert update["by_step"] == {"updated": 12}
    assert sorted(summary["update_faults"].values()) == ["drain-blocked", "reboot-lost"]
    pools = cli("get", "nodepools", "--store", str(store))
    assert pools.returncode == 0, pools.stderr
    counts = {line.split()[0]: line.split()[1:4] for line in pools.stdout.splitlines()[1:]}
    assert counts == {"infra": ["1", "1", "0"], "worker": ["11", "11", "0"]}

    table = cli("get", "hoststates", "--store", str(store), "-n", "demo")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["NAME"] + [
        c.name.upper() for c in HOSTSTATE_COLUMNS if not c.priority
    ]
    assert len(lines) == 13 and all("Provisioned" in line for line in lines[1:])

    wide = cli("get", "hs", "--store", str(store), "-o", "wide")
    assert wide.stdout.splitlines()[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert "REGISTERED" in wide.stdout.splitlines()[0]

    hosts = cli("get", "hosts", "--store", str(store), "-n", "demo")
    assert hosts.stdout.splitlines()[0].split() == ["NAME"] + [
        c.name.upper() for c in HOST_COLUMNS if not c.priority
    ]
    as_json = json.loads(cli("get", "hosts", "--store", str(store), "-o", "json").stdout)
    assert len(as_json["items"]) == 12


def test_demo_that_cannot_settle_exits_non_zero(tmp_path: Path) -> None:
    done = cli(
        "demo", "--hosts", "4", "--speed", "20", "--faults", "--fault-rate", "1",
        "--fault-kinds", "credentials", "--fault-attempts", "0",
        "--exit-when-settled", "--json", "--timeout", "3",
    )  # fmt: skip
    assert done.returncode == 1
    summary = json.loads(done.stdout)
    assert summary["settled"] is False and len(summary["not_at_target"]) == 4
    assert summary["by_state"] == {"registering": 4}


def test_a_reboot_that_never_comes_back_holds_the_rollout(tmp_path: Path) -> None:
    done = cli(
        "demo", "--hosts", "3", "--speed", "10", "--faults", "--fault-rate", "1",
        "--fault-kinds", "reboot-lost", "--fault-attempts", "0", "--max-unavailable", "1",
        "--exit-when-settled", "--json", "--timeout", "20", "--remediation", "off",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert summary["at_target"] == 3  # provisioning itself went well
    lost = sorted(summary["update_faults"])
    assert lost == ["host-0000"], summary["update_faults"]
    update = summary["update"]
    # the lost node holds the pool's one slot: the others wait their turn
    assert update["by_step"] == {"rebooting": 1, "updated": 2}
    assert update["updated"] == 0
    assert update["stuck"] == ["host-0000 (rebooting)"]
    assert "stuck host-0000 (rebooting)" in done.stderr


def test_a_lost_reboot_is_power_cycled_and_the_rollout_goes_on() -> None:
    done = cli(
        "demo", "--hosts", "3", "--speed", "10", "--faults", "--fault-rate", "1",
        "--fault-kinds", "reboot-lost", "--fault-attempts", "0", "--max-unavailable", "1",
        "--exit-when-settled", "--json", "--timeout", "60",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert sorted(summary["update_faults"]) == ["host-0000"]
    assert summary["update"]["power_cycled"] == ["host-0000"]
    assert summary["update"]["updated"] == 3
    assert "PowerCycled: RebootLost: power-cycling through the BMC, attempt 1 of 3" in done.stderr


def test_a_firmware_rollout_services_every_host_and_a_refused_image_is_fixed() -> None:
    done = cli(
        "demo", "--hosts", "4", "--speed", "10", "--faults", "--fault-rate", "0.5",
        "--fault-kinds", "reboot-lost", "--firmware-rollout", "--exit-when-settled",
        "--json", "--timeout", "90",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    firmware = summary["firmware"]
    assert (firmware["serviced"], firmware["hosts"]) == (4, 4)
    refused = [k for k, kinds in summary["faults"].items() if kinds == ["firmware"]]
    assert [f"demo/{name}" for name in firmware["fixed_image"]] == refused
    assert "ServicingFailed: the BMC refused the firmware image" in done.stderr
    assert "Stuck: host has been updating firmware" in done.stderr  # the hanging flash


def test_run_rejects_remediation_settings_it_cannot_use() -> None:
    done = cli("run", "--remediation", "all", "--remediation-max-unhealthy", "140%")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--remediation-max-unhealthy '140%': give a percentage" in done.stderr
    assert "--remediation-attempts: give 1 or more" in refused(
        "--remediation", "worker", "--remediation-attempts", "0"
    )


def test_bad_arguments_name_the_flag() -> None:
    done = cli("demo", "--fault-kinds", "gremlins")
    assert done.returncode == 2 and "--fault-kinds" in done.stderr and "credentials" in done.stderr
    assert "reboot-lost" in done.stderr
    zero = cli("demo", "--max-unavailable", "0")
    assert zero.returncode == 2 and "--max-unavailable ≥ 1" in zero.stderr
    assert "Traceback" not in done.stderr + zero.stderr
    missing = cli("get", "hosts", "--store", "/nonexistent/x.db")
    assert missing.returncode == 2 and "does not exist" in missing.stderr


GENERATED = [
    "api/kustomization.yaml",
    "api/v1alpha1/hoststate.io_hosts.yaml",
    "api/v1alpha1/hoststate.io_hoststates.yaml",
    "api/v1alpha1/hoststate.io_nodepools.yaml",
    "api/v1alpha1/hoststate.io_hoststatecontrollers.yaml",
    "charts/hoststate/crds/hoststate.io_hosts.yaml",
    "charts/hoststate/crds/hoststate.io_hoststates.yaml",
    "charts/hoststate/crds/hoststate.io_nodepools.yaml",
    "charts/hoststate/crds/hoststate.io_hoststatecontrollers.yaml",
    "manifests/base/prometheusrule.yaml",
    "dashboards/hoststate-controller.json",
    "dashboards/hoststate-fleet.json",
    "dashboards/hoststate-host.json",
    "dashboards/hoststate-rollout.json",
    "docs/metrics.md",
    "docs/reference/api.md",
]
SOURCES = ["manifests/prometheus/hoststate.rules.yaml"]  # hand-written, read by gen


def test_gen_writes_the_committed_files(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    for source in SOURCES:
        (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / source, tmp_path / source)
    done = cli("gen", "all", "--root", str(tmp_path))
    assert done.returncode == 0, done.stderr
    written = sorted(
        str(p.relative_to(tmp_path))
        for p in tmp_path.rglob("*.*")
        if str(p.relative_to(tmp_path)) not in SOURCES
    )
    assert written == sorted(GENERATED)
    stale = [
        path for path in GENERATED if (tmp_path / path).read_text() != (root / path).read_text()
    ]
    assert stale == [], "run: state-controller gen all"


def test_gen_says_what_is_missing_in_one_line(tmp_path: Path) -> None:
    done = cli("gen", "prometheusrule", "--root", str(tmp_path))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "hoststate.rules.yaml" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_run_rejects_leader_election_timings_the_client_would_exit_on() -> None:
    done = cli("run", "--leader-elect", "--retry-period", "0")
    assert done.returncode == 2 and "--retry-period must be at least 1 second" in done.stderr
    assert "--lease-duration must be longer" in refused(
        "--lease-duration", "5", "--renew-deadline", "6"
    )


def test_run_rejects_a_shard_name_or_a_shard_with_leader_election_or_observed_bmhs() -> None:
    done = cli("run", "--shard", "Replica_1")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--shard 'Replica_1': name it as a label value and a Lease name allow" in done.stderr
    assert "--shard and --leader-elect: a shard holds its own Lease" in refused(
        "--shard", "replica-1", "--leader-elect"
    )
    assert "--shard with --sources baremetalhosts: BareMetalHosts are not shared" in refused(
        "--shard", "replica-1", "--sources", "hosts,baremetalhosts"
    )
    # which replicas are shards: never guessed
    assert "--shards is required with --shard" in refused("--shard", "replica-1")
    assert "'hoststate-controller-3' is not among them" in refused(
        "--shard", "hoststate-controller-3", "--shards", "3"
    )


def test_run_says_when_no_hardware_is_touched(caplog: pytest.LogCaptureFixture) -> None:
    """A controller deployed without --ironic-url only pretends; its log says so first."""
    caplog.set_level("WARNING", logger="state_controller")
    provisioner_for(RunOptions())
    (record,) = [r for r in caplog.records if "simulated provisioner" in r.getMessage()]
    assert record.levelname == "WARNING"
    assert "no hardware is touched" in record.getMessage()
    assert "--ironic-url" in record.getMessage()


def test_run_keeps_its_simulated_machines_where_it_is_told(tmp_path: Path) -> None:
    """run --simulated-hardware FILE: a restarted controller finds the machines it drove."""
    from state_controller.provisioning.simulated import SimulatedProvisioner
    from tests.ironic.helpers import view_of

    kept = str(tmp_path / "machines.db")
    first = provisioner_for(RunOptions(simulated_hardware=kept))
    assert isinstance(first, SimulatedProvisioner)
    registered = first.register(view_of("metal", 0), credentials_changed=False)
    assert registered.done and registered.provider_id
    again = provisioner_for(RunOptions(simulated_hardware=kept))
    assert isinstance(again, SimulatedProvisioner)
    machine = again.machine(view_of("metal", 0).bmc_address)
    assert machine.node_id == registered.provider_id and machine.started["register"] == 1
    with pytest.raises(ValueError, match="cannot keep the simulated machines"):
        provisioner_for(RunOptions(simulated_hardware=str(tmp_path / "machines.db" / "x")))


def test_run_rejects_a_stuck_threshold_it_cannot_read_in_one_line() -> None:
    problem = refused("--stuck-after", "drainig=45m")
    assert "no state or step 'drainig'" in problem and "draining" in problem
    done = cli("run", "--stuck-after", "draining=soon")
    assert done.returncode == 2 and "'soon' is not a duration" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_run_rejects_a_pool_status_interval_it_cannot_read() -> None:
    done = cli("run", "--node-pool-status-interval", "often")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "--node-pool-status-interval: 'often' is not a duration" in last


def test_logs_in_json_give_each_failure_with_its_host_state_and_error_type() -> None:
    done = cli(
        "--log-format", "json", "--log-level", "info",
        "demo", "--hosts", "3", "--speed", "20", "--faults", "--fault-rate", "1",
        "--fault-kinds", "credentials", "--no-update", "--exit-when-settled", "--no-table",
        "--timeout", "180",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    logged = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    failures = [line for line in logged if line.get("error_type") == "registration error"]
    assert {line["host"] for line in failures} == {f"demo/host-{i:04d}" for i in range(3)}
    assert all(line["level"] == "warning" and line["state"] for line in failures)
    assert all(line["msg"].startswith(line["host"]) for line in failures)
    assert len(failures) == 3  # a repeat of the same error is counted, not logged again
    assert "pw-0" not in done.stderr and "Traceback" not in done.stderr


KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def test_a_port_out_of_range_or_in_use_is_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    out_of_range = cli("demo", "--metrics-port", "99999")
    assert out_of_range.returncode == 2
    assert out_of_range.stderr.strip().splitlines() == [
        "state-controller demo: argument --metrics-port: '99999' is not a port: write 0 to "
        "65535 (see state-controller demo --help)"
    ]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        in_use = cli("demo", "--hosts", "1", "--metrics-port", str(port), timeout=60)
        run_in_use = cli(
            "run", "--metrics-bind-address", f"127.0.0.1:{port}", "--kubeconfig", str(kubeconfig)
        )
    assert in_use.returncode == 2 and "Traceback" not in in_use.stderr
    assert in_use.stderr.strip().splitlines()[-1] == (
        f"--metrics-port 127.0.0.1:{port}: cannot listen there (Address already in use); "
        "choose another port, or 0 for any free one"
    )
    assert run_in_use.returncode == 2 and "Traceback" not in run_in_use.stderr
    assert run_in_use.stderr.strip().splitlines()[-1] == (
        f"--metrics-bind-address 127.0.0.1:{port}: cannot listen there (Address already in "
        "use); choose another port, or 0 for any free one"
    )
    bad_config = cli("run", "--kubeconfig", "/nonexistent", "--metrics-bind-address", "0")
    assert bad_config.returncode == 2 and len(bad_config.stderr.strip().splitlines()) == 1


def test_a_second_demo_on_its_store_carries_on_without_adopting_again(tmp_path: Path) -> None:
    """demo --store keeps the simulated machines beside the objects: a second run finds
    the fleet provisioned and the machines deployed, and records nothing new."""
    store = tmp_path / "demo.db"
    args = ("demo", "--hosts", "3", "--speed", "20", "--exit-when-settled", "--no-update",
            "--no-table", "--store", str(store), "--timeout", "180")  # fmt: skip
    assert cli(*args).returncode == 0
    before = histories(store)
    again = cli(*args)
    assert again.returncode == 0, again.stderr
    after = histories(store)
    assert after == before and len(after) == 3  # no Adopted, no PoweredOn, nothing twice


def histories(store: Path) -> dict[str, list[dict[str, object]]]:
    listed = cli("get", "hoststates", "--store", str(store), "-o", "json")
    return {
        i["metadata"]["name"]: i["status"]["history"] for i in json.loads(listed.stdout)["items"]
    }


@pytest.mark.parametrize("flag", ["--no-update", "--no-upgrade"])
def test_the_demo_skips_the_rollout_under_its_name_and_its_first_name(flag: str) -> None:
    import argparse

    from state_controller.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["demo", flag]).no_update is True
    assert parser.parse_args(["demo"]).no_update is False
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    shown = commands.choices["demo"].format_help()
    assert "--no-update" in shown and "--no-upgrade" not in shown  # the old name, unlisted
