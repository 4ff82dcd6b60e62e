"""The learned durations at scrape time: for each key the controller learned (a kind of
step, the step, a pool and a hardware class, ``*`` for any), the median and the late bound
of its window, and how many durations the window holds; in two gauges, not one with a
``quantile`` label, which Prometheus keeps for summaries.

Quantiles of the last hundred, not a histogram: a histogram's buckets count every duration
since the start, which is what ``hoststate_*_duration_seconds`` already show fleet-wide;
these say what an estimate rests on now, per pool and class, which a dashboard shows as a
table or a bar per class. Bounded as the store is (:data:`~..durations.learned.MAX_KEYS`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..durations.learned import LATE_QUANTILE, Learned

LABELS = ["kind", "step", "pool", "hardware_class"]
UNLABELED_POOL = "unlabeled"  # the NodePool of machines without a pool: a label is never empty
UNKNOWN_CLASS = "unknown"  # no inventory (yet), or a Node with no machine behind it


def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily]:
    about = 'of its kind of step, pool and hardware class ("*": any)'
    return (
        GaugeMetricFamily(
            "hoststate_learned_duration_median_seconds",
            f"How long a step took: the median of the last 100 durations {about}.",
            labels=LABELS,
        ),
        GaugeMetricFamily(
            "hoststate_learned_duration_late_seconds",
            f"The late bound of a step: the {LATE_QUANTILE} quantile of the last 100 "
            f"durations {about}.",
            labels=LABELS,
        ),
        GaugeMetricFamily(
            "hoststate_learned_duration_samples",
            "How many durations the learned median and late bound of a step rest on (at most 100).",
            labels=LABELS,
        ),
    )


class LearnedCollector(Collector):
    def __init__(self, learned: Learned) -> None:
        self.learned = learned

    def describe(self) -> Iterable[Any]:
        return _families()

    def collect(self) -> Iterable[Any]:
        median, late, samples = _families()
        for key in self.learned.known():
            estimate = self.learned.exact(key)
            if estimate is None:
                continue
            labels = [
                key.kind,
                key.step,
                key.pool or UNLABELED_POOL,
                key.hardware or UNKNOWN_CLASS,
            ]
            median.add_metric(labels, estimate.median)
            late.add_metric(labels, estimate.late)
            samples.add_metric(labels, estimate.samples)
        return [median, late, samples]
