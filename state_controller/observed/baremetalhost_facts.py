"""What a BareMetalHost shows besides its state: who uses it, what is asked of it, and
baremetal-operator's own conditions, read into a book.

* ``spec.consumerRef`` (who uses the host: a Metal3Machine, a HostClaim) becomes the
  book's consumer, ``Kind namespace/name``; a change is told (``Claimed``,
  ``Released``).
* ``spec.online`` (whether the host is wanted on) and the
  ``baremetalhost.metal3.io/detached`` annotation (asking BMO to stop managing it
  without deprovisioning it) are facts; a change is told, since it is a person's or a
  controller's request that BMO acts on next (its result, the power or the
  ``detached`` operational status, is recorded where it shows).
* ``status.conditions`` are shown as BMO wrote them, beside hoststate's own and
  apart from them (bounded in count and in message length). Most of them restate
  the provisioning state and operational status, which are recorded already; a
  condition that goes False for a reason of its own (the BMC's ``Healthy`` with
  ``Warning`` or ``CriticalError``, ``Manageable`` with ``PowerFailure``, or a
  reason this version does not know) is told as a Warning, and told again when it
  clears.

Nothing is told on the first look at a host (what it shows then is not a change
seen), nor after a restart (the book holds what its HostState showed).
"""

from __future__ import annotations

import re
from typing import Any

from ..api.baremetalhost import DETACHED
from ..api.base import REASON_MAX
from ..api.hoststate import (
    BMH_CONDITION_MESSAGE_MAX,
    BMH_CONDITIONS_MAX,
    CONSUMER_MAX,
    DETACHED_VALUE_MAX,
)
from ..api.timefmt import parse_rfc3339
from ..books.book import Book
from ..books.records import BareMetalHostFacts, ForeignCondition, cut
from .health import health_reported

EVENT_REASON_MAX = 128  # events.k8s.io/v1's limit for an Event's reason

# The reasons baremetal-operator v0.13.2 gives its conditions (computeConditions and
# setConditionsProgressing, internal/controller/metal3.io/baremetalhost_controller.go)
# that restate the provisioning state or operational status: recorded already as
# transitions, so a condition moving to one of them is not told again. Its own news
# (PowerFailure, the Healthy reasons) is not here. NotManageableReason is declared in
# apis/metal3.io/v1alpha1/baremetalhost_types.go but never set, so it is not here either:
# a BareMetalHost showing it was written by something else, which is told.
RESTATED = frozenset(
    {
        "Manageable",
        "NotManaged",
        "Registering",
        "RegistrationFailed",
        "Provisioned",
        "NotProvisioned",
        "Provisioning",
        "Available",
        "NotAvailable",
        "Inspecting",
        "Preparing",
        "Deprovisioning",
        "PoweringOffBeforeDelete",
        "Deleting",
        "NotProgressing",
        "Error",
        "Detached",
        "Servicing",
    }
)


def consumer_of(bmh: dict[str, Any]) -> str:
    """``spec.consumerRef`` in a few words: ``Metal3Machine metal/worker-0-abc``."""
    ref = (bmh.get("spec") or {}).get("consumerRef") or {}
    if not isinstance(ref, dict) or not ref.get("name"):
        return ""
    kind = str(ref.get("kind") or "")
    namespace = str(ref.get("namespace") or "")
    name = f"{namespace}/{ref['name']}" if namespace else str(ref["name"])
    return cut(f"{kind} {name}" if kind else name, CONSUMER_MAX)


def facts_of(bmh: dict[str, Any]) -> BareMetalHostFacts:
    spec = bmh.get("spec") or {}
    annotations = (bmh.get("metadata") or {}).get("annotations") or {}
    detached = annotations.get(DETACHED)
    return BareMetalHostFacts(
        online=bool(spec.get("online")),
        detached=None if detached is None else cut(str(detached), DETACHED_VALUE_MAX),
        conditions=conditions_of(bmh),
    )


