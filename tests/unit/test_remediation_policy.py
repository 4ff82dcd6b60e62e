"""The remediation decision: when a machine is power-cycled, and when it is left alone."""

from __future__ import annotations

import pytest

from state_controller.remediation.policy import (
    Action,
    HostSituation,
    PoolHealth,
    RemediationPolicy,
    Trouble,
    decide,
)

POLICY = RemediationPolicy(
    not_ready_after=300, max_attempts=3, first_wait=60, max_wait=200, max_unhealthy=0.2
)
POOL = PoolHealth(size=100, unhealthy=1)


def test_a_healthy_node_and_a_short_not_ready_are_left_alone() -> None:
    assert decide(POLICY, HostSituation(None), POOL, 1000).action is Action.HEALTHY
    short = HostSituation(Trouble.NOT_READY, trouble_since=900)
    verdict = decide(POLICY, short, POOL, 1000)
    assert verdict.action is Action.WAIT and verdict.retry_at == 1200
    assert verdict.why == "NotReady; power-cycled if it still is after 5m0s"
    assert decide(POLICY, short, POOL, 1100).why == verdict.why  # no countdown in the words


def test_a_lost_reboot_is_power_cycled_at_once_then_again_after_a_growing_wait() -> None:
    lost = HostSituation(Trouble.REBOOT_LOST, trouble_since=990)
    first = decide(POLICY, lost, POOL, 1000)
    assert (first.action, first.attempt) == (Action.POWER_CYCLE, 1)
    after_one = HostSituation(Trouble.REBOOT_LOST, 990, attempts=1, last_attempt_at=1000)
    assert decide(POLICY, after_one, POOL, 1059).action is Action.WAIT
    assert decide(POLICY, after_one, POOL, 1060).attempt == 2
    after_two = HostSituation(Trouble.REBOOT_LOST, 990, attempts=2, last_attempt_at=2000)
    waiting = decide(POLICY, after_two, POOL, 2100)
    assert waiting.action is Action.WAIT and waiting.retry_at == 2120  # 60 s, then 120 s
    assert [POLICY.wait_before(n) for n in (2, 3, 4, 5)] == [60, 120, 200, 200]  # capped


def test_retries_are_bounded() -> None:
    spent = HostSituation(Trouble.REBOOT_LOST, 0, attempts=3, last_attempt_at=10)
    verdict = decide(POLICY, spent, POOL, 10_000)
    assert verdict.action is Action.EXHAUSTED
    assert verdict.why.startswith("power-cycled 3 times and still RebootLost")


@pytest.mark.parametrize(("unhealthy", "action"), [(20, Action.POWER_CYCLE), (21, Action.HELD)])
def test_nothing_is_done_while_more_of_the_pool_than_allowed_is_unhealthy(
    unhealthy: int, action: Action
) -> None:
    lost = HostSituation(Trouble.REBOOT_LOST, trouble_since=0)
    assert decide(POLICY, lost, PoolHealth(100, unhealthy), 10).action is action


def test_a_small_pool_rounds_the_share_down() -> None:
    assert POLICY.unhealthy_allowed(4) == 0  # 20 % of 4 machines: none may be remediated
    assert POLICY.unhealthy_allowed(5) == 1
    assert RemediationPolicy(max_unhealthy=0.4).unhealthy_allowed(10) == 4


@pytest.mark.parametrize("holder", ["paused", "detached", "deleting", "servicing", "BMC failing"])
def test_a_host_held_by_something_else_is_never_touched(holder: str) -> None:
    lost = HostSituation(Trouble.REBOOT_LOST, trouble_since=0, blocked_by=holder)
    verdict = decide(POLICY, lost, POOL, 10_000)
    assert verdict.action is Action.BLOCKED and holder in verdict.why
