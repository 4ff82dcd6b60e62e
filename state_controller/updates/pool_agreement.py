"""A MachineConfigPool's own counts beside the pool's Nodes, and whether they agree.

The Machine Config Operator counts each pool's machines in its MachineConfigPool's
status, from the same Nodes hoststate follows. Its degraded count has been wrong in
shipped releases (MCO PR #5110): a pool that says 0 degraded while one of its Nodes is
degraded hides the failure from whoever reads only the pool (``oc get mcp``, an
upgrade's gate). So the degraded counts are compared: the operator counts a machine
degraded from the very state it writes about the node, so the two can only differ when
one of its accounts is wrong. The updated counts are not compared: the operator counts
a machine updated against the pool's target, which it knows before any Node is told
(and keeps while the pool is paused), so those differ by design until the rollout
reaches each node.

Both sides recount when they see a Node change, so the counts lag each other for a
moment while a rollout moves: :func:`sources_agree` tells a difference only once it has
lasted ``grace``, and keeps the condition as it was until then. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..api.base import MESSAGE_MAX, REASON_MAX
from ..api.timefmt import rfc3339

# the counts of a MachineConfigPool's status, shown as it writes them
MCP_COUNTS = (
    "machineCount",
    "updatedMachineCount",
    "readyMachineCount",
    "unavailableMachineCount",
    "degradedMachineCount",
)
# its conditions a NodePool shows (the columns of ``oc get mcp``)
MCP_CONDITION_TYPES = ("Updated", "Updating", "Degraded")

SOURCES_AGREE = "SourcesAgree"  # the NodePool's condition, as the HostState's of one node
COUNTS_AGREE = "PoolCountsAgree"
COUNTS_DISAGREE = "PoolCountsDisagree"
AGREE_MESSAGE = "the MachineConfigPool counts as many degraded machines as the pool's Nodes show"
NAMES_SHOWN = 5  # degraded Nodes named in a message, at most


def machine_config_pool_view(mcp: Mapping[str, Any]) -> dict[str, Any]:
    """What a NodePool shows of its MachineConfigPool: the operator's counts, its
    configuration and its Updated, Updating and Degraded conditions, as written (a
    field the operator has not written is left out, a count is 0)."""
    status = mcp.get("status") or {}
    view: dict[str, Any] = {"name": str((mcp.get("metadata") or {}).get("name") or "")}
    configuration = (status.get("configuration") or {}).get("name")
    if configuration:
        view["configuration"] = str(configuration)
    for count in MCP_COUNTS:
        view[count] = _count(status.get(count))
    written = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    conditions = []
    for type_ in MCP_CONDITION_TYPES:
        found = written.get(type_)
        if found is None:
            continue
        condition = {"type": type_, "status": str(found.get("status") or "Unknown")}
        for field, limit in (("reason", REASON_MAX), ("message", MESSAGE_MAX)):
            if found.get(field):
                condition[field] = str(found[field])[:limit]
        if found.get("lastTransitionTime"):
            condition["lastTransitionTime"] = str(found["lastTransitionTime"])
        conditions.append(condition)
    if conditions:
        view["conditions"] = conditions
    return view


def _count(value: object) -> int:
    """A count as written: a whole number, else 0 (never negative)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return 0
    try:
        return max(0, int(value))
    except ValueError:
        return 0


def count_disagreement(
    ours: Mapping[str, Any], theirs: Mapping[str, Any], degraded_nodes: Sequence[str] = ()
) -> str:
    """How the MachineConfigPool's degraded count differs from the pool's Nodes (``ours``:
    the NodePool's counts; ``degraded_nodes``: the Nodes counted), both values named; ""
    when they agree."""
    counted, said = (
        _count(ours.get("degradedMachineCount")),
        _count(theirs.get("degradedMachineCount")),
    )
    if counted == said:
        return ""
    names = sorted(degraded_nodes)
    shown = ", ".join(names[:NAMES_SHOWN]) + (", …" if len(names) > NAMES_SHOWN else "")
    nodes = f" ({shown})" if shown else ""
    return (
        f"the MachineConfigPool {theirs.get('name', '')} counts {said} degraded "
        f"{_machines(said)}; the pool's Nodes show {counted}{nodes}"
    )


def _machines(count: int) -> str:
    return "machine" if count == 1 else "machines"


def sources_agree(
    apart: str,
    before: Mapping[str, Any] | None,
    apart_since: float | None,
    now: float,
    grace: float,
) -> tuple[dict[str, str], float | None]:
    """The NodePool's SourcesAgree condition, and in how many seconds to look again.

    ``apart`` is :func:`count_disagreement`'s message, ``before`` the condition written
    so far, ``apart_since`` when the difference was first seen. A difference is told
    once it has lasted ``grace`` (or at once if it was told already); until then the
    condition stays as it was (True when there was none), and the answer says when the
    grace ends. The transition time moves only with the status.
    """
    recheck = None
    if not apart:
        status, reason, message = "True", COUNTS_AGREE, AGREE_MESSAGE
    elif (before or {}).get("status") == "False" or now - (apart_since or now) >= grace:
        status, reason, message = "False", COUNTS_DISAGREE, apart
    elif before is not None:
        return dict(before), (apart_since or now) + grace - now
    else:
        status, reason, message = "True", COUNTS_AGREE, AGREE_MESSAGE
        recheck = (apart_since or now) + grace - now
    since = (before or {}).get("lastTransitionTime")
    if not since or (before or {}).get("status") != status:
        since = rfc3339(now)
    condition = {
        "type": SOURCES_AGREE,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    }
    return condition, recheck
