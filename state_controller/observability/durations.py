"""The learned durations at scrape time: for each key the controller learned (a kind of
step, the step, a pool and a hardware class, ``*`` for any), the median and the late bound
of its window, and how many durations the window holds.

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


def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
    return (
        GaugeMetricFamily(
            "hoststate_learned_duration_seconds",
            "How long a step took, learned from the last 100 durations of its kind of step, "
            'pool and hardware class ("*": any): the median (quantile 0.5) and the late bound '
            f"(quantile {LATE_QUANTILE}).",
            labels=[*LABELS, "quantile"],
        ),
        GaugeMetricFamily(
            "hoststate_learned_duration_samples",
            "How many durations the learned quantiles of a step rest on (at most 100).",
            labels=LABELS,
        ),
    )


class LearnedCollector(Collector):
    def __init__(self, learned: Learned) -> None:
        self.learned = learned

    def describe(self) -> Iterable[Any]:
        return _families()

    def collect(self) -> Iterable[Any]:
        seconds, samples = _families()
        for key in self.learned.known():
            estimate = self.learned.exact(key)
            if estimate is None:
                continue
            labels = [key.kind, key.step, key.pool, key.hardware]
            seconds.add_metric([*labels, "0.5"], estimate.median)
            seconds.add_metric([*labels, str(LATE_QUANTILE)], estimate.late)
            samples.add_metric(labels, estimate.samples)
        return [seconds, samples]
