"""The API server's rules for one object, as pure functions the embedded store applies.

What a create stores (server-owned fields, a generated name, a uid), what an update may
change and when ``generation`` moves, preconditions, finalizers, owner references, JSON merge
patch and serialization. Nothing here holds state or takes the store's lock.
"""

from __future__ import annotations

import random
import string
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

from state_controller.api.objects import Obj, to_json
from state_controller.cluster.interface import Conflict, FieldCause, Invalid, Resource
from state_controller.updates.drain import selects

Key = tuple[str, str, str]  # (resource key, namespace, name)
Record = tuple[int, bytes]  # (resourceVersion, serialized object)

_SERVER_OWNED: Final = (
    "uid",
    "creationTimestamp",
    "name",
    "namespace",
    "generation",
    "resourceVersion",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
_NAME_ALPHABET: Final = string.ascii_lowercase + string.digits
_GENERATED_SUFFIX_LEN: Final = 5


def now_rfc3339() -> str:
    """Kubernetes timestamps: second precision, UTC, ``Z`` suffix."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch; builds new dicts so ``target`` is never modified."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def prepare_create(resource: Resource, obj: Obj) -> tuple[Obj, bool]:
    """The object as the server stores it, and whether its name was generated."""
    meta = dict(obj.get("metadata") or {})
    new = {**obj, "metadata": meta}
    new.setdefault("apiVersion", resource.api_version)
    new.setdefault("kind", resource.kind)
    if resource.namespaced and not meta.get("namespace"):
        raise Invalid(
            f"{resource}: namespace is required",
            [FieldCause("metadata.namespace", "Required value")],
        )
    if not resource.namespaced:
        meta.pop("namespace", None)
    generated = not meta.get("name")
    if generated:
        if not meta.get("generateName"):
            raise Invalid(
                f"{resource}: name or generateName is required",
                [FieldCause("metadata.name", "Required value")],
            )
        suffix = "".join(random.choices(_NAME_ALPHABET, k=_GENERATED_SUFFIX_LEN))
        meta["name"] = f"{meta['generateName']}{suffix}"
    for server_field in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
        meta.pop(server_field, None)
    # A version-4 UUID from the fast PRNG: uids need uniqueness, not secrecy, and
    # uuid4() costs a system call per object (measured: 7% of a scale run).
    meta["uid"] = str(uuid.UUID(int=random.getrandbits(128), version=4))
    meta["creationTimestamp"] = now_rfc3339()
    meta["generation"] = 1
    return new, generated


def finish_change(resource: Resource, old: Obj, new: Obj, user_meta: Mapping[str, Any]) -> Obj:
    """Restores what the server owns and bumps generation when the spec changed.

    ``new`` is the already pruned candidate; its metadata is replaced by ``user_meta`` with
    the server-owned fields of ``old``.
    """
    old_meta = old["metadata"]
    meta = dict(user_meta)
    for server_field in _SERVER_OWNED:
        if server_field in old_meta:
            meta[server_field] = old_meta[server_field]
        else:
            meta.pop(server_field, None)
    new["metadata"] = meta
    new.setdefault("apiVersion", old.get("apiVersion", resource.api_version))
    new.setdefault("kind", old.get("kind", resource.kind))
    _check_finalizers_not_added(old_meta, meta)
    if _spec_of(new, resource.has_status) != _spec_of(old, resource.has_status):
        meta["generation"] = int(old_meta.get("generation") or 0) + 1
    return new


def _spec_of(obj: Obj, has_status: bool) -> dict[str, Any]:
    """What ``generation`` tracks: everything but metadata (and status, if a subresource)."""
    skip = ("metadata", "status") if has_status else ("metadata",)
    return {k: v for k, v in obj.items() if k not in skip}


def owner_uids(meta: Mapping[str, Any]) -> set[str]:
    refs = meta.get("ownerReferences") or ()
    return {str(ref["uid"]) for ref in refs if isinstance(ref, dict) and ref.get("uid")}


def is_removable(meta: Mapping[str, Any]) -> bool:
    """A deleting object goes away once its last finalizer is removed."""
    return "deletionTimestamp" in meta and not meta.get("finalizers")


def check_precondition(wanted: Any, stored_meta: Mapping[str, Any]) -> None:
    if wanted and str(wanted) != stored_meta.get("resourceVersion"):
        raise Conflict(
            f"the object has been modified; resourceVersion {wanted} is not the current "
            f"{stored_meta.get('resourceVersion')}"
        )


def _check_finalizers_not_added(old_meta: Mapping[str, Any], new_meta: Mapping[str, Any]) -> None:
    """The API server forbids new finalizers once deletion started (it could never end)."""
    if "deletionTimestamp" not in old_meta:
        return
    added = set(new_meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ())
    if added:
        raise Invalid(
            "no new finalizers can be added if the object is being deleted",
            [FieldCause("metadata.finalizers", f"cannot add {sorted(added)}")],
        )


def dumps(obj: Obj) -> bytes:
    try:
        return to_json(obj)
    except orjson.JSONEncodeError as exc:
        raise Invalid(f"object is not representable as JSON: {exc}") from exc


def namespace_of(resource: Resource, namespace: str | None) -> str:
    """The namespace part of a key: empty for cluster-scoped resources."""
    return (namespace or "") if resource.namespaced else ""


def identify(resource: Resource, meta: Mapping[str, Any]) -> tuple[str, str]:
    """Namespace and name of the object an update names in its metadata."""
    name = meta.get("name")
    if not name:
        raise Invalid(
            f"{resource}: name is required", [FieldCause("metadata.name", "Required value")]
        )
    return namespace_of(resource, meta.get("namespace")), str(name)


FieldMatch = Callable[[Obj], bool]


def field_matcher(selector: str) -> FieldMatch | None:
    """The API server's field selector (``spec.nodeName=worker-1,status.phase!=Failed``) as a
    predicate; None when there is none. A field that is absent reads as ``""``."""
    if not selector:
        return None
    terms: list[tuple[list[str], str, bool]] = []
    for term in selector.split(","):
        negate = "!=" in term
        path, _, value = term.partition("!=" if negate else "=")
        path = path.strip()
        value = value.lstrip("=").strip()
        if not path:
            raise Invalid(f"invalid field selector {selector!r}: write field=value terms")
        terms.append((path.split("."), value, negate))

    def matches(obj: Obj) -> bool:
        for path, value, negate in terms:
            found: Any = obj
            for part in path:
                found = found.get(part) if isinstance(found, dict) else None
            text = "" if found is None else str(found)
            if (text == value) == negate:
                return False
        return True

    return matches


def label_matcher(selector: str) -> FieldMatch | None:
    """The API server's label selector as a predicate; None when there is none.

    Terms joined by commas: ``key=value`` (or ``==``), ``key!=value`` (true also when the
    label is absent), ``key`` (present) and ``!key`` (absent). Set terms (``in``, ``notin``)
    are refused: nothing here uses them.
    """
    if not selector:
        return None
    terms: list[tuple[str, str | None, bool]] = []  # (key, value or None: presence, negate)
    for raw in selector.split(","):
        term = raw.strip()
        if "(" in term or " in " in f" {term} " or " notin " in f" {term} ":
            raise Invalid(f"invalid label selector {selector!r}: set terms are not supported")
        if "!=" in term:
            key, _, value = term.partition("!=")
            terms.append((key.strip(), value.strip(), True))
        elif "=" in term:
            key, _, value = term.partition("=")
            terms.append((key.strip(), value.lstrip("=").strip(), False))
        elif term.startswith("!"):
            terms.append((term[1:].strip(), None, True))
        else:
            terms.append((term, None, False))
        if not terms[-1][0]:
            raise Invalid(f"invalid label selector {selector!r}: write key=value terms")

    def matches(obj: Obj) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        for key, value, negate in terms:
            found = key in labels if value is None else labels.get(key) == value
            if found == negate:
                return False
        return True

    return matches


def selector_matcher(field_selector: str, label_selector: str) -> FieldMatch | None:
    """Both selectors as one predicate (an object must match both); None when neither."""
    by_field, by_label = field_matcher(field_selector), label_matcher(label_selector)
    if by_field is None or by_label is None:
        return by_field or by_label
    first, second = by_field, by_label
    return lambda obj: first(obj) and second(obj)


def eviction_allowed(pod: Obj, budgets: list[Obj]) -> bool:
    """Whether the API server would let ``pod`` be evicted: no PodDisruptionBudget of its
    namespace that selects it says it allows no disruption now (``disruptionsAllowed`` 0,
    as the disruption controller wrote it)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    for budget in budgets:
        if (budget.get("metadata") or {}).get("namespace") != meta.get("namespace"):
            continue
        status = budget.get("status")
        if not isinstance(status, dict) or status.get("disruptionsAllowed", 1) != 0:
            continue
        if selects((budget.get("spec") or {}).get("selector"), labels):
            return False
    return True
