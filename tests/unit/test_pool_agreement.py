"""A MachineConfigPool's counts beside its Nodes': what the NodePool shows of it, when the
degraded counts disagree, and the grace before a difference is told."""

from __future__ import annotations

from typing import Any

from state_controller.api.nodepool import NodePoolStatus
from state_controller.api.timefmt import rfc3339
from state_controller.observability.pool_collector import PoolsCollector
from state_controller.updates.pool_agreement import (
    AGREE_MESSAGE,
    count_disagreement,
    machine_config_pool_view,
    sources_agree,
)

T0 = 1_700_000_000.0
GRACE = 120.0


def mcp(degraded: int = 0, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "worker"},
        "status": {
            "configuration": {"name": "rendered-worker-1a2b", "source": [{"name": "00-worker"}]},
            "machineCount": 3,
            "updatedMachineCount": 2,
            "readyMachineCount": 2,
            "unavailableMachineCount": 1,
            "degradedMachineCount": degraded,
            "conditions": [
                {"type": "Updated", "status": "False", "reason": "", "message": "",
                 "lastTransitionTime": "2026-11-25T10:00:00Z"},
                {"type": "Updating", "status": "True", "reason": "", "message": "rolling",
                 "lastTransitionTime": "2026-11-25T10:00:00Z"},
                {"type": "RenderDegraded", "status": "False", "reason": "", "message": "",
                 "lastTransitionTime": "2026-11-25T10:00:00Z"},
                {"type": "Degraded", "status": "False", "reason": "", "message": "",
                 "lastTransitionTime": None},
            ],
            **status,
        },
    }  # fmt: skip


def test_the_view_is_the_pools_counts_configuration_and_three_conditions() -> None:
    view = machine_config_pool_view(mcp(degraded=1))
    assert view == {
        "name": "worker",
        "configuration": "rendered-worker-1a2b",
        "machineCount": 3,
        "updatedMachineCount": 2,
        "readyMachineCount": 2,
        "unavailableMachineCount": 1,
        "degradedMachineCount": 1,
        "conditions": [
            {"type": "Updated", "status": "False", "lastTransitionTime": "2026-11-25T10:00:00Z"},
            {"type": "Updating", "status": "True", "message": "rolling",
             "lastTransitionTime": "2026-11-25T10:00:00Z"},
            {"type": "Degraded", "status": "False"},
        ],
    }  # fmt: skip
    NodePoolStatus.model_validate({"machineConfigPool": view})  # fits the API


def test_a_pool_the_operator_has_not_counted_yet_shows_zeros() -> None:
    view = machine_config_pool_view({"metadata": {"name": "infra"}})
    assert view == {
        "name": "infra",
        "machineCount": 0,
        "updatedMachineCount": 0,
        "readyMachineCount": 0,
        "unavailableMachineCount": 0,
        "degradedMachineCount": 0,
    }
    odd = machine_config_pool_view(mcp(degradedMachineCount=-2, machineCount="x"))
    assert (odd["degradedMachineCount"], odd["machineCount"]) == (0, 0)


def test_what_the_operator_wrote_at_length_is_cut_to_fit_the_nodepool() -> None:
    long = {"type": "Degraded", "status": "True", "reason": "R" * 5000, "message": "m" * 40000}
    view = machine_config_pool_view(mcp(conditions=[long]))
    (shown,) = view["conditions"]
    assert (len(shown["reason"]), len(shown["message"])) == (1024, 4096)
    NodePoolStatus.model_validate({"machineConfigPool": view})


def test_degraded_counts_that_match_agree() -> None:
    theirs = machine_config_pool_view(mcp(degraded=1))
    assert count_disagreement({"degradedMachineCount": 1}, theirs, ["w-0"]) == ""


def test_a_degraded_count_that_differs_names_both_values_and_the_nodes() -> None:
    theirs = machine_config_pool_view(mcp(degraded=0))
    told = count_disagreement({"degradedMachineCount": 2}, theirs, ["w-1", "w-0"])
    assert told == (
        "the MachineConfigPool worker counts 0 degraded machines; the pool's Nodes show 2 "
        "(w-0, w-1)"
    )
    theirs = machine_config_pool_view(mcp(degraded=1))
    told = count_disagreement({"degradedMachineCount": 0}, theirs)
    assert told == "the MachineConfigPool worker counts 1 degraded machine; the pool's Nodes show 0"


