"""The alert rules: promtool accepts them, its unit tests (fires when it should, quiet when it
should not) pass for every alert, and every alert says what a person paged needs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from testbed.prometheus import promtool

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "manifests" / "prometheus" / "hoststate.rules.yaml"
UNIT_TESTS = Path(__file__).with_name("hoststate.rules.test.yaml")
RUNBOOKS = ROOT / "docs" / "runbooks.md"


def alerts() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"] if "alert" in rule]


def test_promtool_check_rules(prometheus: Path) -> None:
    checked = promtool(prometheus, "check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in checked.stdout


def test_promtool_unit_tests_pass(prometheus: Path) -> None:
    tested = promtool(prometheus, "test", "rules", str(UNIT_TESTS))
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_alert_is_tested_firing_and_quiet() -> None:
    fired: set[str] = set()
    quiet: set[str] = set()
    for case in yaml.safe_load(UNIT_TESTS.read_text())["tests"]:
        for check in case["alert_rule_test"]:
            (fired if check["exp_alerts"] else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in alerts()}
    assert names - fired == set(), "no unit test in which these fire"
    assert names - quiet == set(), "no unit test in which these stay quiet"


def test_every_alert_says_what_a_person_paged_needs() -> None:
    anchors = {
        re.sub(r"[^a-z0-9-]", "", line[3:].strip().lower().replace(" ", "-"))
        for line in RUNBOOKS.read_text().splitlines()
        if line.startswith("## ")
    }
    for rule in alerts():
        name, notes = rule["alert"], rule.get("annotations", {})
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert re.fullmatch(r"\d+[smh]", rule["for"]), name
        assert notes.get("summary") and notes.get("description"), name
        url = notes["runbook_url"]
        assert url.endswith(f"docs/runbooks.md#{name.lower()}"), name
        assert name.lower() in anchors, f"docs/runbooks.md has no section {name}"
        # the description names what is affected: the host, node or pool, from the series'
        # labels
        if "hoststate_host_" in rule["expr"] and "stuck" in rule["expr"]:
            assert "$labels.host" in notes["description"], name
        if "node_update" in rule["expr"]:
            assert "$labels.node" in notes["description"], name
        if "hoststate_nodepool_" in rule["expr"]:
            assert "$labels.pool" in notes["description"], name
