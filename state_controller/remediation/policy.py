"""Whether to power-cycle a machine whose Node did not come back, decided as a pure function.

A Node is *unhealthy* for remediation when its update stopped in the ``rebooting`` step
(the reboot was asked for and the Node never returned), or when it has been NotReady
for longer than :attr:`RemediationPolicy.not_ready_after`. Its Host is then power-cycled
through its BMC, at most :attr:`RemediationPolicy.max_attempts` times, each attempt
waiting longer than the one before (:meth:`RemediationPolicy.wait_before`).

Nothing is done (:data:`HELD`) while more than :attr:`RemediationPolicy.max_unhealthy`
of the pool is unhealthy: when many machines fail at once the fault is rarely the
machines (a switch, the API server, a bad update), and power-cycling them all makes it
worse. This is Cluster API's MachineHealthCheck rule (``maxUnhealthy``): the count is
compared with the share of the pool, rounded down, and above it every remediation of the
pool waits until the count falls back.

A host is never touched (:data:`BLOCKED`) while something else holds it: paused,
detached, being deleted or serviced, not provisioned, or with a BMC that itself fails
(power-cycling through a BMC that does not answer only adds failures).

No clock is read and nothing is written here: the caller passes the instant and the
host's record of attempts, and turns the :class:`Verdict` into a book record, an Event
and a metric. A verdict's words do not depend on the instant (a countdown would change
the HostState's status at every look); when to look again is ``Verdict.retry_at``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from ..books.stuck import human_duration


class Trouble(StrEnum):
    """Why a Node counts as unhealthy."""

    REBOOT_LOST = "RebootLost"  # its update is stuck in the rebooting step
    NOT_READY = "NotReady"  # NotReady for longer than the policy allows


class Action(StrEnum):
    HEALTHY = "Healthy"  # nothing wrong: any earlier attempts are forgotten
    WAIT = "Wait"  # unhealthy, but not for long enough yet, or an attempt is settling
    POWER_CYCLE = "PowerCycle"  # power-cycle now (attempt ``Verdict.attempt``)
    HELD = "Held"  # too much of the pool is unhealthy: nothing is done anywhere in it
    BLOCKED = "Blocked"  # something else holds the host
    EXHAUSTED = "Exhausted"  # every attempt was made; a person must look


@dataclass(frozen=True)
class RemediationPolicy:
    """One pool's remediation settings (or every pool's)."""

    not_ready_after: float = 300.0  # seconds NotReady before a Node counts as unhealthy
    max_attempts: int = 3
    first_wait: float = 300.0  # seconds after an attempt before the next may start
    max_wait: float = 3600.0  # the longest wait between attempts
    max_unhealthy: float = 0.4  # share of the pool; above it, the pool is held

    def wait_before(self, attempt: int) -> float:
        """Seconds after attempt ``attempt - 1`` before attempt ``attempt`` (2, 3, …)."""
        return min(self.first_wait * 2.0 ** max(attempt - 2, 0), self.max_wait)

    def unhealthy_allowed(self, pool_size: int) -> int:
        """How many unhealthy machines the pool may have for remediation to go on."""
        return math.floor(self.max_unhealthy * pool_size + 1e-9)


@dataclass(frozen=True)
class HostSituation:
    """What the caller knows of one machine at ``now``."""

    trouble: Trouble | None  # None: the Node is healthy
    trouble_since: float | None = None  # when the Node went NotReady, or entered rebooting
    blocked_by: str = ""  # "paused", "detached", "deleting", "servicing", "BMC failing", …
    attempts: int = 0  # power-cycles made for this trouble
    last_attempt_at: float | None = None


@dataclass(frozen=True)
class PoolHealth:
    size: int
    unhealthy: int


@dataclass(frozen=True)
class Verdict:
    action: Action
    why: str
    attempt: int = 0  # for POWER_CYCLE: which attempt this is (1-based)
    retry_at: float | None = None  # for WAIT: when to look again


def decide(policy: RemediationPolicy, host: HostSituation, pool: PoolHealth, now: float) -> Verdict:
    """What to do about one machine now."""
    if host.trouble is None:
        return Verdict(Action.HEALTHY, "the Node is healthy")
    if host.blocked_by:
        return Verdict(Action.BLOCKED, f"not remediated while the host is {host.blocked_by}")
    since = host.trouble_since if host.trouble_since is not None else now
    if host.trouble is Trouble.NOT_READY and now < since + policy.not_ready_after:
        return Verdict(
            Action.WAIT,
            f"NotReady; power-cycled if it still is after {human_duration(policy.not_ready_after)}",
            retry_at=since + policy.not_ready_after,
        )
    if host.attempts >= policy.max_attempts:
        return Verdict(
            Action.EXHAUSTED,
            f"power-cycled {_times(host.attempts)} and still {host.trouble.value}; "
            "look at the machine",
        )
    allowed = policy.unhealthy_allowed(pool.size)
    if pool.unhealthy > allowed:
        return Verdict(
            Action.HELD,
            f"{pool.unhealthy} of the pool's {pool.size} machines are unhealthy, more than "
            f"the {allowed} remediation allows ({policy.max_unhealthy:.0%}); "
            "nothing is power-cycled until fewer are",
        )
    attempt = host.attempts + 1
    if host.last_attempt_at is not None:
        due = host.last_attempt_at + policy.wait_before(attempt)
        if now < due:
            return Verdict(
                Action.WAIT,
                f"power-cycled {host.attempts} of {policy.max_attempts} times; the next "
                f"attempt waits {human_duration(policy.wait_before(attempt))} after the last",
                retry_at=due,
            )
    return Verdict(
        Action.POWER_CYCLE,
        f"{host.trouble.value}: power-cycling through the BMC, attempt {attempt} of "
        f"{policy.max_attempts}",
        attempt=attempt,
    )


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"
