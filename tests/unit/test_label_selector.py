"""The embedded store's label selectors, as the API server reads and watches with them."""

from __future__ import annotations

import pytest

from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import SECRETS, Invalid, Watch

NS = "ns"
LABEL = "hoststate.io/bmc-credentials"


def _secret(name: str, labels: dict[str, str] | None = None) -> dict[str, object]:
    meta: dict[str, object] = {"name": name, "namespace": NS}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta}


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        (f"{LABEL}=true", ["a"]),
        (f"{LABEL}==true", ["a"]),
        (f"{LABEL}!=true", ["b", "c"]),
        (LABEL, ["a", "b"]),
        (f"!{LABEL}", ["c"]),
        (f"{LABEL}=true,tier=x", []),
    ],
)
def test_a_list_takes_what_the_selector_matches(selector: str, names: list[str]) -> None:
    with EmbeddedCluster() as store:
        store.create(SECRETS, _secret("a", {LABEL: "true"}))
        store.create(SECRETS, _secret("b", {LABEL: "false"}))
        store.create(SECRETS, _secret("c"))
        items, _ = store.list(SECRETS, NS, label_selector=selector)
        assert [o["metadata"]["name"] for o in items] == names


def test_a_set_selector_is_refused() -> None:
    with EmbeddedCluster() as store, pytest.raises(Invalid):
        store.list(SECRETS, NS, label_selector=f"{LABEL} in (true)")


def _first(watch: Watch, count: int) -> list[tuple[str, str]]:
    """The first ``count`` events of the watch, as (type, name); then it is stopped."""
    events = iter(watch)
    seen: list[tuple[str, str]] = []
    for _ in range(count):
        event = next(events)
        seen.append((event.type, event.object["metadata"]["name"]))
    watch.stop()
    return seen


def test_a_watch_tells_a_label_given_as_added_and_taken_as_deleted() -> None:
    with EmbeddedCluster() as store:
        store.create(SECRETS, _secret("other"))
        _, version = store.list(SECRETS, NS, label_selector=f"{LABEL}=true")
        watch = store.watch(SECRETS, NS, resource_version=version, label_selector=f"{LABEL}=true")
        store.patch(SECRETS, NS, "other", {"metadata": {"annotations": {"x": "1"}}})  # unseen
        store.patch(SECRETS, NS, "other", {"metadata": {"labels": {LABEL: "true"}}})
        store.patch(SECRETS, NS, "other", {"metadata": {"annotations": {"x": "2"}}})
        store.patch(SECRETS, NS, "other", {"metadata": {"labels": None}})
        store.patch(SECRETS, NS, "other", {"metadata": {"annotations": {"x": "3"}}})  # unseen
        store.create(SECRETS, _secret("last", {LABEL: "true"}))
        told = [("ADDED", "other"), ("MODIFIED", "other"), ("DELETED", "other"), ("ADDED", "last")]
        assert _first(watch, 4) == told
        # resumed from the history (the events already happened), the same story
        again = store.watch(SECRETS, NS, resource_version=version, label_selector=f"{LABEL}=true")
        assert _first(again, 4) == told
