"""The informer across a watch that went away: resumed within the store's history it
replays what it missed, a delete included; resumed after more writes than the history
holds, the store answers 410 Gone and the informer lists again, reporting every change
and every deletion it missed to its handlers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from state_controller.api.objects import Obj
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import SECRETS
from state_controller.runtime.machinery.informer import Informer
from testbed.watch_outage import (
    WatchOutage,
    missed,
    secret,
    secrets_informer,
    told_what_was_missed,
)
from tests.conftest import wait_for

NS = "ns"


@pytest.fixture
def setup() -> Iterator[
    tuple[EmbeddedCluster, WatchOutage, Informer, list[tuple[str, Obj | None]]]
]:
    cluster = EmbeddedCluster(history=20)
    outage = WatchOutage(cluster)
    informer, seen = secrets_informer(outage, NS, relist_delay=0.01)
    informer.start()
    assert informer.wait_synced(10)
    wait_for(lambda: len(outage.watches) == 1, what="the first watch")
    yield cluster, outage, informer, seen
    outage.end()
    informer.stop()
    cluster.close()


@pytest.mark.parametrize("writes", [3, 50], ids=["within-history", "beyond-history-410"])
def test_what_happened_while_the_watch_was_down_reaches_the_handlers(
    setup: tuple[EmbeddedCluster, WatchOutage, Informer, list[tuple[str, Obj | None]]], writes: int
) -> None:
    cluster, outage, informer, seen = setup
    relists = informer.relists
    seen.clear()
    outage.begin()
    missed(cluster, NS, writes)
    outage.end()
    told_what_was_missed(cluster, NS, informer, seen)
    # beyond the history only a new list could know: the store said 410 Gone
    assert informer.relists == relists + (1 if writes > 20 else 0)


def test_an_answer_to_a_write_made_before_a_deletion_brings_no_ghost_back(
    setup: tuple[EmbeddedCluster, WatchOutage, Informer, list[tuple[str, Obj | None]]],
) -> None:
    """A reconcile writes an object, the object is deleted, the watch tells the deletion,
    and only then does the reconcile put the server's answer into the cache: the cache
    must not hold the deleted object again (a HostState so cached was never created
    again: its next status write found nothing and ended quietly)."""
    cluster, _, informer, _ = setup
    answer = cluster.get(SECRETS, NS, "a")  # the answer to our own write
    cluster.delete(SECRETS, NS, "a")
    wait_for(lambda: informer.get(f"{NS}/a") is None, what="the deletion told")
    informer.mutate(answer)
    assert informer.get(f"{NS}/a") is None
    cluster.create(SECRETS, secret(NS, "a"))  # created again: newer, cached as usual
    wait_for(lambda: informer.get(f"{NS}/a") is not None, what="the new one cached")
