"""``kubectl hoststate why NAME``: what a machine waits on, since when, and whether that is
usual for machines like it.

From its HostState: the phase; the step it is in (a servicing step, a node update step
or a provisioning state, in that order, as the controller times them), when it entered
it and what the step's message says; the conditions that are not OK (Stuck, Slow,
Degraded, NodeDegraded True; Ready, SpecValid, PoweredOn, SourcesAgree False; a stage or
an update step whose reason says it failed); and ``status.estimate``, the step's usual
and late durations on machines of the same pool and hardware class, against the time
already spent. With no estimate it says why, and gives no number.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from ..api.objects import Obj
from ..api.servicing import SERVICE_ACTIVE, ServiceStep
from ..api.states import TRANSIENT_STATES
from ..api.updates import IN_PROGRESS, UpdateStep
from ..durations.learned import MIN_SAMPLES
from .clock import columns, instant, one_line, relative, span, utc, when
from .reading import Target

HELP = "what a machine waits on, since when, and how that compares with machines like it"

SERVICE_TIMED = frozenset(s.value for s in SERVICE_ACTIVE)
SERVICE_WAITING = ServiceStep.PENDING.value
SERVICE_FAILED = ServiceStep.FAILED.value
UPDATE_TIMED = frozenset(s.value for s in IN_PROGRESS)
UPDATE_DEGRADED = UpdateStep.DEGRADED.value
PROVISIONING_TIMED = frozenset(s.value for s in TRANSIENT_STATES)

# conditions whose True is trouble (the summaries, and MachineConfigNode's degraded ones)
BAD_WHEN_TRUE = frozenset({"Stuck", "Slow", "Degraded", "NodeDegraded", "PinnedImageSetsDegraded"})
# conditions whose False is trouble; the others (provisioning stages, an update's steps)
# are False until their stage is done, and trouble only when their reason says it failed
BAD_WHEN_FALSE = frozenset({"Ready", "SpecValid", "PoweredOn", "SourcesAgree"})
FAILED_WORDS = ("Fail", "Error")


@dataclass(frozen=True)
class Step:
    """Where the machine is: the operation (``update``, ``servicing``, ``provisioning``),
    the step's name, when it began, its message, and whether the controller times it."""

    kind: str
    name: str
    entered_at: float | None
    message: str
    timed: bool


def current_step(status: dict[str, Any]) -> Step:
    """The step the machine is in: an active servicing step first, then a node update
    step, then its provisioning state (``timed`` False when it rests in it)."""
    servicing = status.get("servicing") or {}
    step = str(servicing.get("step") or "")
    if step in SERVICE_TIMED or step in (SERVICE_WAITING, SERVICE_FAILED):
        return Step(
            "servicing",
            step,
            instant(servicing.get("enteredAt")),
            str(servicing.get("message") or ""),
            step in SERVICE_TIMED,
        )
    update = status.get("update") or {}
    step = str(update.get("step") or "")
    if step in UPDATE_TIMED or step == UPDATE_DEGRADED:
        return Step(
            "update",
            step,
            instant(update.get("enteredAt")),
            str(update.get("message") or ""),
            step in UPDATE_TIMED,
        )
    cursor = status.get("provisioning") or {}
    state = str(cursor.get("state") or "")
    return Step(
        "provisioning",
        state,
        instant(cursor.get("enteredAt")),
        str(cursor.get("errorMessage") or ""),
        state in PROVISIONING_TIMED,
    )