def conditions_of(bmh: dict[str, Any]) -> tuple[ForeignCondition, ...]:
    """BMO's conditions as written, the first ``BMH_CONDITIONS_MAX`` of them; one without
    a type, status or time (which its schema requires) is left out."""
    out: list[ForeignCondition] = []
    for raw in (bmh.get("status") or {}).get("conditions") or []:
        if not isinstance(raw, dict):
            continue
        at = parse_rfc3339(raw.get("lastTransitionTime"))
        if not raw.get("type") or raw.get("status") not in ("True", "False", "Unknown"):
            continue
        if at is None:
            continue
        at = float(int(at))  # metav1.Time: whole seconds, as shown again after a restart
        out.append(
            ForeignCondition(
                type=str(raw["type"]),
                status=str(raw["status"]),
                reason=cut(str(raw.get("reason") or ""), REASON_MAX),
                message=cut(str(raw.get("message") or ""), BMH_CONDITION_MESSAGE_MAX),
                at=at,
            )
        )
        if len(out) == BMH_CONDITIONS_MAX:
            break
    return tuple(out)


def observe_facts(book: Book, bmh: dict[str, Any], now: float) -> None:
    """Record what ``bmh`` shows of its consumer, spec.online, the detached annotation and
    its conditions that the book does not hold, telling each change worth an Event."""
    before = book.facts.bare_metal_host
    was_consumer = book.facts.consumer
    seen, consumer = facts_of(bmh), consumer_of(bmh)
    book.note(now=now, health=health_reported(seen.conditions))
    if not book.note(now=now, bare_metal_host=seen, consumer=consumer):
        return
    if before is None:
        return  # the first look (or a HostState from before these were kept): no change seen
    if consumer != was_consumer:
        _tell_consumer(book, was_consumer, consumer, now)
    if seen.online != before.online:
        book.notice(
            "Normal",
            "PowerOnRequested" if seen.online else "PowerOffRequested",
            f"spec.online set to {str(seen.online).lower()}: baremetal-operator is asked to "
            f"power the host {'on' if seen.online else 'off'}",
            now=now,
        )
    if seen.detached != before.detached:
        _tell_detached(book, seen.detached, now)
    _tell_conditions(book, before.conditions, seen.conditions, now)


def _tell_consumer(book: Book, was: str, now_used_by: str, now: float) -> None:
    if not now_used_by:
        book.notice("Normal", "Released", f"released by {was} (spec.consumerRef)", now=now)
    elif not was:
        book.notice("Normal", "Claimed", f"claimed by {now_used_by} (spec.consumerRef)", now=now)
    else:
        book.notice(
            "Normal",
            "Claimed",
            f"claimed by {now_used_by}, no longer by {was} (spec.consumerRef)",
            now=now,
        )


def _tell_detached(book: Book, value: str | None, now: float) -> None:
    if value is None:
        book.notice(
            "Normal",
            "AttachRequested",
            f"the {DETACHED} annotation was removed: baremetal-operator is to manage the "
            "host again",
            now=now,
        )
        return
    book.notice(
        "Normal",
        "DetachRequested",
        f"the {DETACHED} annotation asks baremetal-operator to stop managing the host "
        "without deprovisioning it" + (f" ({value})" if value else ""),
        now=now,
    )


def _event_reason(*words: str) -> str:
    """An Event's reason from a condition's type and a word: letters and digits only (a
    type may be prefixed, ``example.com/Thing``), within an Event reason's length."""
    return re.sub(r"[^A-Za-z0-9]", "", "".join(words))[:EVENT_REASON_MAX]


def _own_false(cond: ForeignCondition | None) -> bool:
    """False for a reason no recorded state or status tells already."""
    return cond is not None and cond.status == "False" and cond.reason not in RESTATED


def _tell_conditions(
    book: Book,
    before: tuple[ForeignCondition, ...],
    after: tuple[ForeignCondition, ...],
    now: float,
) -> None:
    was = {c.type: c for c in before}
    for cond in after:
        old = was.get(cond.type)
        at = min(cond.at, now)
        detail = f": {cond.message}" if cond.message else ""
        if _own_false(cond) and (not _own_false(old) or (old and old.reason != cond.reason)):
            book.notice(
                "Warning",
                _event_reason(cond.type, cond.reason),
                f"baremetal-operator reports {cond.type} False ({cond.reason}){detail}",
                now=at,
            )
        elif _own_false(old) and not _own_false(cond) and old is not None:
            book.notice(
                "Normal",
                _event_reason(cond.type, "Recovered"),
                f"baremetal-operator reports {cond.type} {cond.status} ({cond.reason}), "
                f"no longer False ({old.reason}){detail}",
                now=at,
            )
