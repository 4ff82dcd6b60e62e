"""Metadata-only lists and watches, on the embedded store and on the real kube-apiserver
(which answers them as ``PartialObjectMetadata``): each object's metadata, its labels and
UID included, and nothing of its spec or status; a label selector still decides what is
shown. The sharder's cache of every Host is one."""

from __future__ import annotations

from state_controller.api.objects import Obj
from state_controller.cluster.interface import HOSTS, PARTIAL_METADATA, Cluster
from state_controller.runtime.machinery.informer import Informer
from state_controller.simulation.fleet import create_fleet
from testbed.scenarios import NS
from tests.conftest import wait_for

LABEL = "example.com/team"


def metadata_alone(obj: Obj, name: str) -> bool:
    meta = obj["metadata"]
    return (
        (obj["apiVersion"], obj["kind"]) == PARTIAL_METADATA
        and set(obj) == {"apiVersion", "kind", "metadata"}
        and meta["name"] == name
        and bool(meta["uid"])
        and bool(meta["resourceVersion"])
    )


def test_a_metadata_only_list_and_watch_show_metadata_alone(cluster: Cluster) -> None:
    create_fleet(cluster, NS, 2)
    cluster.patch(HOSTS, NS, "host-0001", {"metadata": {"labels": {LABEL: "a"}}})

    items, _ = cluster.list(HOSTS, NS, metadata_only=True)
    assert [o["metadata"]["name"] for o in items] == ["host-0000", "host-0001"]
    assert all(metadata_alone(o, o["metadata"]["name"]) for o in items)
    assert items[1]["metadata"]["labels"][LABEL] == "a"
    full, _ = cluster.list(HOSTS, NS)
    assert full[0]["spec"]  # the same list, not metadata-only, has it all

    selected, _ = cluster.list(HOSTS, NS, label_selector=LABEL, metadata_only=True)
    assert [o["metadata"]["name"] for o in selected] == ["host-0001"]

    seen: dict[str, Obj | None] = {}
    informer = Informer(
        cluster,
        HOSTS,
        NS,
        handlers=[lambda key, obj: seen.__setitem__(key, obj)],
        label_selector=LABEL,
        metadata_only=True,
    )
    informer.start()
    try:
        assert informer.wait_synced(30)
        cluster.patch(HOSTS, NS, "host-0000", {"metadata": {"labels": {LABEL: "b"}}})
        wait_for(lambda: f"{NS}/host-0000" in seen, what="host-0000 coming to match")
        told = seen[f"{NS}/host-0000"]
        assert told is not None and metadata_alone(told, "host-0000")
        assert told["metadata"]["labels"][LABEL] == "b"
        cached = informer.get(f"{NS}/host-0001")
        assert cached is not None and metadata_alone(cached, "host-0001")

        cluster.patch(HOSTS, NS, "host-0001", {"metadata": {"labels": {LABEL: None}}})
        wait_for(lambda: informer.get(f"{NS}/host-0001") is None, what="host-0001 unselected")
    finally:
        informer.stop()
