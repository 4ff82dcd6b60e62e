"""The demo's second half: a kubelet for every provisioned Host, then a rolling update.

:class:`Kubelets` registers a Node for each Host once it is provisioned
(linked to it by ``spec.providerID``), runs two pods on it and heartbeats
every 10 s, as a kubelet does; heartbeats must cost the controller nothing.

:class:`RollingUpdate` then plays an update agent that reports through the
``hoststate.io/`` annotations. Per pool it targets at most
``max_unavailable`` nodes at a time (a MachineConfigPool's ``maxUnavailable``)
and walks each through target → working → cordon → drain (pods evicted one by
one) → apply → reboot (a new boot ID, a new kubelet) → uncordon → done. It
never tells the controller a step: the controller reads every step from the
Node, as it would from a real agent.

Update faults (``--faults``) hold a node where operators meet them: a drain
blocked by a PodDisruptionBudget that allows no disruption, a reboot that
never comes back, an apply that degrades. Like the provisioning faults they
clear after ``hold`` seconds — the budget is raised, someone power-cycles the
machine, the agent retries — unless ``hold`` is None. A lost reboot also ends
when the machine is power-cycled through its BMC (``power_cycles``: the
controller's remediation does it through the simulated provisioner). A held node keeps its
slot, so the rollout of its pool waits behind it, as a MachineConfigPool's
does.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum

from ..cluster.interface import Cluster
from ..provisioning.simulated_machines import SLOW_MODEL, model_of
from ..updates.signals import (
    OWN_CURRENT_CONFIG,
    OWN_DESIRED_CONFIG,
    OWN_REASON,
    OWN_UPDATE_STATE,
)
from .nodes import SimulatedNode, UpdateFault, set_budget

ROLE = "node-role.kubernetes.io/"
KUBELET_BEFORE, KUBELET_AFTER = "v1.36.2", "v1.36.3"


FACTOR = {"factor": True}  # a timing that is a ratio, not seconds: no speed scales it


@dataclass(frozen=True)
class AgentTimings:
    """Seconds each action of the agent and the kubelet takes in the demo."""

    prepare: float = 0.4
    evict_every: float = 0.3
    apply: float = 0.8
    reboot: float = 1.2
    resume: float = 0.4
    heartbeat: float = 10.0
    # each action of each node takes its time times a factor drawn for it (log-normal, this
    # sigma; 0: exactly its time), as no two machines take the same time
    spread: float = field(default=0.25, metadata=FACTOR)
    # a SIM-1U machine's restarts take this many times as long
    slow_reboot: float = field(default=2.5, metadata=FACTOR)


def pool_for(index: int) -> str:
    """Every eighth host is an infrastructure node, the others are workers: two pools."""
    return "infra" if index % 8 == 7 else "worker"


def config_name(pool: str, generation: int) -> str:
    return f"rendered-{pool}-{generation}"


@dataclass
class Member:
    """A Node of the demo, with its pods and what the agent is doing to it."""

    node: SimulatedNode
    namespace: str
    pool: str
    fault: UpdateFault | None = None
    pods: list[str] = field(default_factory=list)
    phase: Phase | None = None  # None: not targeted yet
    due: float = 0.0  # when the agent acts on it next
    heartbeat_at: float = 0.0

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def budget(self) -> str:
        return f"{self.name}-db"


class Kubelets:
    """The Nodes of the provisioned hosts, registered one by one, heartbeating."""

    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        timings: AgentTimings,
        faults: dict[str, UpdateFault],
        clock: Callable[[], float],
    ) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.timings = timings
        self.faults = faults
        self.clock = clock
        self.members: dict[str, Member] = {}
        self.heartbeats = 0

    def register(self, host: str, index: int) -> Member:
        """The host booted its image: its kubelet registers the Node, pods land on it."""
        pool = pool_for(index)
        node = SimulatedNode(
            self.cluster,
            host,
            labels={ROLE + pool: ""},
            provider_id=f"metal3://{self.namespace}/{host}/{host}",
            kubelet_version=KUBELET_BEFORE,
        )
        node.register()
        first = config_name(pool, 1)
        node.annotate(
            {OWN_DESIRED_CONFIG: first, OWN_CURRENT_CONFIG: first, OWN_UPDATE_STATE: "Done"}
        )
        member = Member(node, self.namespace, pool, self.faults.get(host))
        # spread the heartbeats over the period, as kubelets started at different times do
        member.heartbeat_at = self.clock() + self.timings.heartbeat * (index % 10 + 1) / 10
        self.run_pods(member)
        self.members[host] = member
        return member

    def run_pods(self, member: Member) -> None:
        member.pods = [f"{member.name}-web-{i}" for i in range(2)]
        for pod in member.pods:
            member.node.run_pod(self.namespace, pod, {"app": "web"})
        if member.fault == UpdateFault.DRAIN_BLOCKED:
            db = f"{member.name}-db"
            member.node.run_pod(self.namespace, db, {"app": db})
            member.pods.append(db)
            set_budget(self.cluster, self.namespace, member.budget, {"app": db}, allowed=0)

    def heartbeat(self, now: float) -> None:
        for member in self.members.values():
            if member.node.ready and now >= member.heartbeat_at:
                member.node.heartbeat()
                member.heartbeat_at = now + self.timings.heartbeat
                self.heartbeats += 1


class Phase(Enum):
    """What the agent does to a node next (the controller never reads this)."""

    TARGETED = "targeted"
    WORKING = "working"
    DRAINING = "draining"
    APPLYING = "applying"
    DEGRADED = "degraded"
    REBOOTING = "rebooting"
    RESUMING = "resuming"
    DONE = "done"


class RollingUpdate:
    """Every Node of every pool to its next configuration, ``max_unavailable`` at a time."""

    def __init__(
        self,
        kubelets: Kubelets,
        *,
        max_unavailable: int,
        hold: float | None,
        power_cycles: Callable[[str], int] | None = None,
    ) -> None:
        self.kubelets = kubelets
        self.max_unavailable = max_unavailable
        self.hold = hold  # seconds a fault holds a node; None: for good
        self.held_since: dict[str, float] = {}
        self.started = False
        # the hard reboots of a host's machine so far (its BMC's), when they can be read:
        # a power-cycle brings back a machine whose reboot was lost, as a real one would
        self.power_cycles = power_cycles
        self.cycles_at_down: dict[str, int] = {}

    @property
    def members(self) -> Iterable[Member]:
        return self.kubelets.members.values()

    def start(self) -> None:
        self.started = True

    def done(self) -> bool:
        return self.started and all(m.phase == Phase.DONE for m in self.members)

    def tick(self, now: float) -> None:
        if not self.started:
            return
        for pool in sorted({m.pool for m in self.members}):
            members = sorted((m for m in self.members if m.pool == pool), key=lambda m: m.name)
            busy = sum(1 for m in members if m.phase not in (None, Phase.DONE))
            for member in members:
                if member.phase is None and busy < self.max_unavailable:
                    self._target(member, now)
                    busy += 1
                elif member.phase not in (None, Phase.DONE) and now >= member.due:
                    self._act(member, now)

    # -- one node, one action at a time ---------------------------------------------------

    def _target(self, member: Member, now: float) -> None:
        member.node.annotate({OWN_DESIRED_CONFIG: config_name(member.pool, 2)})
        self._next(member, Phase.TARGETED, now, self.kubelets.timings.prepare / 2)

    def _act(self, member: Member, now: float) -> None:
        node, timings = member.node, self.kubelets.timings
        match member.phase:
            case Phase.TARGETED:
                node.annotate({OWN_UPDATE_STATE: "Working"})
                self._next(member, Phase.WORKING, now, timings.prepare)
            case Phase.WORKING:
                node.cordon()
                self._next(member, Phase.DRAINING, now, timings.evict_every)
            case Phase.DRAINING:
                self._evict_one(member, now)
            case Phase.APPLYING:
                if member.fault == UpdateFault.APPLY_DEGRADED and self._held(member, now):
                    node.annotate(
                        {
                            OWN_UPDATE_STATE: "Degraded",
                            OWN_REASON: "writing /etc/containers/registries.conf: "
                            "no space left on device",
                        }
                    )
                    self._next(member, Phase.DEGRADED, now, self._remaining(member, now))
                    return
                node.go_down()
                if self.power_cycles is not None:
                    self.cycles_at_down[member.name] = self.power_cycles(member.name)
                self._next(member, Phase.REBOOTING, now, timings.reboot)
            case Phase.DEGRADED:
                node.annotate({OWN_UPDATE_STATE: "Working", OWN_REASON: None})  # a retry
                self._next(member, Phase.APPLYING, now, timings.apply)
            case Phase.REBOOTING:
                lost = member.fault == UpdateFault.REBOOT_LOST and self._held(member, now)
                if lost and not self._power_cycled(member):
                    # looked at again soon when a power-cycle may bring it back
                    again = self._remaining(member, now)
                    if self.power_cycles is not None:
                        again = min(again, timings.reboot)
                    self._next(member, Phase.REBOOTING, now, again)
                    return
                node.come_back(kubelet_version=KUBELET_AFTER)
                self._next(member, Phase.RESUMING, now, timings.resume)
            case Phase.RESUMING:
                node.cordon(False)
                target = config_name(member.pool, 2)
                node.annotate({OWN_CURRENT_CONFIG: target, OWN_UPDATE_STATE: "Done"})
                self.kubelets.run_pods(member)  # the scheduler brings work back
                self._next(member, Phase.DONE, now, 0.0)

    def _evict_one(self, member: Member, now: float) -> None:
        timings = self.kubelets.timings
        evictable = [p for p in member.pods if p != member.budget]
        if not evictable and member.budget in member.pods:
            if self._held(member, now):  # the budget allows no disruption: wait
                member.due = now + min(timings.evict_every, self._remaining(member, now))
                return
            # the owner of the budget scaled up, the disruption controller allows one
            labels = {"app": member.budget}
            set_budget(self.kubelets.cluster, member.namespace, member.budget, labels, allowed=1)
            evictable = [member.budget]
        if evictable:
            member.node.evict(member.namespace, evictable[0])
            member.pods.remove(evictable[0])
            member.due = now + timings.evict_every
            return
        self._next(member, Phase.APPLYING, now, timings.apply)

    def _power_cycled(self, member: Member) -> bool:
        """Whether the machine was power-cycled through its BMC since it went down."""
        if self.power_cycles is None:
            return False
        return self.power_cycles(member.name) > self.cycles_at_down.get(member.name, 0)

    def _held(self, member: Member, now: float) -> bool:
        """Whether the node's fault still holds it (and from now on, if it just began)."""
        since = self.held_since.setdefault(member.name, now)
        return self.hold is None or now < since + self.hold

    def _remaining(self, member: Member, now: float) -> float:
        if self.hold is None:
            return 1.0  # looked at again every second, for ever
        return max(self.held_since[member.name] + self.hold - now, 0.0) + 0.01

    def _next(self, member: Member, phase: Phase, now: float, after: float) -> None:
        timings = self.kubelets.timings
        restart = phase == Phase.REBOOTING and member.phase != Phase.REBOOTING
        if restart and model_of(member.name) == SLOW_MODEL:  # not a lost one's next look
            after *= timings.slow_reboot
        if timings.spread and after:
            draw = random.Random(f"{member.name}:{phase.value}:{now:.0f}")
            after *= draw.lognormvariate(0.0, timings.spread)
        member.phase, member.due = phase, now + after


def choose_faults(
    hosts: list[str], rate: float, kinds: tuple[UpdateFault, ...], seed: int
) -> dict[str, UpdateFault]:
    """A third of ``rate`` of the hosts get an update fault, the kinds taken in turn."""
    if not kinds or rate <= 0:
        return {}
    count = max(1, round(len(hosts) * rate / 3))
    chosen = random.Random(seed).sample(sorted(hosts), min(count, len(hosts)))
    return {host: kinds[i % len(kinds)] for i, host in enumerate(sorted(chosen))}
