"""A real Prometheus (Debian's package) on loopback scrapes ``state-controller demo`` with
faults and a firmware rollout, and evaluates every dashboard query and every alert rule
through its HTTP API.

Each dashboard query must parse, read only families the controller exports, and return
data over the run (as the panel shows its time range). Every rule must evaluate
without error, and HostStuck must go pending or firing for the hosts whose faults held
them (a hang), for no host without a fault.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from state_controller.monitoring.catalogue import families
from state_controller.provisioning.fault_plan import FAULT_KINDS, FaultPlan
from testbed.processes import ServerProcess, free_port, http_probe
from testbed.prometheus import api_get
from tests.monitoring.dashboards import files, load, queries

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "manifests" / "prometheus" / "hoststate.rules.yaml"
HOSTS, RATE, SEED, NS = 12, 0.3, 3, "demo"
KINDS = ("hang", "provisioning", "drain-blocked", "reboot-lost")  # host and update faults
EXPORTED = (
    "hoststate_",
    "controller_runtime_",
    "workqueue_",
    "rest_client_",
    "leader_",
    "process_",
)
# Families with a series only while a host is being remediated: the demo's lost reboot is
# power-cycled within a second or two, too short a time for every run to be scraped in.
# A panel or rule reading only these may find no data; their names are still checked
# against the catalogue of what the controller registers.
WHILE_REMEDIATED = {"hoststate_host_remediation_attempts"}
# Families with a series only while a BMC reports a hardware health other than OK: the
# demo drives Hosts, whose simulated BMCs report none (an observed BareMetalHost's
# Healthy condition does: tests/unit/test_observed_baremetalhost_facts.py).
WHILE_UNHEALTHY = {"hoststate_host_hardware_unhealthy"}
# What Grafana puts in place of its variables when it sends a panel's query.
GRAFANA = {
    "$__rate_interval": "20s",
    "$__range": "3m",
    "$__interval_ms": "2000",
    "$__interval": "2s",
}


@dataclass
class Run:
    prometheus: str  # base URL of its HTTP API
    started: float  # when the demo started
    settled: float  # when the demo said it settled
    stuck_alerts: set[str]  # hosts HostStuck was pending or firing for, while it ran
    plan: FaultPlan


def _faults() -> FaultPlan:
    """The demo's own fault plan for these flags (it is seeded)."""
    keys = [f"{NS}/host-{i:04d}" for i in range(HOSTS)]
    kinds = [kind for kind in FAULT_KINDS if kind in KINDS]  # the CLI keeps this order
    return FaultPlan.random(keys, rate=RATE, kinds=kinds, seed=SEED)


def _hosts_with(plan: FaultPlan, kind: str) -> set[str]:
    return {
        key.rpartition("/")[2] for key, faults in plan.hosts().items() if faults[0].kind == kind
    }


