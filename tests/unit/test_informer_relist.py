"""The informer across a watch that went away: resumed within the store's history it
replays what it missed, a delete included; resumed after more writes than the history
holds, the store answers 410 Gone and the informer lists again, reporting every change
and every deletion it missed to its handlers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from state_controller.api.objects import Obj
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import SECRETS, Resource, Watch
from state_controller.runtime.informer import Informer
from tests.conftest import wait_for

NS = "ns"


class Outage:
    """A cluster whose watches can be made to wait (the API server away), while reads
    and writes go on; the informer's next watch starts from where it stopped."""

    def __init__(self, cluster: EmbeddedCluster) -> None:
        self.cluster = cluster
        self.up = threading.Event()
        self.up.set()
        self.watches: list[Watch] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cluster, name)

    def watch(self, resource: Resource, namespace: str | None, **kwargs: Any) -> Watch:
        self.up.wait(30)
        watch = self.cluster.watch(resource, namespace, **kwargs)
        self.watches.append(watch)
        return watch

    def begin(self) -> None:
        """The watch in progress ends, and none starts until :meth:`end`."""
        self.up.clear()
        self.watches[-1].stop()

    def end(self) -> None:
        self.up.set()


def secret(name: str, value: str = "v") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NS},
        "stringData": {"k": value},
    }


@pytest.fixture
def setup() -> Iterator[tuple[EmbeddedCluster, Outage, Informer, list[tuple[str, Obj | None]]]]:
    cluster = EmbeddedCluster(history=20)
    outage = Outage(cluster)
    seen: list[tuple[str, Obj | None]] = []
    informer = Informer(
        outage,  # type: ignore[arg-type]
        SECRETS,
        NS,
        handlers=[lambda key, obj: seen.append((key, obj))],
        relist_delay=0.01,
    )
    for name in ("a", "b", "c"):
        cluster.create(SECRETS, secret(name))
    informer.start()
    assert informer.wait_synced(10)
    wait_for(lambda: len(outage.watches) == 1, what="the first watch")
    yield cluster, outage, informer, seen
    outage.end()
    informer.stop()
    cluster.close()


def _missed(cluster: EmbeddedCluster, writes: int) -> None:
    """While the watch is down: b deleted, c changed ``writes`` times, d created."""
    cluster.delete(SECRETS, NS, "b")
    for i in range(writes):
        cluster.patch(SECRETS, NS, "c", {"stringData": {"k": f"v{i}"}})
    cluster.create(SECRETS, secret("d"))


def _the_cache_matches(cluster: EmbeddedCluster, informer: Informer) -> bool:
    items = cluster.list(SECRETS, NS)[0]
    listed = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in items}
    cached = {}
    for key in informer.keys():  # noqa: SIM118 (an Informer is no mapping)
        cached[key.split("/")[1]] = (informer.get(key) or {})["metadata"]["resourceVersion"]
    return cached == listed


@pytest.mark.parametrize("writes", [3, 50], ids=["within-history", "beyond-history-410"])
def test_what_happened_while_the_watch_was_down_reaches_the_handlers(
    setup: tuple[EmbeddedCluster, Outage, Informer, list[tuple[str, Obj | None]]], writes: int
) -> None:
    cluster, outage, informer, seen = setup
    relists = informer.relists
    seen.clear()
    outage.begin()
    _missed(cluster, writes)
    outage.end()
    wait_for(lambda: _the_cache_matches(cluster, informer), what="the cache caught up")
    wait_for(lambda: (f"{NS}/b", None) in seen, what="b's deletion told")
    assert any(key == f"{NS}/d" and obj is not None for key, obj in seen)
    last_c = [obj for key, obj in seen if key == f"{NS}/c"][-1]
    now = cluster.get(SECRETS, NS, "c")["metadata"]["resourceVersion"]
    assert last_c is not None and last_c["metadata"]["resourceVersion"] == now
    assert informer.get(f"{NS}/b") is None
    # beyond the history only a new list could know: the store said 410 Gone
    assert informer.relists == relists + (1 if writes > 20 else 0)
