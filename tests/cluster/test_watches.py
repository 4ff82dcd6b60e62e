"""A watch stopped at any moment ends at once, on both backends.

The pod watch of a cordoned node is stopped when it is uncordoned, often while
its request is still on the way; a watch that went on until the server closed
it would hold a thread and a connection for minutes.
"""

from __future__ import annotations

import threading

from state_controller.cluster.interface import HOSTS, Cluster
from tests.conftest import SCENARIO_NAMESPACE


def ended(watch: object, *, stop_first: bool) -> bool:
    events: list[object] = []
    reader = threading.Thread(target=lambda: events.extend(watch), daemon=True)  # type: ignore[call-overload]
    if stop_first:
        watch.stop()  # type: ignore[attr-defined]
    reader.start()
    if not stop_first:
        watch.stop()  # type: ignore[attr-defined]
    reader.join(timeout=10)
    return not reader.is_alive() and not events


def test_a_watch_stopped_before_or_as_it_begins_ends_at_once(cluster: Cluster) -> None:
    _, version = cluster.list(HOSTS, SCENARIO_NAMESPACE)  # from a list, as an informer does

    def watch() -> object:
        return cluster.watch(HOSTS, SCENARIO_NAMESPACE, resource_version=version)

    assert ended(watch(), stop_first=True)
    for _ in range(20):  # stopped while the request is on its way, or just after
        assert ended(watch(), stop_first=False)
