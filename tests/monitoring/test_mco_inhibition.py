"""The Alertmanager inhibition docs/alerts.md gives for the Machine Config Operator's
alerts parses, and each rule's ``equal`` names a label both alerts really carry.

hoststate's side is read from what promtool proves: the labels each alert fires with in
``hoststate.rules.test.yaml`` (``test_rules.py`` runs it against the rules file). The
operator's side is the label each of its alerts names the node by, as its own rules
write it (openshift/machine-config-operator, branch release-4.20, commit
afed09939d80d86cafd38e9f733cc49ed16af092,
``install/0000_90_machine-config_01_prometheus-rules.yaml``): ``Reboot failed on
{{ $labels.node }}``, ``Drain failed on {{ $labels.exported_node }}``, ``Error detected in
pivot logs on {{ $labels.node }}``; with the label each sets, ``namespace:
openshift-machine-config-operator``, which must never be matched on.
"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from testbed import tools
from testbed.processes import ServerProcess, free_port, http_probe
from tests.conftest import wait_for

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "alerts.md"
UNIT_TESTS = Path(__file__).with_name("hoststate.rules.test.yaml")
RULES = ROOT / "manifests" / "prometheus" / "hoststate.rules.yaml"

# the operator's alert -> the label its rule names the node by, and the labels it sets
MCO_NODE_LABEL = {
    "MCDRebootError": "node",
    "MCCDrainError": "exported_node",
    "MCDPivotError": "node",
}
MCO_SET = {"namespace", "severity"}
# Alertmanager's matcher: a label name, an operator, a quoted value (prometheus/alertmanager,
# docs/configuration.md, <matcher>)
MATCHER = re.compile(r'^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)\s*"([^"]*)"\s*$')


def sample() -> dict[str, Any]:
    text = DOC.read_text()
    block = text.split("# inhibit-mco.yaml\n", 1)[1].split("```", 1)[0]
    loaded: dict[str, Any] = yaml.safe_load(block)
    return loaded


def alertname(matchers: list[str]) -> str:
    names = []
    for matcher in matchers:
        parsed = MATCHER.match(matcher)
        assert parsed, f"not an Alertmanager matcher: {matcher!r}"
        if parsed.group(1) == "alertname":
            assert parsed.group(2) == "=", matcher
            names.append(parsed.group(3))
    assert len(names) == 1, matchers
    return names[0]


def fired_labels() -> dict[str, list[set[str]]]:
    """Each alert's label names in every firing promtool expects of it."""
    fired: dict[str, list[set[str]]] = {}
    for test in yaml.safe_load(UNIT_TESTS.read_text())["tests"]:
        for case in test.get("alert_rule_test") or ():
            for alert in case.get("exp_alerts") or ():
                fired.setdefault(case["alertname"], []).append(set(alert["exp_labels"]))
    return fired


def test_each_rule_matches_the_node_by_a_label_both_alerts_carry() -> None:
    rules = sample()["inhibit_rules"]
    ours = {r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]}
    fired = fired_labels()
    assert {alertname(rule["source_matchers"]) for rule in rules} == set(MCO_NODE_LABEL)
    for rule in rules:
        theirs, target = alertname(rule["source_matchers"]), alertname(rule["target_matchers"])
        assert target in ours, target
        assert rule["equal"] == [MCO_NODE_LABEL[theirs]], rule  # the node, and only it
        assert not set(rule["equal"]) & MCO_SET, rule
        assert fired[target], f"{target} is never tested firing"
        for labels in fired[target]:
            assert set(rule["equal"]) <= labels, (target, labels)


def test_only_the_keys_alertmanager_reads_are_used() -> None:
    """Alertmanager refuses a configuration with an unknown key; the old ``source_match``
    form is deprecated beside ``source_matchers`` (docs/configuration.md, <inhibit_rule>)."""
    for rule in sample()["inhibit_rules"]:
        assert set(rule) == {"source_matchers", "target_matchers", "equal"}, rule


