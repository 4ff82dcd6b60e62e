"""A HostState's status kept in its own ``hoststate.io/status`` annotation, so that a move
which creates each object anew (``clusterctl move``) carries the history with it.

The API server drops the status of a custom resource created with its status subresource
on, so what ``clusterctl move`` creates in the target has none; its metadata survives. The
metal3 stack keeps a BareMetalHost's status the same way, and this follows it: Cluster API
Provider Metal3 v1.13.2 writes the status as JSON into ``baremetalhost.metal3.io/status``
when it pauses the host for the move (``baremetal/metal3machine_manager.go``,
``SetPauseAnnotation``), and baremetal-operator v0.13.2 restores it when the host has no
status (``internal/controller/metal3.io/baremetalhost_controller.go``,
``reconcileHostData`` with ``hostHasStatus`` and ``getHostStatusFromAnnotation``; its
``saveHostStatus`` writes only the status subresource), then removes the annotation once
the status is there. Here the controller itself keeps the copy while the HostState's host
is paused (:mod:`..runtime.writing.saved_status`); this module is what is pure in it:
the annotation's text, its size bound, and the check of one read back.

Size: annotations total at most 256 KiB per object, counted as the sum of each key's and
value's length (k8s.io/apimachinery ``pkg/api/validation/objectmeta.go``,
``TotalAnnotationSizeLimitB`` and ``ValidateAnnotationsSize``). A HostState's history is
bounded (the book keeps the last 50 transitions and 20 chapters by default:
:class:`.book.Limits`) but a transition's message may be 4096 characters, so the worst
case (``testbed/worst_case.py``) is larger than that. What does not fit in the room the
other annotations leave loses its oldest transitions first (counted in
``historyDropped``, as the book counts those that fall off its bounded history), then
its oldest chapters; a status that would not fit even then is not kept at all (the caller
says so in a warning), rather than kept cut in ways the status cannot say.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..api import annotations as ann
from ..api.hoststate import HostStateStatus

ANNOTATIONS_MAX = 256 * 1024
"""The API server's bound on one object's annotations (keys and values together)."""


@dataclass(frozen=True)
class Saved:
    """The annotation's value for a status (None: it would not fit), and what was cut."""

    value: str | None
    dropped_transitions: int = 0
    dropped_chapters: int = 0


def host_text(status: dict[str, Any] | None) -> str | None:
    """A Host's status as its ``hoststate.io/status`` annotation holds it, in the form the
    Host's restore reads (:func:`..runtime.hosts.inputs.status_annotation`); None for one
    with no provisioning state, which that restore would take for no status at all.

    Without what the restore leaves out anyway (the backend ID, the credentials checked):
    the copy tells no more than the move needs. Host.status holds no secret (the
    credentials by name and version, the host data by digest), and neither does this.
    """
    if not ((status or {}).get("provisioning") or {}).get("state"):
        return None
    kept = {k: v for k, v in (status or {}).items() if k != "goodCredentials"}
    kept["provisioning"] = {k: v for k, v in kept["provisioning"].items() if k != "id"}
    return _text(kept)


def has_status(status: dict[str, Any] | None) -> bool:
    """Whether a HostState's status holds a story (an empty one: created, not written)."""
    status = status or {}
    return bool(status.get("lastSeq") or status.get("history") or status.get("chapters"))


def room_for(annotations: dict[str, str]) -> int:
    """How many characters the saved status may take beside the object's other annotations."""
    others = sum(len(k) + len(v) for k, v in annotations.items() if k != ann.STATUS)
    return ANNOTATIONS_MAX - others - len(ann.STATUS)


def _text(status: dict[str, Any]) -> str:
    return json.dumps(status, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _size(text: str) -> int:
    return len(text.encode())  # the API server counts bytes (Go's len of a string)


def fit(status: dict[str, Any], room: int) -> Saved:
    """The annotation's value for ``status``, cut to ``room`` bytes as the module says."""
    text = _text(status)
    if _size(text) <= room:
        return Saved(text)
    cut = dict(status)
    history: list[Any] = list(cut.get("history") or [])
    chapters: list[Any] = list(cut.get("chapters") or [])
    dropped_transitions = dropped_chapters = 0
    while _size(text) > room and (history or chapters):
        if history:
            history.pop(0)
            dropped_transitions += 1
        else:
            chapters.pop(0)
            dropped_chapters += 1
        cut["history"], cut["chapters"] = history, chapters
        cut["historyDropped"] = int(status.get("historyDropped") or 0) + dropped_transitions
        text = _text(cut)
    if _size(text) > room:
        return Saved(None, dropped_transitions, dropped_chapters)
    return Saved(text, dropped_transitions, dropped_chapters)


def read(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """The status an annotation holds, or why it is refused (one line naming the fix).

    Refused: not JSON, not an object, not a HostState status by the CRD's own model, no
    history, or transitions out of order (each ``seq`` after the one before it, ``lastSeq``
    not behind the last): a restore from it would tell another story than the one kept.
    """
    what = f"annotation {ann.STATUS} on the HostState"
    fix = "fix or remove it (the HostState's status is left as it is)"
    try:
        status = json.loads(raw)
    except ValueError:
        return None, f"{what} is not JSON; {fix}"
    if not isinstance(status, dict):
        return None, f"{what} is not a JSON object; {fix}"
    try:
        HostStateStatus.model_validate(status)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "status"
        return None, f"{what} is not a HostState status ({where}: {first['msg']}); {fix}"
    seqs = [int(h.get("seq") or 0) for h in status.get("history") or []]
    if not seqs:
        return None, f"{what} holds no history; {fix}"
    if any(b <= a for a, b in itertools.pairwise(seqs)) or (
        int(status.get("lastSeq") or 0) < seqs[-1]
    ):
        return None, f"{what} has its transitions out of order; {fix}"
    return status, None
