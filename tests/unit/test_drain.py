"""What a drain still waits for: evictable pods, and the budget that blocks them."""

from __future__ import annotations

from typing import Any

from state_controller.updates.drain import drain_status, evictable, selects


def pod(name: str, ns: str = "web", *, created: str = "2026-11-24T10:00:00Z", **extra: Any) -> Any:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "creationTimestamp": created}
    meta.update(extra.pop("meta", {}))
    return {"metadata": meta, "spec": {"nodeName": "w0"}, "status": extra.pop("status", {})}


def budget(name: str, selector: Any, allowed: int | None, ns: str = "web") -> Any:
    status: Any = None
    if allowed is not None:
        status = {
            "disruptionsAllowed": allowed,
            "conditions": [
                {
                    "type": "DisruptionAllowed",
                    "status": "True" if allowed else "False",
                    "lastTransitionTime": "2026-11-24T10:02:11Z",
                }
            ],
        }
    return {
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": selector},
        "status": status,
    }


def test_a_drain_does_not_wait_for_daemonset_mirror_or_finished_pods() -> None:
    daemon = pod("ds-1", meta={"ownerReferences": [{"kind": "DaemonSet", "controller": True}]})
    mirror = pod("static", meta={"annotations": {"kubernetes.io/config.mirror": "abc"}})
    done = pod("job-1", status={"phase": "Succeeded"})
    failed = pod("job-2", status={"phase": "Failed"})
    app = pod("app-1", meta={"ownerReferences": [{"kind": "ReplicaSet", "controller": True}]})
    assert [evictable(p) for p in (daemon, mirror, done, failed, app)] == [
        False, False, False, False, True,
    ]  # fmt: skip
    status = drain_status([daemon, mirror, done, failed, app], [])
    assert (status.known, status.pods_left, status.blocked_by) == (True, 1, "")


def test_label_selectors_as_the_api_reads_them() -> None:
    labels = {"app": "web", "tier": "front"}
    assert selects({}, labels) and not selects(None, labels)
    assert selects({"matchLabels": {"app": "web"}}, labels)
    assert not selects({"matchLabels": {"app": "db"}}, labels)
    expr = {"key": "tier", "operator": "In", "values": ["front", "back"]}
    assert selects({"matchExpressions": [expr]}, labels)
    assert not selects({"matchExpressions": [{**expr, "operator": "NotIn"}]}, labels)
    assert selects({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, labels)
    assert not selects({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, labels)


def test_the_budget_that_holds_the_oldest_pod_is_named_with_since_when() -> None:
    old = pod("web-old", created="2026-11-24T09:00:00Z", meta={"labels": {"app": "web"}})
    new = pod("web-new", created="2026-11-24T09:30:00Z", meta={"labels": {"app": "api"}})
    other_ns = budget("pdb-x", {}, 0, ns="elsewhere")
    allowing = budget("api-pdb", {"matchLabels": {"app": "api"}}, 1)
    blocking = budget("web-pdb", {"matchLabels": {"app": "web"}}, 0)
    unobserved = budget("fresh", {}, None)  # no status yet: the disruption controller decides
    status = drain_status([new, old], [other_ns, allowing, unobserved, blocking])
    assert status.pods_left == 2
    assert (status.blocked_by, status.blocked_since) == ("web/web-pdb", "2026-11-24T10:02:11Z")
    assert drain_status([new], [other_ns, allowing, unobserved, blocking]).blocked_by == ""