def first_firing(alert: str) -> dict[str, str]:
    """The labels promtool expects ``alert`` to fire with, first case."""
    for test in yaml.safe_load(UNIT_TESTS.read_text())["tests"]:
        for case in test.get("alert_rule_test") or ():
            if case["alertname"] == alert and case.get("exp_alerts"):
                labels: dict[str, str] = case["exp_alerts"][0]["exp_labels"]
                return {"alertname": alert, **labels}
    raise AssertionError(f"{alert} is never tested firing")


def ours(alert: str, node: str) -> dict[str, str]:
    labels = first_firing(alert)
    labels.update({k: node for k in ("node", "exported_node") if k in labels})
    return labels


# The operator's alerts as its rules make them (labels set by the rule, then the
# metric's and the target's; see the module docstring): the drained node of
# MCCDrainError is exported_node, its node the controller's own.
MCO = "openshift-machine-config-operator"
THEIRS = [
    {"alertname": "MCDRebootError", "node": "worker-1", "namespace": MCO, "severity": "critical"},
    {"alertname": "MCCDrainError", "exported_node": "worker-2", "node": "master-0",
     "namespace": MCO, "severity": "warning"},
    {"alertname": "MCDPivotError", "node": "worker-3", "namespace": MCO, "severity": "warning"},
]  # fmt: skip


def test_alertmanager_silences_ours_for_the_same_node_only(tmp_path: Path) -> None:
    """The sample in a real Alertmanager (tools/alertmanager/build.sh), on loopback:
    ``amtool check-config`` takes it, and of
    hoststate's alerts only those of a node the operator already alerts on are
    suppressed, the drain alert of the controller's own node (MCCDrainError's ``node``)
    not among them."""
    binary = tools.alertmanager()
    config = tmp_path / "alertmanager.yml"
    receiver = {"route": {"receiver": "nobody"}, "receivers": [{"name": "nobody"}]}
    config.write_text(yaml.safe_dump({**receiver, **sample()}))
    checked = subprocess.run(
        [str(binary.with_name("amtool")), "check-config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    port = free_port()
    server = ServerProcess("alertmanager", tmp_path / "alertmanager.log", stop_timeout=10)
    server.start(
        [str(binary), f"--config.file={config}",
         f"--storage.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
         "--cluster.listen-address="],
        tmp_path,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    suppressed = {
        ("NodeRebootStuck", "worker-1"): True,
        ("NodeRebootStuck", "worker-9"): False,
        ("NodeDrainStuck", "worker-2"): True,
        ("NodeDrainStuck", "master-0"): False,  # MCCDrainError's node: the controller's
        ("NodeUpdateDegraded", "worker-3"): True,
        ("NodeUpdateDegraded", "worker-1"): False,  # worker-1's trouble is a reboot
    }
    try:
        server.wait_ready(http_probe(f"{base}/-/ready", timeout=2), timeout=60, not_ready="ready")
        now = datetime.now(UTC)
        alerts = [*THEIRS, *(ours(alert, node) for alert, node in suppressed)]
        body = json.dumps([
            {"labels": labels, "startsAt": now.isoformat(),
             "endsAt": (now + timedelta(hours=1)).isoformat()}
            for labels in alerts
        ]).encode()  # fmt: skip
        request = urllib.request.Request(
            f"{base}/api/v2/alerts", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200

        def states() -> dict[tuple[str, str], bool] | None:
            with urllib.request.urlopen(f"{base}/api/v2/alerts", timeout=30) as response:
                listed = json.load(response)
            seen = {
                (a["labels"]["alertname"], a["labels"]["node"]): a["status"]["state"]
                for a in listed
                if a["labels"]["alertname"].startswith("Node")
            }
            if len(seen) < len(suppressed):
                return None
            return {key: state == "suppressed" for key, state in seen.items()}

        wait_for(lambda: states() == suppressed, timeout=60, what="each alert's inhibition")
    finally:
        server.stop()
