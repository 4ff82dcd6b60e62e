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

import re
from pathlib import Path
from typing import Any

import yaml

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
