"""The embedded store must behave like the Kubernetes API where the controller relies on it."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from state_controller.cluster.embedded import EmbeddedCluster, ReadOnlyStore, merge_patch
from state_controller.cluster.interface import (
    HOSTS,
    NODES,
    PDBS,
    PODS,
    SECRETS,
    AlreadyExists,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    Obj,
    WatchEvent,
)
from state_controller.cluster.schema import prune, validators
from state_controller.simulation.nodes import SimulatedNode, set_budget

NS = "metal"


def host(name: str, ns: str = NS, **extra: Any) -> Obj:
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"online": True}, **extra}


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    c = EmbeddedCluster()
    yield c
    c.close()


def rv(obj: Obj) -> int:
    return int(obj["metadata"]["resourceVersion"])


def take(events: Iterator[WatchEvent], n: int) -> list[tuple[str, str]]:
    return [(e.type, e.object["metadata"]["name"]) for e in (next(events) for _ in range(n))]


# -- create -----------------------------------------------------------------------------


def test_create_sets_server_fields_and_fills_type(cluster: EmbeddedCluster) -> None:
    created = cluster.create(HOSTS, host("h1", status={"phase": "seeded"}))
    meta = created["metadata"]
    assert created["apiVersion"] == "hoststate.io/v1alpha1"
    assert created["kind"] == "Host"
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    assert meta["generation"] == 1
    assert meta["resourceVersion"] == "1"
    assert created["status"] == {"phase": "seeded"}  # kept on create (documented deviation)
    assert cluster.get(HOSTS, NS, "h1") == created


def test_create_twice_is_already_exists(cluster: EmbeddedCluster) -> None:
    cluster.create(HOSTS, host("h1"))
    with pytest.raises(AlreadyExists):
        cluster.create(HOSTS, host("h1"))
    assert cluster.create(HOSTS, host("h1", ns="other"))["metadata"]["namespace"] == "other"


def test_generate_name_appends_five_random_characters(cluster: EmbeddedCluster) -> None:
    obj = {"metadata": {"generateName": "ev-", "namespace": NS}}
    names = {cluster.create(SECRETS, obj)["metadata"]["name"] for _ in range(20)}
    assert len(names) == 20
    assert all(re.fullmatch(r"ev-[a-z0-9]{5}", n) for n in names)


def test_namespaced_resources_require_a_namespace(cluster: EmbeddedCluster) -> None:
    with pytest.raises(Invalid):
        cluster.create(HOSTS, {"metadata": {"name": "h1"}})
    with pytest.raises(Invalid):
        cluster.create(HOSTS, {"metadata": {"namespace": NS}})
    node = cluster.create(NODES, {"metadata": {"name": "n1", "namespace": "ignored"}})
    assert "namespace" not in node["metadata"]
    assert cluster.get(NODES, None, "n1")["metadata"]["name"] == "n1"


def test_every_write_bumps_the_global_version(cluster: EmbeddedCluster) -> None:
    a = cluster.create(HOSTS, host("a"))
    b = cluster.create(SECRETS, {"metadata": {"name": "s", "namespace": NS}})
    c = cluster.update_status(HOSTS, {**a, "status": {"x": 1}})
    assert [rv(a), rv(b), rv(c)] == [1, 2, 3]
    assert cluster.list(HOSTS)[1] == "3"


# -- reads return copies ----------------------------------------------------------------


def test_returned_objects_are_copies(cluster: EmbeddedCluster) -> None:
    body = host("h1")
    created = cluster.create(HOSTS, body)
    body["spec"]["online"] = False
    created["spec"]["online"] = False
    got = cluster.get(HOSTS, NS, "h1")
    got["spec"]["online"] = False
    cluster.list(HOSTS)[0][0]["spec"]["online"] = False
    assert cluster.get(HOSTS, NS, "h1")["spec"] == {"online": True}


def test_get_missing_is_not_found(cluster: EmbeddedCluster) -> None:
    with pytest.raises(NotFound):
        cluster.get(HOSTS, NS, "nope")


def test_list_filters_by_namespace_and_sorts(cluster: EmbeddedCluster) -> None:
    for ns, name in [("b", "y"), ("a", "z"), ("b", "x")]:
        cluster.create(HOSTS, host(name, ns=ns))
    items, _ = cluster.list(HOSTS)
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in items] == [
        ("a", "z"),
        ("b", "x"),
        ("b", "y"),
    ]
    assert [o["metadata"]["name"] for o in cluster.list(HOSTS, "b")[0]] == ["x", "y"]
    assert cluster.list(SECRETS)[0] == []


# -- update / update_status / patch -----------------------------------------------------


def test_stale_resource_version_conflicts_on_every_write(cluster: EmbeddedCluster) -> None:
    stale = cluster.create(HOSTS, host("h1"))
    cluster.patch(HOSTS, NS, "h1", {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(Conflict):
        cluster.update(HOSTS, {**stale, "spec": {"online": False}})
    with pytest.raises(Conflict):
        cluster.update_status(HOSTS, {**stale, "status": {"x": 1}})
    with pytest.raises(Conflict):
        cluster.patch(
            HOSTS,
            NS,
            "h1",
            {
                "metadata": {"resourceVersion": stale["metadata"]["resourceVersion"]},
                "spec": {"online": False},
            },
        )
    assert cluster.get(HOSTS, NS, "h1")["spec"] == {"online": True}


def test_empty_resource_version_is_an_unconditional_write(cluster: EmbeddedCluster) -> None:
    created = cluster.create(HOSTS, host("h1"))
    created["metadata"]["resourceVersion"] = ""
    cluster.patch(HOSTS, NS, "h1", {"metadata": {"labels": {"a": "b"}}})
    assert cluster.update_status(HOSTS, {**created, "status": {"x": 1}})["status"] == {"x": 1}


def test_update_keeps_status_and_server_owned_metadata(cluster: EmbeddedCluster) -> None:
    created = cluster.create(HOSTS, host("h1", status={"phase": "a"}))
    edited = {
        **created,
        "spec": {"online": False},
        "status": {"phase": "ignored"},
        "metadata": {
            **created["metadata"],
            "uid": "forged",
            "generation": 42,
            "labels": {"l": "v"},
        },
    }
    updated = cluster.update(HOSTS, edited)
    assert updated["status"] == {"phase": "a"}
    assert updated["spec"] == {"online": False}
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]
    assert updated["metadata"]["labels"] == {"l": "v"}
    assert updated["metadata"]["generation"] == 2


def test_update_status_leaves_spec_and_metadata(cluster: EmbeddedCluster) -> None:
    created = cluster.create(HOSTS, host("h1"))
    written = cluster.update_status(
        HOSTS,
        {
            **created,
            "spec": {"online": False},
            "metadata": {**created["metadata"], "labels": {"x": "y"}},
            "status": {"phase": "b"},
        },
    )
    assert written["spec"] == {"online": True}
    assert "labels" not in written["metadata"]
    assert written["status"] == {"phase": "b"}
    assert written["metadata"]["generation"] == 1


def test_update_status_needs_a_status_subresource(cluster: EmbeddedCluster) -> None:
    secret = cluster.create(SECRETS, {"metadata": {"name": "s", "namespace": NS}})
    with pytest.raises(NotFound):
        cluster.update_status(SECRETS, {**secret, "status": {}})


def test_generation_bumps_only_when_spec_changes(cluster: EmbeddedCluster) -> None:
    h = cluster.create(HOSTS, host("h1"))
    h = cluster.update(HOSTS, {**h, "metadata": {**h["metadata"], "labels": {"a": "1"}}})
    assert h["metadata"]["generation"] == 1
    h = cluster.update_status(HOSTS, {**h, "status": {"s": 1}})
    assert h["metadata"]["generation"] == 1
    h = cluster.patch(HOSTS, NS, "h1", {"metadata": {"annotations": {"k": "v"}}})
    assert h["metadata"]["generation"] == 1
    h = cluster.patch(HOSTS, NS, "h1", {"spec": {"image": "x"}})
    assert h["metadata"]["generation"] == 2
    h = cluster.update(HOSTS, {**h, "spec": {"online": False}})
    assert h["metadata"]["generation"] == 3


def test_unchanged_write_commits_nothing(cluster: EmbeddedCluster) -> None:
    h = cluster.create(HOSTS, host("h1", status={"s": 1}))
    again = cluster.update_status(HOSTS, {**h, "status": {"s": 1}})
    assert again["metadata"]["resourceVersion"] == h["metadata"]["resourceVersion"]
    assert cluster.list(HOSTS)[1] == h["metadata"]["resourceVersion"]


def test_update_missing_is_not_found(cluster: EmbeddedCluster) -> None:
    with pytest.raises(NotFound):
        cluster.update(HOSTS, host("ghost"))
    with pytest.raises(NotFound):
        cluster.update_status(HOSTS, host("ghost"))
    with pytest.raises(NotFound):
        cluster.patch(HOSTS, NS, "ghost", {"spec": {}})


def test_patch_is_a_json_merge_patch_that_ignores_status(cluster: EmbeddedCluster) -> None:
    cluster.create(
        HOSTS,
        host("h1", status={"s": 1}) | {"spec": {"online": True, "bmc": {"address": "a", "x": 1}}},
    )
    patched = cluster.patch(
        HOSTS,
        NS,
        "h1",
        {
            "spec": {"bmc": {"x": None, "y": 2}, "online": False},
            "status": {"s": 2},
            "metadata": {"labels": {"l": "v"}, "uid": "forged"},
        },
    )
    assert patched["spec"] == {"online": False, "bmc": {"address": "a", "y": 2}}
    assert patched["status"] == {"s": 1}
    assert patched["metadata"]["labels"] == {"l": "v"}
    assert patched["metadata"]["uid"] != "forged"


def test_patch_with_current_version_succeeds(cluster: EmbeddedCluster) -> None:
    h = cluster.create(HOSTS, host("h1"))
    patch = {"metadata": {"resourceVersion": h["metadata"]["resourceVersion"]}, "spec": {"a": 1}}
    assert cluster.patch(HOSTS, NS, "h1", patch)["spec"]["a"] == 1


def test_merge_patch_rfc7386_examples() -> None:
    assert merge_patch({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": "b"}, {"b": "c"}) == {"a": "b", "b": "c"}
    assert merge_patch({"a": "b"}, {"a": None}) == {}
    assert merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert merge_patch(["a", "b"], {"a": "c"}) == {"a": "c"}
    assert merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}
    target = {"a": {"b": 1}}
    merge_patch(target, {"a": {"b": 2}})
    assert target == {"a": {"b": 1}}


# -- validators -------------------------------------------------------------------------


def test_validators_reject_writes_and_keep_nothing() -> None:
    def no_offline(obj: Obj) -> None:
        if obj.get("spec", {}).get("online") is False:
            raise Invalid("offline hosts are not allowed")

    with EmbeddedCluster(validators={HOSTS: no_offline}) as c:
        with pytest.raises(Invalid):
            c.create(HOSTS, host("bad") | {"spec": {"online": False}})
        h = c.create(HOSTS, host("good"))
        with pytest.raises(Invalid):
            c.update(HOSTS, {**h, "spec": {"online": False}})
        with pytest.raises(Invalid):
            c.patch(HOSTS, NS, "good", {"spec": {"online": False}})
        items, version = c.list(HOSTS)
        assert [o["metadata"]["name"] for o in items] == ["good"]
        assert items[0]["spec"] == {"online": True}
        assert version == h["metadata"]["resourceVersion"]


def test_pruning_follows_the_schema_as_the_api_server_does() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "disks": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                    },
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "name": {"type": "string"},
                },
            }
        },
    }
    value = {
        "spec": {
            "labels": {"any": "key", "is": "declared"},
            "disks": [{"name": "sda", "size": 1}, {"serial": "x"}],
            "free": {"anything": {"goes": 1}},
            "name": None,  # not nullable: dropped
            "typo": 1,
        },
        "top": 1,
    }
    assert prune(value, schema) == {
        "spec": {
            "labels": {"any": "key", "is": "declared"},
            "disks": [{"name": "sda"}, {}],
            "free": {"anything": {"goes": 1}},
        }
    }
    assert value["spec"]["typo"] == 1  # never modified


def test_a_pruning_validator_prunes_every_write_and_a_pruned_no_op_is_no_write() -> None:
    with EmbeddedCluster(validators=validators()) as c:
        created = c.create(HOSTS, host("h", spec={"online": True, "onlin": False}))
        assert created["spec"] == {"online": True} and created["metadata"]["generation"] == 1
        events = c.watch(HOSTS, NS, created["metadata"]["resourceVersion"])
        same = c.patch(HOSTS, NS, "h", {"spec": {"onlin": True}})
        assert same == created  # no new resourceVersion, no generation, no event
        updated = c.update(HOSTS, {**same, "spec": {"online": False, "x": 1}})
        assert updated["spec"] == {"online": False} and updated["metadata"]["generation"] == 2
        status = c.update_status(HOSTS, {**updated, "status": {"poweredOn": True, "y": 2}})
        assert status["status"] == {"poweredOn": True}
        seen = []
        for event in events:
            seen.append((event.type, event.object["metadata"]["resourceVersion"]))
            if len(seen) == 2:
                events.stop()
        assert seen == [
            ("MODIFIED", updated["metadata"]["resourceVersion"]),
            ("MODIFIED", status["metadata"]["resourceVersion"]),
        ]


# -- deletion, finalizers, garbage collection -------------------------------------------


def test_delete_without_finalizers_removes(cluster: EmbeddedCluster) -> None:
    cluster.create(HOSTS, host("h1"))
    cluster.delete(HOSTS, NS, "h1")
    with pytest.raises(NotFound):
        cluster.get(HOSTS, NS, "h1")
    with pytest.raises(NotFound):
        cluster.delete(HOSTS, NS, "h1")


def test_finalizers_hold_deletion_until_cleared(cluster: EmbeddedCluster) -> None:
    h = host("h1")
    h["metadata"]["finalizers"] = ["hoststate.io/a", "hoststate.io/b"]
    cluster.create(HOSTS, h)
    cluster.delete(HOSTS, NS, "h1")
    marked = cluster.get(HOSTS, NS, "h1")
    stamp = marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["generation"] == 2  # as the API server does
    cluster.delete(HOSTS, NS, "h1")
    assert cluster.get(HOSTS, NS, "h1") == marked  # a second delete changes nothing

    with pytest.raises(Invalid):  # no new finalizers once deleting
        cluster.patch(HOSTS, NS, "h1", {"metadata": {"finalizers": ["hoststate.io/a", "new"]}})
    marked["metadata"]["finalizers"] = ["hoststate.io/b"]
    kept = cluster.update(HOSTS, marked)
    assert kept["metadata"]["deletionTimestamp"] == stamp

    cluster.patch(HOSTS, NS, "h1", {"metadata": {"finalizers": None}})
    with pytest.raises(NotFound):
        cluster.get(HOSTS, NS, "h1")


def test_update_clearing_finalizers_removes_a_deleting_object(cluster: EmbeddedCluster) -> None:
    h = host("h1")
    h["metadata"]["finalizers"] = ["f"]
    cluster.create(HOSTS, h)
    cluster.delete(HOSTS, NS, "h1")
    deleting = cluster.get(HOSTS, NS, "h1")
    deleting["metadata"]["finalizers"] = []
    cluster.update(HOSTS, deleting)
    assert cluster.list(HOSTS)[0] == []


def test_clearing_finalizers_on_a_live_object_keeps_it(cluster: EmbeddedCluster) -> None:
    h = host("h1")
    h["metadata"]["finalizers"] = ["f"]
    cluster.create(HOSTS, h)
    cluster.patch(HOSTS, NS, "h1", {"metadata": {"finalizers": None}})
    assert "finalizers" not in cluster.get(HOSTS, NS, "h1")["metadata"]


def owned_by(owner: Obj, name: str, **meta: Any) -> Obj:
    ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"]}
    ref |= {"name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}
    return {"metadata": {"name": name, "namespace": NS, "ownerReferences": [ref], **meta}}


def test_owner_removal_garbage_collects_dependents(cluster: EmbeddedCluster) -> None:
    owner = cluster.create(HOSTS, host("h1"))
    secret = cluster.create(SECRETS, owned_by(owner, "s1"))
    cluster.create(SECRETS, owned_by(secret, "grandchild"))
    held = cluster.create(SECRETS, owned_by(owner, "held", finalizers=["f"]))
    cluster.create(SECRETS, {"metadata": {"name": "free", "namespace": NS}})
    other = cluster.create(HOSTS, host("h2"))
    shared = owned_by(owner, "shared")
    shared["metadata"]["ownerReferences"] += owned_by(other, "x")["metadata"]["ownerReferences"]
    cluster.create(SECRETS, shared)

    cluster.delete(HOSTS, NS, "h1")

    remaining = {o["metadata"]["name"]: o for o in cluster.list(SECRETS)[0]}
    assert set(remaining) == {"held", "free", "shared"}
    assert "deletionTimestamp" in remaining["held"]["metadata"]
    assert rv(remaining["held"]) > rv(held)
    cluster.patch(SECRETS, NS, "held", {"metadata": {"finalizers": None}})
    assert "held" not in {o["metadata"]["name"] for o in cluster.list(SECRETS)[0]}


def test_garbage_collection_waits_for_the_owner_finalizers(cluster: EmbeddedCluster) -> None:
    h = host("h1")
    h["metadata"]["finalizers"] = ["f"]
    owner = cluster.create(HOSTS, h)
    cluster.create(SECRETS, owned_by(owner, "s1"))
    cluster.delete(HOSTS, NS, "h1")
    assert len(cluster.list(SECRETS)[0]) == 1
    cluster.patch(HOSTS, NS, "h1", {"metadata": {"finalizers": None}})
    assert cluster.list(SECRETS)[0] == []


def test_owner_references_added_later_are_honoured(cluster: EmbeddedCluster) -> None:
    owner = cluster.create(HOSTS, host("h1"))
    cluster.create(SECRETS, {"metadata": {"name": "s1", "namespace": NS}})
    refs = owned_by(owner, "s1")["metadata"]["ownerReferences"]
    cluster.patch(SECRETS, NS, "s1", {"metadata": {"ownerReferences": refs}})
    cluster.delete(HOSTS, NS, "h1")
    assert cluster.list(SECRETS)[0] == []


# -- watch ------------------------------------------------------------------------------


def test_watch_from_empty_version_lists_then_follows(cluster: EmbeddedCluster) -> None:
    cluster.create(HOSTS, host("a"))
    cluster.create(HOSTS, host("b"))
    watch = cluster.watch(HOSTS)
    events = iter(watch)
    assert take(events, 2) == [("ADDED", "a"), ("ADDED", "b")]
    h = cluster.create(HOSTS, host("c"))
    cluster.update_status(HOSTS, {**h, "status": {"s": 1}})
    cluster.delete(HOSTS, NS, "c")
    assert take(events, 3) == [("ADDED", "c"), ("MODIFIED", "c"), ("DELETED", "c")]
    watch.stop()


def test_deleted_event_carries_last_state_at_a_new_version(cluster: EmbeddedCluster) -> None:
    h = cluster.create(HOSTS, host("a", status={"s": 9}))
    events = iter(cluster.watch(HOSTS, resource_version=h["metadata"]["resourceVersion"]))
    cluster.delete(HOSTS, NS, "a")
    event = next(events)
    assert event.type == "DELETED"
    assert event.object["status"] == {"s": 9}
    assert rv(event.object) == rv(h) + 1


def test_watch_from_a_version_replays_only_later_changes(cluster: EmbeddedCluster) -> None:
    cluster.create(HOSTS, host("a"))
    b = cluster.create(HOSTS, host("b"))
    cluster.create(SECRETS, {"metadata": {"name": "s", "namespace": NS}})
    cluster.create(HOSTS, host("c"))
    cluster.patch(HOSTS, NS, "a", {"spec": {"x": 1}})
    events = iter(cluster.watch(HOSTS, resource_version=b["metadata"]["resourceVersion"]))
    assert take(events, 2) == [("ADDED", "c"), ("MODIFIED", "a")]
    cluster.delete(HOSTS, NS, "b")
    event = next(events)
    assert (event.type, event.object["metadata"]["name"]) == ("DELETED", "b")


def test_watch_versions_increase_in_commit_order(cluster: EmbeddedCluster) -> None:
    h = cluster.create(HOSTS, host("a"))
    events = iter(cluster.watch(HOSTS, resource_version="1"))
    for i in range(50):
        h = cluster.update_status(HOSTS, {**h, "status": {"i": i}})
    got = [next(events).object for _ in range(50)]
    assert [o["status"]["i"] for o in got] == list(range(50))
    assert [rv(o) for o in got] == list(range(2, 52))


def test_watch_older_than_history_is_gone() -> None:
    with EmbeddedCluster(history=3) as c:
        h = c.create(HOSTS, host("a"))
        for i in range(5):
            h = c.update_status(HOSTS, {**h, "status": {"i": i}})
        with pytest.raises(Gone):
            next(iter(c.watch(HOSTS, resource_version="1")))
        events = iter(c.watch(HOSTS, resource_version="3"))  # 4, 5, 6 are retained
        assert [rv(next(events).object) for _ in range(3)] == [4, 5, 6]


def test_watch_filters_by_namespace(cluster: EmbeddedCluster) -> None:
    cluster.create(HOSTS, host("a", ns="one"))
    cluster.create(HOSTS, host("b", ns="two"))
    events = iter(cluster.watch(HOSTS, namespace="two"))
    assert take(events, 1) == [("ADDED", "b")]
    cluster.create(HOSTS, host("c", ns="one"))
    cluster.create(HOSTS, host("d", ns="two"))
    assert take(events, 1) == [("ADDED", "d")]
    replay = iter(cluster.watch(HOSTS, namespace="one", resource_version="2"))
    assert take(replay, 1) == [("ADDED", "c")]


def test_watchers_get_independent_copies(cluster: EmbeddedCluster) -> None:
    first, second = iter(cluster.watch(HOSTS)), iter(cluster.watch(HOSTS))
    cluster.create(HOSTS, host("a"))
    one, two = next(first), next(second)
    one.object["spec"]["online"] = False
    assert two.object["spec"] == {"online": True}
    assert cluster.get(HOSTS, NS, "a")["spec"] == {"online": True}


def test_stop_ends_a_blocked_iteration_from_another_thread(cluster: EmbeddedCluster) -> None:
    watch = cluster.watch(HOSTS)
    seen: list[WatchEvent] = []
    done = threading.Event()

    def consume() -> None:
        seen.extend(watch)
        done.set()

    thread = threading.Thread(target=consume)
    thread.start()
    cluster.create(HOSTS, host("a"))
    watch.stop()
    assert done.wait(2)
    thread.join()
    cluster.create(HOSTS, host("b"))
    assert [e.object["metadata"]["name"] for e in seen] in (["a"], [])
    assert list(watch) == []


def test_close_stops_all_watches() -> None:
    c = EmbeddedCluster()
    watch = c.watch(HOSTS)
    result: list[list[WatchEvent]] = []
    thread = threading.Thread(target=lambda: result.append(list(watch)))
    thread.start()
    c.close()
    thread.join(2)
    assert result == [[]]
    with pytest.raises(ReadOnlyStore):
        c.create(HOSTS, host("a"))


def test_invalid_watch_version_is_rejected(cluster: EmbeddedCluster) -> None:
    with pytest.raises(Invalid):
        cluster.watch(HOSTS, resource_version="abc")


# -- concurrency ------------------------------------------------------------------------


def test_concurrent_unconditional_writes_are_all_applied(cluster: EmbeddedCluster) -> None:
    cluster.create(HOSTS, host("h1"))

    def label(i: int) -> None:
        for j in range(50):
            cluster.patch(HOSTS, NS, "h1", {"metadata": {"labels": {f"t{i}-{j}": "x"}}})

    threads = [threading.Thread(target=label, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = cluster.get(HOSTS, NS, "h1")
    assert len(final["metadata"]["labels"]) == 200
    assert rv(final) == 201


def test_stats_count_calls_by_verb(cluster: EmbeddedCluster) -> None:
    h = cluster.create(HOSTS, host("a"))
    cluster.update_status(HOSTS, {**h, "status": {"x": 1}})
    cluster.get(HOSTS, NS, "a")
    cluster.list(HOSTS)
    cluster.delete(HOSTS, NS, "a")
    stats = cluster.stats
    assert stats["create"] == stats["update_status"] == stats["delete"] == 1
    assert stats["get"] == stats["list"] == 1
    assert stats["update"] == stats["patch"] == 0


# -- persistence ------------------------------------------------------------------------


def test_persistence_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with EmbeddedCluster(path) as c:
        a = c.create(HOSTS, host("a", status={"s": 1}))
        c.create(HOSTS, host("b"))
        c.create(NODES, {"metadata": {"name": "n1"}})
        c.update_status(HOSTS, {**a, "status": {"s": 2}})
        c.delete(HOSTS, NS, "b")
        before, version = c.list(HOSTS)
        nodes = c.list(NODES)[0]
    with EmbeddedCluster(path) as c:
        assert c.list(HOSTS) == (before, version)
        assert c.list(NODES)[0] == nodes
        created = c.create(HOSTS, host("c"))
        assert rv(created) == int(version) + 1
        with pytest.raises(Gone):  # history before the restart is not kept
            next(iter(c.watch(HOSTS, resource_version="1")))
        events = iter(c.watch(HOSTS, resource_version=version))
        assert take(events, 1) == [("ADDED", "c")]
    with EmbeddedCluster(path) as c:  # the last write was a put, not a removal
        assert c.list(HOSTS)[1] == created["metadata"]["resourceVersion"]
        assert rv(c.patch(HOSTS, NS, "c", {"spec": {"x": 1}})) == rv(created) + 1


def test_a_read_only_snapshot_of_a_store_still_being_created_is_empty(tmp_path: Path) -> None:
    """A reader in another process can open the file between a writer's first table and
    its second: the half-made store reads as empty, not as an error."""
    path = tmp_path / "store.db"
    with sqlite3.connect(path) as half_made:
        half_made.execute(
            "CREATE TABLE objects (resource TEXT NOT NULL, namespace TEXT NOT NULL,"
            " name TEXT NOT NULL, body BLOB NOT NULL, PRIMARY KEY (resource, namespace, name))"
        )
    half_made.close()
    assert EmbeddedCluster(path, read_only=True).list(HOSTS)[0] == []
    with EmbeddedCluster(path) as writer:  # the writer finishes creating it and writes
        writer.create(HOSTS, host("a"))
    stored = EmbeddedCluster(path, read_only=True).list(HOSTS)[0]
    assert [o["metadata"]["name"] for o in stored] == ["a"]


def test_garbage_collection_persists(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with EmbeddedCluster(path) as c:
        owner = c.create(HOSTS, host("h1"))
        c.create(SECRETS, owned_by(owner, "s1"))
    with EmbeddedCluster(path) as c:
        c.delete(HOSTS, NS, "h1")  # the owner index is rebuilt on open
    with EmbeddedCluster(path) as c:
        assert c.list(SECRETS)[0] == []


def test_read_only_snapshot_reads_a_store_being_written(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with EmbeddedCluster(path) as writer:
        writer.create(HOSTS, host("a"))
        snapshot = EmbeddedCluster(path, read_only=True)
        assert [o["metadata"]["name"] for o in snapshot.list(HOSTS)[0]] == ["a"]
        with pytest.raises(ReadOnlyStore):
            snapshot.create(HOSTS, host("b"))
        with pytest.raises(ReadOnlyStore):
            snapshot.delete(HOSTS, NS, "a")
        with pytest.raises(ReadOnlyStore):
            snapshot.patch(HOSTS, NS, "a", {"spec": {}})
        writer.create(HOSTS, host("b"))
    reopened = EmbeddedCluster(path, read_only=True)  # also after the writer has gone
    assert len(reopened.list(HOSTS)[0]) == 2
    assert len(snapshot.list(HOSTS)[0]) == 1  # a snapshot does not follow the writer


def test_read_only_needs_an_existing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        EmbeddedCluster(tmp_path / "missing.db", read_only=True)
    with pytest.raises(ValueError):
        EmbeddedCluster(read_only=True)


def test_events_beyond_the_limit_expire_oldest_first() -> None:
    from state_controller.cluster.interface import EVENTS

    store = EmbeddedCluster(max_events=3)
    for i in range(5):
        store.create(
            EVENTS,
            {"metadata": {"name": f"e{i}", "namespace": "ns"}, "reason": "R", "message": str(i)},
        )
    names = [e["metadata"]["name"] for e in store.list(EVENTS)[0]]
    assert sorted(names) == ["e2", "e3", "e4"]
    store.close()


def test_an_eviction_is_refused_while_a_budget_selecting_the_pod_allows_no_disruption(
    cluster: EmbeddedCluster,
) -> None:
    node = SimulatedNode(cluster, "worker-0")
    node.run_pod("apps", "db-0", {"app": "db"})
    node.run_pod("apps", "web-0", {"app": "web"})
    set_budget(cluster, "apps", "db", {"app": "db"}, allowed=0)
    assert cluster.evict("apps", "web-0") is True  # no budget selects it
    assert cluster.evict("apps", "db-0") is False
    assert [p["metadata"]["name"] for p in cluster.list(PODS, "apps")[0]] == ["db-0"]
    set_budget(cluster, "apps", "db", {"app": "db"}, allowed=1)
    assert cluster.evict("apps", "db-0") is True
    assert cluster.list(PODS, "apps")[0] == [] and cluster.evict("apps", "db-0") is True
    assert len(cluster.list(PDBS, "apps")[0]) == 1
