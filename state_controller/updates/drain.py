"""How far a drain is: the pods an eviction would still move, and what holds them.

A drain (``kubectl drain``, the Machine Config Operator's drain controller, an
agent's own) evicts what is bound to a cordoned node except what eviction never
moves: DaemonSet pods (their controller tolerates the cordon and puts them
back), mirror pods (the kubelet's static pods) and finished pods. What is left
is what the node waits for. An eviction the API refuses with 429 is one whose
PodDisruptionBudget allows no disruption now: :func:`drain_status` names the
first such budget covering the oldest pod left, and since when it has allowed
none (its ``DisruptionAllowed`` condition), so the message says what to fix.

Pure functions of the pods and budgets the runtime watches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..api.objects import Obj
from .adapters.base import DrainStatus

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
FINISHED_PHASES = frozenset({"Succeeded", "Failed"})


def compact_pod(pod: Obj) -> Obj:
    """A pod cut to what a drain reads (:func:`evictable`, :func:`drain_status`, and the
    eviction's namespace and name): about a tenth of a pod as the API server sends it."""
    meta = pod.get("metadata") or {}
    kept: dict[str, object] = {
        key: meta[key] for key in ("name", "namespace", "creationTimestamp") if key in meta
    }
    if meta.get("labels"):
        kept["labels"] = meta["labels"]
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        kept["annotations"] = {MIRROR_ANNOTATION: meta["annotations"][MIRROR_ANNOTATION]}
    owners = [
        {"kind": o.get("kind"), "controller": bool(o.get("controller"))}
        for o in meta.get("ownerReferences") or ()
    ]
    if owners:
        kept["ownerReferences"] = owners
    return {
        "metadata": kept,
        "spec": {"nodeName": (pod.get("spec") or {}).get("nodeName", "")},
        "status": {"phase": (pod.get("status") or {}).get("phase", "")},
    }


def evictable(pod: Obj) -> bool:
    """Whether a drain would evict this pod (and so waits for it to go)."""
    meta = pod.get("metadata") or {}
    if (pod.get("status") or {}).get("phase") in FINISHED_PHASES:
        return False
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return False
    owners = meta.get("ownerReferences") or ()
    return not any(o.get("kind") == "DaemonSet" and o.get("controller") for o in owners)


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A ``metav1.LabelSelector`` applied to labels; a PDB's null selector selects nothing,
    an empty one every pod of its namespace (policy/v1)."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = expression.get("values") or ()
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _allows_none(budget: Obj) -> bool:
    status = budget.get("status")
    return isinstance(status, dict) and status.get("disruptionsAllowed", 1) == 0


def _blocked_since(budget: Obj) -> str:
    for condition in (budget.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "DisruptionAllowed" and condition.get("status") == "False":
            return str(condition.get("lastTransitionTime", ""))
    return ""


def drain_status(pods: Iterable[Obj], budgets: Iterable[Obj]) -> DrainStatus:
    """What is left to drain from a node whose pods are ``pods``."""
    left = sorted(
        (p for p in pods if evictable(p)),
        key=lambda p: (str(p["metadata"].get("creationTimestamp", "")), p["metadata"]["name"]),
    )
    blocking = sorted(
        (b for b in budgets if _allows_none(b)),
        key=lambda b: (b["metadata"].get("namespace", ""), b["metadata"]["name"]),
    )
    for pod in left:
        meta = pod["metadata"]
        for budget in blocking:
            bmeta = budget["metadata"]
            if bmeta.get("namespace") != meta.get("namespace"):
                continue
            if selects((budget.get("spec") or {}).get("selector"), meta.get("labels") or {}):
                return DrainStatus(
                    known=True,
                    pods_left=len(left),
                    blocked_by=f"{bmeta.get('namespace')}/{bmeta['name']}",
                    blocked_since=_blocked_since(budget),
                )
    return DrainStatus(known=True, pods_left=len(left))