def test_many_degraded_nodes_are_named_up_to_five() -> None:
    theirs = machine_config_pool_view(mcp(degraded=0))
    nodes = [f"w-{i}" for i in range(7)]
    told = count_disagreement({"degradedMachineCount": 7}, theirs, nodes)
    assert told.endswith("show 7 (w-0, w-1, w-2, w-3, w-4, …)")


def test_updated_counts_that_differ_are_not_a_disagreement() -> None:
    """The operator counts against a target it knows before any Node is told."""
    theirs = machine_config_pool_view(mcp(degraded=0, updatedMachineCount=0))
    ours = {"updatedMachineCount": 3, "degradedMachineCount": 0}
    assert count_disagreement(ours, theirs) == ""


APART = "the MachineConfigPool worker counts 0 degraded machines; the pool's Nodes show 1"


def test_counts_that_agree_are_true_with_a_fixed_message() -> None:
    condition, recheck = sources_agree("", None, None, T0, GRACE)
    assert condition == {
        "type": "SourcesAgree",
        "status": "True",
        "reason": "PoolCountsAgree",
        "message": AGREE_MESSAGE,
        "lastTransitionTime": rfc3339(T0),
    }
    assert recheck is None


def test_a_difference_within_the_grace_is_not_told_and_is_looked_at_when_it_ends() -> None:
    agreed, _ = sources_agree("", None, None, T0, GRACE)
    condition, recheck = sources_agree(APART, agreed, T0 + 10, T0 + 30, GRACE)
    assert condition == agreed and recheck == 100
    fresh, recheck = sources_agree(APART, None, T0, T0, GRACE)  # nothing written yet
    assert (fresh["status"], recheck) == ("True", GRACE)


def test_a_difference_that_outlasts_the_grace_is_told_with_both_values() -> None:
    agreed, _ = sources_agree("", None, None, T0, GRACE)
    condition, recheck = sources_agree(APART, agreed, T0 + 10, T0 + 10 + GRACE, GRACE)
    assert condition == {
        "type": "SourcesAgree",
        "status": "False",
        "reason": "PoolCountsDisagree",
        "message": APART,
        "lastTransitionTime": rfc3339(T0 + 10 + GRACE),
    }
    assert recheck is None


def test_a_difference_told_stays_told_and_keeps_its_transition_time() -> None:
    told, _ = sources_agree(APART, None, T0, T0 + GRACE, GRACE)
    other = APART.replace("show 1", "show 2")
    # after a restart the grace would start again: what was told stays told
    again, recheck = sources_agree(other, told, T0 + 500, T0 + 501, GRACE)
    assert (again["status"], again["message"], recheck) == ("False", other, None)
    assert again["lastTransitionTime"] == told["lastTransitionTime"]


def test_counts_that_agree_again_clear_it_at_once() -> None:
    told, _ = sources_agree(APART, None, T0, T0 + GRACE, GRACE)
    cleared, recheck = sources_agree("", told, None, T0 + GRACE + 5, GRACE)
    assert (cleared["status"], cleared["reason"], recheck) == ("True", "PoolCountsAgree", None)
    assert cleared["lastTransitionTime"] == rfc3339(T0 + GRACE + 5)


def test_the_pool_series_is_one_per_pool_one_while_told() -> None:
    told, _ = sources_agree(APART, None, T0, T0 + GRACE, GRACE)
    agreed, _ = sources_agree("", None, None, T0, GRACE)
    pools: list[dict[str, Any]] = [
        {"metadata": {"name": "worker"}, "status": {"conditions": [told]}},
        {"metadata": {"name": "master"}, "status": {"conditions": [agreed]}},
        {"metadata": {"name": "infra"}},  # no MachineConfigPool: nothing compared, 0
    ]
    (family,) = [
        f
        for f in PoolsCollector(lambda: pools).collect()
        if f.name == "hoststate_nodepool_sources_disagree"
    ]
    assert {s.labels["pool"]: s.value for s in family.samples} == {
        "worker": 1,
        "master": 0,
        "infra": 0,
    }
