"""A watch that goes away while writes go on, for the informer tests on both backends:
the informer's next watch waits until the outage ends, then starts from where it stopped."""

from __future__ import annotations

import threading
from typing import Any

from state_controller.api.objects import Obj
from state_controller.cluster.interface import SECRETS, Cluster, Resource, Watch
from state_controller.runtime.machinery.informer import Informer


class WatchOutage:
    """A cluster whose watches can be made to wait (the API server away from the
    informer), while reads and writes go on."""

    def __init__(self, cluster: Cluster) -> None:
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


def secrets_informer(
    outage: WatchOutage, namespace: str, relist_delay: float
) -> tuple[Informer, list[tuple[str, Obj | None]]]:
    """An informer of ``namespace``'s Secrets through ``outage``, a, b and c created first
    (not started); what its handler is told, in order."""
    seen: list[tuple[str, Obj | None]] = []
    informer = Informer(
        outage,  # type: ignore[arg-type]
        SECRETS,
        namespace,
        handlers=[lambda key, obj: seen.append((key, obj))],
        relist_delay=relist_delay,
    )
    for name in ("a", "b", "c"):
        outage.cluster.create(SECRETS, secret(namespace, name))
    return informer, seen


def secret(namespace: str, name: str, value: str = "v") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "stringData": {"k": value},
    }


def missed(cluster: Cluster, namespace: str, writes: int) -> None:
    """While the watch is down: b deleted, c changed ``writes`` times, d created."""
    cluster.delete(SECRETS, namespace, "b")
    for i in range(writes):
        cluster.patch(SECRETS, namespace, "c", {"stringData": {"k": f"v{i}"}})
    cluster.create(SECRETS, secret(namespace, "d"))


def cache_matches(cluster: Cluster, namespace: str, informer: Informer) -> bool:
    """The informer holds every Secret of ``namespace`` at the server's version."""
    items = cluster.list(SECRETS, namespace)[0]
    listed = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in items}
    cached = {}
    for key in informer.keys():  # noqa: SIM118 (an Informer is no mapping)
        cached[key.split("/")[1]] = (informer.get(key) or {})["metadata"]["resourceVersion"]
    return cached == listed


def told_what_was_missed(
    cluster: Cluster, namespace: str, informer: Informer, seen: list[tuple[str, Obj | None]]
) -> None:
    """After :func:`missed`: the handlers heard b's deletion, d's creation and c's last
    version, and the cache holds what the server holds."""
    from tests.conftest import wait_for

    wait_for(lambda: cache_matches(cluster, namespace, informer), what="the cache caught up")
    # the cache is updated before each handler is told: wait for what they are told too
    wait_for(lambda: (f"{namespace}/b", None) in seen, what="b's deletion told")
    wait_for(
        lambda: any(key == f"{namespace}/d" and obj is not None for key, obj in seen),
        what="d's creation told",
    )
    now = cluster.get(SECRETS, namespace, "c")["metadata"]["resourceVersion"]

    def last_c() -> str:
        told = [obj for key, obj in seen if key == f"{namespace}/c"]
        return str(((told[-1] or {}).get("metadata") or {}).get("resourceVersion")) if told else ""

    wait_for(lambda: last_c() == now, what=f"c's last version ({now}) told")
    assert informer.get(f"{namespace}/b") is None
