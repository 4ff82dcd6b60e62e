"""The labelled children of the metric families, memoised: one is looked up at every
transition, request and reconcile."""

from __future__ import annotations

from typing import Any


class Children:
    """``metric.labels(*labels)``, found once and kept."""

    def __init__(self) -> None:
        self._found: dict[tuple[int, tuple[str, ...]], Any] = {}

    def __call__(self, metric: Any, *labels: str) -> Any:
        key = (id(metric), labels)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = metric.labels(*labels)
        return found
