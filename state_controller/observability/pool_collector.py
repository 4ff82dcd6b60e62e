"""The NodePools at scrape time, as written (``kubectl get nodepools``): their counts, their
SourcesAgree condition, and while a rollout has one its estimate and OnSchedule condition.
Read from the NodePools the controller keeps, never computed again here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..api.timefmt import parse_rfc3339

POOL_COUNTS = {  # NodePool status field -> gauge
    "machineCount": ("hoststate_nodepool_machines", "Nodes in each pool."),
    "updatedMachineCount": (
        "hoststate_nodepool_updated_machines",
        "Nodes of each pool at the pool's desired configuration, with no update in progress.",
    ),
    "updatingMachineCount": (
        "hoststate_nodepool_updating_machines",
        "Nodes of each pool with an update in progress.",
    ),
    "degradedMachineCount": (
        "hoststate_nodepool_degraded_machines",
        "Nodes of each pool whose update is degraded.",
    ),
    "unavailableMachineCount": (
        "hoststate_nodepool_unavailable_machines",
        "Nodes of each pool that are cordoned, not Ready or updating.",
    ),
}


POOL_SOURCES_DISAGREE = (
    "hoststate_nodepool_sources_disagree",
    "1 while a pool's MachineConfigPool counts a different number of degraded machines "
    "than its Nodes show, for longer than the grace (the NodePool's SourcesAgree condition "
    "is False and says both), else 0; one series per pool for its whole life.",
)


POOL_ESTIMATE = {  # NodePool status.estimate field -> gauge, only while a pool has one
    "endsAt": (
        "hoststate_nodepool_estimated_end_timestamp_seconds",
        "When each pool's rollout is expected to finish (its NodePool's status.estimate); "
        "only pools with an estimate have a series.",
    ),
    "lateAt": (
        "hoststate_nodepool_estimated_late_timestamp_seconds",
        "The late bound of each pool's expected finish; only pools with an estimate.",
    ),
}
POOL_ON_SCHEDULE = (
    "hoststate_nodepool_on_schedule",
    "1 while a pool's rollout is expected to end by the late bound first said for it, 0 "
    "once it is not (the NodePool's OnSchedule condition); only pools with an estimate.",
)


def sources_disagree(pool: Mapping[str, Any]) -> bool:
    """Whether a NodePool's SourcesAgree condition is False (absent: nothing to compare)."""
    conditions = (pool.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "SourcesAgree" and c.get("status") == "False" for c in conditions)


def _late(pool: Mapping[str, Any]) -> bool:
    """Whether a NodePool's OnSchedule condition is False."""
    conditions = (pool.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "OnSchedule" and c.get("status") == "False" for c in conditions)


class PoolsCollector(Collector):
    """The NodePools' counts and their SourcesAgree condition as written (``kubectl get
    nodepools``), read at scrape time."""

    def __init__(self, pools: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        self.pools = pools

    def describe(self) -> Iterable[Any]:
        return self._families()

    @staticmethod
    def _families() -> list[GaugeMetricFamily]:
        named = (*POOL_COUNTS.values(), POOL_SOURCES_DISAGREE, *POOL_ESTIMATE.values())
        return [GaugeMetricFamily(n, h, labels=["pool"]) for n, h in (*named, POOL_ON_SCHEDULE)]

    def collect(self) -> Iterable[Any]:
        families = self._families()
        counts = families[: len(POOL_COUNTS)]
        disagree = families[len(POOL_COUNTS)]
        *estimates, on_schedule = families[len(POOL_COUNTS) + 1 :]
        for pool in self.pools():
            name = pool.get("metadata", {}).get("name", "")
            status = pool.get("status") or {}
            for family, field_name in zip(counts, POOL_COUNTS, strict=True):
                family.add_metric([name], float(status.get(field_name) or 0))
            disagree.add_metric([name], 1 if sources_disagree(pool) else 0)
            estimate = status.get("estimate")
            if not isinstance(estimate, Mapping):
                continue
            for family, field_name in zip(estimates, POOL_ESTIMATE, strict=True):
                at = parse_rfc3339(estimate.get(field_name))
                if at is not None:
                    family.add_metric([name], at)
            on_schedule.add_metric([name], 0 if _late(pool) else 1)
        return families
