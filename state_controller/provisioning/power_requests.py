"""What a Host's annotations ask of its power, and of its deletion while detached.

Two families of reboot annotation are read, with one meaning each:

* ``hoststate.io/reboot`` and baremetal-operator's ``reboot.metal3.io`` ask for one
  reboot; the controller removes the annotation once the host came back;
* ``reboot.metal3.io/<key>`` (baremetal-operator's keyed form, used by remediation
  controllers) holds the host powered off while any such annotation is there; removing
  the last one powers it on again (as ``spec.online`` says).

A value may be empty or JSON ``{"mode": "soft"|"hard", "force": true|false}``
(baremetal-operator v0.13.2's ``RebootAnnotationArguments``,
apis/metal3.io/v1alpha1/baremetalhost_types.go): soft asks the OS to restart or shut
down (ACPI), hard switches the power. As in baremetal-operator the default is soft for
``reboot.metal3.io``, and any hard request wins; ``hoststate.io/reboot`` keeps its
meaning from before modes existed: hard unless it says soft.

``"force": true`` (on any of them) restarts the deploy ramdisk an inspection or a deploy
waits on, as baremetal-operator v0.13.2 does (baremetalhost_controller.go in
internal/controller/metal3.io: ``actionInspecting`` and ``actionProvisioning`` hand
``hasRebootAnnotation(info, true)`` to the provisioner as ``forceReboot``); see
:mod:`.forced_reboot`. Anywhere else a forced reboot is a reboot: a Host reboots at
rest, and an operation under way (preparing, deprovisioning) finishes first.

``hoststate.io/detached`` may carry ``{"deleteAction": "delete"|"delay", "force":
true|false}``, as baremetal-operator's ``DetachedAnnotationArguments``: ``delete`` (the
default) lets a detached Host be deleted without deprovisioning; ``delay`` holds its
deletion until the annotation is removed, and the host is then deprovisioned as any
other. Without ``force`` a host is detached only at rest (available, provisioned,
externally provisioned), an operation under way finishing first; ``force`` detaches it
whatever it is doing (``checkDetachedHost`` in
internal/controller/metal3.io/host_state_machine.go).

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
    forced: tuple[str, ...] = ()  # reboot annotations that say "force": true
    problems: dict[str, str] = field(default_factory=dict)  # annotation -> what is wrong


def _parsed(value: str) -> dict[str, object] | None:
    """The annotation's JSON object ({} when empty); None when it is not one."""
    if not value.strip():
        return {}
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _mode(name: str, value: str, default: Mode, problems: dict[str, str]) -> tuple[Mode, bool]:
    """(the mode asked, whether it says ``"force": true``)."""
    parsed = _parsed(value)
    mode = parsed.get("mode", default) if parsed is not None else None
    force = parsed.get("force", False) if parsed is not None else None
    if mode in ("soft", "hard") and isinstance(force, bool):
        return mode, force
    problems[name] = (
        f'annotation {name}: the value must be empty or {{"mode": "soft"}} or '
        f'{{"mode": "hard"}} (with "force": true or false); read as {default}'
    )
    return default, False


def _strongest(a: Mode | None, b: Mode) -> Mode:
    return "hard" if "hard" in (a, b) else b


def power_requests(annotations: Mapping[str, str]) -> PowerRequests:
    """The reboots and hold-offs the annotations ask for."""
    problems: dict[str, str] = {}
    reboot: Mode | None = None
    hold_off: Mode | None = None
    once: list[str] = []
    forced: list[str] = []
    for name, value in sorted(annotations.items()):
        if name == ann.REBOOT:
            mode, force = _mode(name, value, "hard", problems)
            reboot = _strongest(reboot, mode)
            once.append(name)
        elif name == BMO_REBOOT:
            mode, force = _mode(name, value, "soft", problems)
            reboot = _strongest(reboot, mode)
            once.append(name)
        elif name.startswith(BMO_REBOOT + "/"):
            mode, force = _mode(name, value, "soft", problems)
            hold_off = _strongest(hold_off, mode)
        else:
            continue
        if force:
            forced.append(name)
    return PowerRequests(reboot, tuple(once), hold_off, tuple(forced), problems)


def delete_action(annotations: Mapping[str, str]) -> tuple[str, str]:
    """(the detached annotation's deleteAction, the problem with its value or "")."""
    action, _, problem = detach_asked(annotations)
    return action, problem


def detach_asked(annotations: Mapping[str, str]) -> tuple[str, bool, str]:
    """(the detached annotation's deleteAction, whether it says ``"force": true``, the
    problem with its value or "")."""
    parsed = _parsed(annotations.get(ann.DETACHED, ""))
    action = parsed.get("deleteAction", "delete") if parsed is not None else None
    force = parsed.get("force", False) if parsed is not None else None
    if action in DELETE_ACTIONS and isinstance(force, bool):
        return str(action), force, ""
    return (
        "delete",
        False,
        (
            f'annotation {ann.DETACHED}: the value must be empty or {{"deleteAction": "delete"}} '
            f'or {{"deleteAction": "delay"}} (with "force": true or false); read as delete'
        ),
    )


def annotation_problems(annotations: Mapping[str, str]) -> dict[str, str]:
    """Every power or detach annotation whose value is not understood, with why."""
    problems = dict(power_requests(annotations).problems)
    _, detach_problem = delete_action(annotations)
    if detach_problem:
        problems[ann.DETACHED] = detach_problem
    return problems
