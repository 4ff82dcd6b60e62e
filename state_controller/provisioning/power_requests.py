"""What a Host's annotations ask of its power, and of its deletion while detached.

Two families of reboot annotation are read, with one meaning each:

* ``hoststate.io/reboot`` and baremetal-operator's ``reboot.metal3.io`` ask for one
  reboot; the controller removes the annotation once the host came back;
* ``reboot.metal3.io/<key>`` (baremetal-operator's keyed form, used by remediation
  controllers) holds the host powered off while any such annotation is there; removing
  the last one powers it on again (as ``spec.online`` says).

A value may be empty or JSON ``{"mode": "soft"|"hard"}``: soft asks the OS to restart or
shut down (ACPI), hard switches the power. As in baremetal-operator the default is soft
for ``reboot.metal3.io``, and any hard request wins; ``hoststate.io/reboot`` keeps its
meaning from before modes existed: hard unless it says soft.

``hoststate.io/detached`` may carry ``{"deleteAction": "delete"|"delay"}``, as
baremetal-operator's detached annotation: ``delete`` (the default) lets a detached Host
be deleted without deprovisioning; ``delay`` holds its deletion until the annotation is
removed, and the host is then deprovisioned as any other.

Pure functions: a value that is not what is described is read as the default and
named in :attr:`PowerRequests.problems` (the reconciler turns them into an Event and
the HostState's condition), so what was read is never a surprise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ..api import annotations as ann

Mode = Literal["soft", "hard"]

BMO_REBOOT = "reboot.metal3.io"
"""baremetal-operator's reboot annotation; with ``/<key>`` after it, a hold-off."""

DELETE_ACTIONS = ("delete", "delay")


@dataclass(frozen=True)
class PowerRequests:
    reboot: Mode | None = None  # reboot once, in this mode
    reboot_annotations: tuple[str, ...] = ()  # removed once the reboot is done
    hold_off: Mode | None = None  # keep the host off, powered off in this mode
    problems: dict[str, str] = field(default_factory=dict)  # annotation -> what is wrong


def _mode(name: str, value: str, default: Mode, problems: dict[str, str]) -> Mode:
    if not value.strip():
        return default
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    mode = parsed.get("mode", default) if isinstance(parsed, dict) else None
    if mode in ("soft", "hard"):
        return mode  # type: ignore[no-any-return]
    problems[name] = (
        f'annotation {name}: the value must be empty or {{"mode": "soft"}} or '
        f'{{"mode": "hard"}}; read as {default}'
    )
    return default


def _strongest(a: Mode | None, b: Mode) -> Mode:
    return "hard" if "hard" in (a, b) else b


def power_requests(annotations: Mapping[str, str]) -> PowerRequests:
    """The reboots and hold-offs the annotations ask for."""
    problems: dict[str, str] = {}
    reboot: Mode | None = None
    hold_off: Mode | None = None
    once: list[str] = []
    for name, value in sorted(annotations.items()):
        if name == ann.REBOOT:
            reboot = _strongest(reboot, _mode(name, value, "hard", problems))
            once.append(name)
        elif name == BMO_REBOOT:
            reboot = _strongest(reboot, _mode(name, value, "soft", problems))
            once.append(name)
        elif name.startswith(BMO_REBOOT + "/"):
            hold_off = _strongest(hold_off, _mode(name, value, "soft", problems))
    return PowerRequests(reboot, tuple(once), hold_off, problems)


def delete_action(annotations: Mapping[str, str]) -> tuple[str, str]:
    """(the detached annotation's deleteAction, the problem with its value or "")."""
    value = annotations.get(ann.DETACHED, "")
    if not value.strip():
        return "delete", ""
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    action = parsed.get("deleteAction", "delete") if isinstance(parsed, dict) else None
    if action in DELETE_ACTIONS:
        return str(action), ""
    return "delete", (
        f'annotation {ann.DETACHED}: the value must be empty or {{"deleteAction": "delete"}} '
        f'or {{"deleteAction": "delay"}}; read as delete'
    )


def annotation_problems(annotations: Mapping[str, str]) -> dict[str, str]:
    """Every power or detach annotation whose value is not understood, with why."""
    problems = dict(power_requests(annotations).problems)
    _, detach_problem = delete_action(annotations)
    if detach_problem:
        problems[ann.DETACHED] = detach_problem
    return problems
