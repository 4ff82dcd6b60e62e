"""The alert rules for the prometheus-operator: a ``PrometheusRule`` made from the plain
rules file, so both kinds of Prometheus get the same rules from one source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

RULES = Path("manifests/prometheus/hoststate.rules.yaml")
PROMETHEUS_RULE = Path("manifests/base/prometheusrule.yaml")
NAME = "hoststate-alerts"
NAMESPACE = "hoststate-system"


def load_groups(text: str, source: str) -> list[dict[str, Any]]:
    """The rule groups of a plain rules file, or a ValueError naming what is wrong."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ValueError(f"{source}: not YAML: {err}") from None
    groups = doc.get("groups") if isinstance(doc, dict) else None
    if not isinstance(groups, list) or not groups:
        raise ValueError(f"{source}: write a Prometheus rules file with a 'groups:' list")
    return groups


def prometheus_rule(rules_text: str, source: str = str(RULES)) -> str:
    """The PrometheusRule manifest holding the groups of ``rules_text``."""
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/component": "controller"},
        },
        "spec": {"groups": load_groups(rules_text, source)},
    }
    header = (
        f"# Generated from {source}\n"
        "# by `state-controller gen prometheusrule`: edit that file, then run the command\n"
        "# (a test fails when the two differ).\n"
        "# Your Prometheus' ruleSelector may need a label (e.g. `release: <name>`), added\n"
        "# with a kustomize overlay.\n"
    )
    body = yaml.safe_dump(rule, sort_keys=False, width=100, allow_unicode=True)
    return header + body


def write(root: Path) -> list[Path]:
    source = root / RULES
    target = root / PROMETHEUS_RULE
    text = prometheus_rule(source.read_text(), str(RULES))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return [target]