@pytest.fixture(scope="module")
def run(prometheus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    tmp = tmp_path_factory.mktemp("prometheus")
    metrics_port, web_port = free_port(), free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [
            {
                "job_name": "hoststate",
                "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}],
            }
        ],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    server = ServerProcess("prometheus", tmp / "prometheus.log", stop_timeout=10)
    demo = ServerProcess("demo", tmp / "demo.log", stop_timeout=10)
    base = f"http://127.0.0.1:{web_port}"
    try:
        server.start(
            [
                str(prometheus / "usr" / "bin" / "prometheus"),
                f"--config.file={tmp / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{web_port}",
            ],
            tmp,
        )
        server.wait_ready(http_probe(f"{base}/-/ready", timeout=2), timeout=60, not_ready="ready")
        started = time.time()
        demo.start(
            [
                sys.executable, "-m", "state_controller.cli", "demo",
                "--hosts", str(HOSTS), "--faults", "--fault-rate", str(RATE),
                "--fault-kinds", ",".join(KINDS), "--seed", str(SEED), "--no-table",
                "--metrics-port", str(metrics_port), "--timeout", "240", "--firmware-rollout",
            ],
            ROOT,
        )  # fmt: skip
        stuck: set[str] = set()
        deadline = time.monotonic() + 200
        while "settled in" not in demo.log_path.read_text():
            assert demo.exited() is None, demo.log_tail()
            assert time.monotonic() < deadline, f"the demo did not settle:\n{demo.log_tail()}"
            for alert in api_get(base, "/api/v1/alerts")["alerts"]:
                if alert["labels"]["alertname"] == "HostStuck":
                    stuck.add(alert["labels"]["host"])
            time.sleep(0.5)
        settled = time.time()
        # the demo goes on serving: Prometheus keeps scraping it after it settled
        query = f'count_over_time(up{{job="hoststate"}}[30s] @ {settled + 5:.0f}) >= 5'
        until = time.monotonic() + 60
        while (
            time.time() < settled + 6 or not api_get(base, "/api/v1/query", query=query)["result"]
        ):
            assert time.monotonic() < until, "Prometheus stopped scraping the settled demo"
            time.sleep(0.5)
        # and what Prometheus itself kept of the alert (ALERTS, written at every evaluation
        # while pending or firing): a poll of /alerts above can miss a short pending spell
        window = int(settled - started) + 10
        kept = (
            f'count by (host) (count_over_time(ALERTS{{alertname="HostStuck"}}[{window}s] '
            f"@ {settled:.0f}))"
        )
        stuck |= {r["metric"]["host"] for r in api_get(base, "/api/v1/query", query=kept)["result"]}
        yield Run(base, started, settled, stuck, _faults())
    finally:
        demo.stop()
        server.stop()


def _exported(base: str) -> set[str]:
    return set(api_get(base, "/api/v1/label/__name__/values"))


def _catalogued() -> set[str]:
    """Every family the controller registers (docs/metrics.md's catalogue)."""
    return {family.name for family in families()}


def _names(expr: str) -> set[str]:
    return {n for n in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr) if n.startswith(EXPORTED)}


def test_stuck_host_alert_goes_pending_for_the_held_hosts_and_no_other(run: Run) -> None:
    hung = _hosts_with(run.plan, "hang")
    faulted = {key.rpartition("/")[2] for key in run.plan.hosts()}
    assert hung, "the seed gives no hanging host: choose another"
    assert hung <= run.stuck_alerts
    assert run.stuck_alerts <= faulted, (
        f"HostStuck for hosts with no fault: {run.stuck_alerts - faulted}"
    )


def test_every_rule_evaluates_and_reads_only_exported_families(run: Run) -> None:
    rarely = (WHILE_REMEDIATED | WHILE_UNHEALTHY) & _catalogued()
    exported = _exported(run.prometheus) | {"up"} | rarely
    groups = api_get(run.prometheus, "/api/v1/rules")["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    planned = yaml.safe_load(RULES.read_text())["groups"]
    assert len(rules) == sum(len(g["rules"]) for g in planned)
    for rule in rules:
        assert rule["health"] == "ok", f"{rule['name']}: {rule.get('lastError')}"
        assert _names(rule["query"]) <= exported, rule["name"]


@pytest.mark.parametrize("path", files(), ids=lambda p: p.stem)
def test_every_panel_query_returns_data(run: Run, path: Path) -> None:
    exported = _exported(run.prometheus)
    erroring = sorted(_hosts_with(run.plan, "provisioning"))
    assert erroring, "the seed gives no host in error: choose another"
    # the variables a user picks: a namespace and a host (one that failed, for its errors)
    chosen = {
        "$namespace": NS if path.stem == "hoststate-host" else ".*",
        "$host": erroring[0],
        "$pool": ".*",
    }
    empty = []
    situational = WHILE_REMEDIATED & _catalogued()
    for title, expr in queries(load(path)):
        if _names(expr) <= situational and not _names(expr) & exported:
            continue  # no remediation was scraped in this run (see WHILE_REMEDIATED)
        assert _names(expr) <= exported, f"{title}: {_names(expr) - exported} not exported"
        for variable, value in {**GRAFANA, **chosen}.items():
            expr = expr.replace(variable, value)
        found = api_get(
            run.prometheus,
            "/api/v1/query_range",
            query=expr,
            start=f"{run.started:.0f}",
            end=f"{time.time():.0f}",
            # the scrape interval: a series scraped once (a remediation's, gone a scrape
            # later) lies between two steps of 2 s half of the time; at 1 s, never
            step="1",
        )["result"]
        if not found:
            empty.append((title, expr))
    assert empty == []
