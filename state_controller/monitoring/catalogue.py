"""The metrics catalogue, ``docs/metrics.md``: every family the controller registers, read
from a live registry (name, type, labels, help), and the codes of the state and step
gauges. ``state-controller gen metrics`` writes it; a test fails when it is stale."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client.metrics import MetricWrapperBase

from ..books.stuck import StuckPolicy
from ..durations.learned import Learned
from ..observability.collectors import STATE_CODES, STEP_CODES
from ..observability.metrics import Metrics

CATALOGUE = Path("docs/metrics.md")
SUFFIX = {"counter": "_total"}  # the name a counter is exposed under


@dataclass(frozen=True)
class Family:
    name: str
    type: str
    labels: tuple[str, ...]
    help: str


def families() -> list[Family]:
    """Every family of a fully wired :class:`Metrics`, in registration order.

    prometheus-client offers no public list of a registry's collectors, so this reads
    ``_collector_to_names``, and the label names its metric objects keep.
    """
    metrics = Metrics()
    metrics.watch_books(dict, StuckPolicy())
    metrics.watch_pools(list)
    metrics.watch_durations(Learned())
    metrics.watch_controller(dict)
    metrics.watch_workers(1, lambda _: 0.0, lambda _: 0.0, lambda _: 0.0)
    found: list[Family] = []
    for collector in list(metrics.registry._collector_to_names):
        if isinstance(collector, MetricWrapperBase):
            kind = str(collector._type)
            name = collector._name + SUFFIX.get(kind, "")
            found.append(Family(name, kind, tuple(collector._labelnames), collector._documentation))
            continue
        described: Any = getattr(collector, "describe", lambda: [])() or collector.collect()
        for family in described:
            labels = getattr(family, "_labelnames", None) or sorted(
                {label for sample in family.samples for label in sample.labels}
            )
            name = family.name + SUFFIX.get(family.type, "")
            found.append(Family(name, family.type, tuple(labels), family.documentation))
    return found


def render() -> str:
    lines = [
        "# Metrics",
        "",
        "Generated from the controller's registry by `state-controller gen metrics`; a test",
        "fails when this file and the code differ. Names are part of the API: the",
        "dashboards and alerts use them. `hoststate_*` describe hosts and nodes; the",
        "controller's machinery uses controller-runtime's and client-go's names, so",
        "dashboards made for controller-runtime work unchanged. One work queue and one",
        "pool of workers serve every kind of key, and each kind is shown as a controller",
        "and a queue of its own: `controller` and `name` are `host`, `node` (a Node with",
        "no Host), `baremetalhost` (an observed BareMetalHost) or `pool` (a NodePool);",
        "`max_concurrent_reconciles` is the whole pool's under each.",
        "",
        "Per-host and per-node series carry no state label: the state is the value",
        "(a code, below), so a host keeps one series for its whole life. Series that",
        "name a state (stuck, in error) exist only while the host is so. Error and",
        "outcome counters start at 0 for every label value that can occur.",
        "",
        "| metric | type | labels | meaning |",
        "| --- | --- | --- | --- |",
    ]
    for f in families():
        labels = ", ".join(f"`{label}`" for label in f.labels) or "—"
        lines.append(f"| `{f.name}` | {f.type} | {labels} | {f.help} |")
    lines += [
        "",
        "## State codes (`hoststate_host_state`)",
        "",
        "| value | provisioning state |",
        "| --- | --- |",
        *(f"| {code} | {state.value or 'none (new)'} |" for state, code in STATE_CODES.items()),
        "",
        "## Step codes (`hoststate_node_update_step`)",
        "",
        "| value | update step |",
        "| --- | --- |",
        *(f"| {code} | {step.value} |" for step, code in STEP_CODES.items()),
        "",
    ]
    return "\n".join(lines)


def write(root: Path) -> list[Path]:
    path = root / CATALOGUE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render())
    return [path]