def not_ok(conditions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conditions that say something is wrong (or, for Ready, what the machine waits
    on), in the order written."""
    bad = []
    for c in conditions:
        kind, status = str(c.get("type") or ""), str(c.get("status") or "")
        reason = str(c.get("reason") or "")
        if kind in BAD_WHEN_TRUE:
            wrong = status not in ("False", "")
        elif kind in BAD_WHEN_FALSE:
            wrong = status == "False"
        else:
            wrong = status == "False" and any(w in reason for w in FAILED_WORDS)
        if wrong:
            bad.append(c)
    return bad


def _estimate_lines(step: Step, estimate: dict[str, Any] | None, now: float) -> list[str]:
    """How the step compares with machines like it, or why that is not known."""
    if not step.timed:
        if step.kind == "servicing" and step.name == SERVICE_WAITING:
            return ["no estimate: it waits for its turn (a step is timed once it begins)"]
        return [f"no estimate: nothing is under way (it rests in {step.kind} {step.name!r})"]
    if not estimate:
        return [
            f"no estimate: fewer than {MIN_SAMPLES} past durations of {step.name} are "
            "known on machines like it (its pool and hardware class, any pool, or the "
            "fleet), so no number is given"
        ]
    entered = instant(estimate.get("enteredAt")) or 0.0
    step_ends = instant(estimate.get("stepEndsAt")) or entered
    step_late = instant(estimate.get("stepLateAt")) or step_ends
    name = str(estimate.get("step") or step.name)
    lines = []
    if name != step.name or estimate.get("kind") != step.kind:
        lines.append(
            f"the estimate is of {estimate.get('kind')} step {name}, not of the step now; "
            "it is made when a step begins"
        )
    lines.append(
        f"{name} for {span(now - entered)}; on machines like it ({estimate.get('basis')}) "
        f"{name} takes {span(step_ends - entered)} usually and ends by "
        f"{span(step_late - entered)} at the latest, from {estimate.get('samples')} past "
        f"durations of it"
    )
    if now >= step_late:
        lines.append(
            f"slower than usual: {span(now - step_late)} past its late bound "
            f"({utc(step_late)}), as late as fewer than one in ten were"
        )
    elif now >= step_ends:
        lines.append(
            f"past its usual end ({relative(step_ends, now)}), within its late bound "
            f"({utc(step_late)}, {relative(step_late, now)})"
        )
    else:
        lines.append(
            f"as usual: expected to end {relative(step_ends, now)} ({utc(step_ends)}), "
            f"late after {utc(step_late)}"
        )
    ends, late = instant(estimate.get("endsAt")), instant(estimate.get("lateAt"))
    if ends is not None and late is not None:
        lines.append(
            f"the whole {estimate.get('kind')}: expected to end {when(ends, now)}, "
            f"late after {when(late, now)}"
        )
    return lines


def render(obj: Obj, now: float) -> str:
    """What the HostState says the machine waits on, as text."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    namespace = meta.get("namespace", "")
    follows = [
        f"{label} {value}"
        for label, value in (
            ("Host", spec.get("host") and f"{namespace}/{spec['host']}"),
            ("BareMetalHost", spec.get("bareMetalHost") and f"{namespace}/{spec['bareMetalHost']}"),
            ("Node", spec.get("node")),
        )
        if value
    ]
    head = f"HostState {namespace}/{meta.get('name', '')}: phase {status.get('phase') or '(none)'}"
    lines = [head + (f" ({', '.join(follows)})" if follows else "")]
    step = current_step(status)
    since = when(step.entered_at, now) if step.entered_at is not None else "(time not known)"
    what = f"{step.kind} step {step.name}" if step.kind != "provisioning" else "provisioning state"
    if step.kind == "provisioning":
        what += f" {step.name or '(none)'}"
    rows = [["step:", f"{what}, entered {since}"]]
    if step.message:
        rows.append(["message:", one_line(step.message, 300)])
    cursor = status.get("provisioning") or {}
    if cursor.get("errorCount"):
        rows.append(
            [
                "errors:",
                f"{cursor.get('errorCount')} ({cursor.get('errorType') or 'error'}): "
                + one_line(cursor.get("errorMessage"), 200),
            ]
        )
    remediation = status.get("remediation") or {}
    if remediation:
        since_at = instant(remediation.get("since"))
        rows.append(
            [
                "remediation:",
                f"{remediation.get('trouble')}"
                + (f" since {when(since_at, now)}" if since_at is not None else "")
                + f", {remediation.get('attempts', 0)} power-cycles, now "
                + f"{remediation.get('action')}: {one_line(remediation.get('message'), 200)}",
            ]
        )
    estimate = _estimate_lines(step, status.get("estimate"), now)
    rows.append(["estimate:", estimate[0]])
    rows.extend(["", more] for more in estimate[1:])
    lines.extend(columns(rows))
    bad = not_ok(list(status.get("conditions") or []))
    if bad:
        lines.append("conditions not OK:")
        table = []
        for c in bad:
            changed = instant(c.get("lastTransitionTime"))
            table.append(
                [
                    str(c.get("type")),
                    str(c.get("status")),
                    str(c.get("reason") or "-"),
                    f"since {relative(changed, now)}" if changed is not None else "-",
                    one_line(c.get("message"), 200),
                ]
            )
        lines.extend(columns(table, indent="  "))
    else:
        lines.append("conditions not OK: none")
    return "\n".join(lines) + "\n"


def add(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="the HostState (the Host's, BareMetalHost's or Node's name)")


def run(args: argparse.Namespace, target: Target, now: float) -> str:
    """Read the HostState and say what it waits on."""
    obj = target.hoststate(args.namespace, args.name)
    return render(obj, now)
