"""What ``benchmarks.soak`` plays on the control plane: a fleet of Hosts churning (the
oldest at rest deleted, its Node, pods and Secret after it, a new one created), a kubelet
for each provisioned host (a Node linked by ``spec.providerID``, two pods, heartbeats),
and an update agent walking the Nodes to their next configuration in waves."""

from __future__ import annotations

import argparse
import contextlib
import random
import time
from collections import Counter
from dataclasses import dataclass, field

from state_controller.cluster.interface import (
    HOSTS,
    SECRETS,
    AlreadyExists,
    NotFound,
    Resource,
)
from state_controller.cluster.kube import KubeCluster
from state_controller.simulation.fleet import host_manifest, secret_manifest
from state_controller.simulation.nodes import SimulatedNode
from state_controller.simulation.rollout import ROLE, config_name, pool_for
from state_controller.updates.signals import (
    OWN_CURRENT_CONFIG,
    OWN_DESIRED_CONFIG,
    OWN_UPDATE_STATE,
)

NS = "fleet"
STATE_NS = "hoststate-system"
SERVICE_ACCOUNTS = Resource("", "v1", "ServiceAccount", "serviceaccounts", has_status=False)


# -- the world: fleet churn, kubelets, the update agent ----------------------------------


@dataclass
class Node:
    """A provisioned host's Node and what the agent does to it."""

    node: SimulatedNode
    pool: str
    generation: int
    phase: str = "done"  # done, targeted, working, draining, applying, rebooting, resuming
    due: float = 0.0
    quiet_since: float = 0.0  # the last time the agent acted on it
    pods: list[str] = field(default_factory=list)
    heartbeat_at: float = 0.0


class World:
    """Everything a person, kubelets and an update agent do to the cluster, one tick at a
    time from one thread; a call that fails (the API server restarting) is made again at
    a later tick."""

    STEPS = {
        "targeted": 0.5,
        "working": 0.5,
        "draining": 0.5,
        "applying": 1.0,
        "rebooting": 1.5,
        "resuming": 0.5,
    }

    def __init__(self, kube: KubeCluster, args: argparse.Namespace, rng: random.Random) -> None:
        self.kube, self.args, self.rng = kube, args, rng
        self.next_index = 0
        self.hosts: dict[str, int] = {}  # live host name -> index, oldest first
        self.deleting: dict[str, float] = {}  # host deleted, its Secret still there
        self.nodes: dict[str, Node] = {}
        self.generation = {"worker": 1, "infra": 1}
        self.waves = 0
        self.wave_at = time.monotonic() + args.wave_every
        self.churn_at = time.monotonic() + args.churn_every
        self.updates_started: Counter[str] = Counter()  # per host
        self.updates_done: Counter[str] = Counter()
        self.deleted_hosts = 0
        self.errors = 0
        self.churning = True

    def fill(self) -> None:
        """New hosts, each with a new machine, up to the fleet's size (one that failed
        half-way is made again with the same index)."""
        while len(self.hosts) < self.args.hosts:
            index = self.next_index
            host = host_manifest(NS, index)
            name = host["metadata"]["name"]
            secret = secret_manifest(NS, f"{name}-bmc", "admin", f"pw-{index}")
            for resource, obj in ((SECRETS, secret), (HOSTS, host)):
                with contextlib.suppress(AlreadyExists):
                    self.kube.create(resource, obj)
            self.hosts[name] = index
            self.next_index += 1

    def tick(self, now: float) -> None:
        try:
            self.fill()
            states = self.host_states()
            self.register_nodes(states, now)
            self.heartbeat(now)
            if self.churning and now >= self.wave_at and self.all_done():
                self.start_wave(now)
            self.walk(now)
            if self.churning and now >= self.churn_at:
                self.churn(states, now)
            self.forget_secrets(states)
        except Exception as err:  # the API server restarting: again at the next tick
            self.errors += 1
            if self.errors % 50 == 1:
                print(f"  (world: {type(err).__name__}: {str(err)[:100]})", flush=True)
            time.sleep(1.0)

    def host_states(self) -> dict[str, str]:
        return {
            h["metadata"]["name"]: ((h.get("status") or {}).get("provisioning") or {}).get(
                "state", ""
            )
            for h in self.kube.list(HOSTS, NS)[0]
        }

    def register_nodes(self, states: dict[str, str], now: float) -> None:
        for name, index in list(self.hosts.items()):
            if name in self.nodes or states.get(name) != "provisioned":
                continue
            pool = pool_for(index)
            sim = SimulatedNode(
                self.kube,
                name,
                labels={ROLE + pool: ""},
                provider_id=f"metal3://{NS}/{name}/{name}",
            )
            with contextlib.suppress(AlreadyExists):
                sim.register()
            gen = self.generation[pool]
            config = config_name(pool, gen)
            sim.annotate(
                {OWN_DESIRED_CONFIG: config, OWN_CURRENT_CONFIG: config, OWN_UPDATE_STATE: "Done"}
            )
            node = Node(sim, pool, gen, quiet_since=now, heartbeat_at=now + 10 * self.rng.random())
            self.run_pods(node)
            self.nodes[name] = node

    def run_pods(self, node: Node) -> None:
        node.pods = [f"{node.node.name}-web-{i}" for i in range(2)]
        for pod in node.pods:
            with contextlib.suppress(AlreadyExists):
                node.node.run_pod(NS, pod, {"app": "web"})

    def heartbeat(self, now: float) -> None:
        for node in self.nodes.values():
            if node.node.ready and now >= node.heartbeat_at:
                node.node.heartbeat()
                node.heartbeat_at = now + 10.0

    def all_done(self) -> bool:
        return all(n.phase == "done" for n in self.nodes.values())

    def start_wave(self, now: float) -> None:
        self.waves += 1
        for pool in self.generation:
            self.generation[pool] += 1
        self.wave_at = now + self.args.wave_every
        print(
            f"  wave {self.waves}: {len(self.nodes)} nodes to their next configuration", flush=True
        )

    def walk(self, now: float) -> None:
        """Each pool's nodes to its generation, ``--max-unavailable`` at a time."""
        for pool, gen in self.generation.items():
            members = sorted(
                (n for n in self.nodes.values() if n.pool == pool), key=lambda n: n.node.name
            )
            busy = sum(1 for n in members if n.phase != "done")
            for node in members:
                if node.phase == "done" and node.generation < gen:
                    if busy < self.args.max_unavailable:
                        node.node.annotate({OWN_DESIRED_CONFIG: config_name(pool, gen)})
                        self.updates_started[node.node.name] += 1
                        self.step(node, "targeted", now)
                        busy += 1
                elif node.phase != "done" and now >= node.due:
                    self.act(node, pool, gen, now)

    def step(self, node: Node, phase: str, now: float) -> None:
        node.phase, node.quiet_since = phase, now
        node.due = now + self.STEPS.get(phase, 0.0)

    def act(self, node: Node, pool: str, gen: int, now: float) -> None:
        sim = node.node
        match node.phase:
            case "targeted":
                sim.annotate({OWN_UPDATE_STATE: "Working"})
                self.step(node, "working", now)
            case "working":
                sim.cordon()
                self.step(node, "draining", now)
            case "draining":
                if node.pods:
                    sim.evict(NS, node.pods[0])
                    node.pods.pop(0)
                    node.due = now + self.STEPS["draining"]
                else:
                    self.step(node, "applying", now)
            case "applying":
                sim.go_down()
                self.step(node, "rebooting", now)
            case "rebooting":
                sim.come_back()
                self.step(node, "resuming", now)
            case "resuming":
                sim.cordon(False)
                config = config_name(pool, gen)
                sim.annotate({OWN_CURRENT_CONFIG: config, OWN_UPDATE_STATE: "Done"})
                self.run_pods(node)
                node.generation = gen
                self.updates_done[sim.name] += 1
                self.step(node, "done", now)

    def churn(self, states: dict[str, str], now: float) -> None:
        """The oldest provisioned host whose Node rests (15 s since the agent's last act)."""
        for name in list(self.hosts):
            node = self.nodes.get(name)
            if states.get(name) != "provisioned" or node is None:
                continue
            if node.phase != "done" or now - node.quiet_since < 15.0:
                continue
            for pod in node.pods:
                node.node.evict(NS, pod)
            node.node.delete()
            with contextlib.suppress(NotFound):
                self.kube.delete(HOSTS, NS, name)
            del self.nodes[name], self.hosts[name]
            self.deleting[name] = now
            self.deleted_hosts += 1
            break
        self.churn_at = now + self.args.churn_every

    def forget_secrets(self, live: dict[str, str]) -> None:
        """A deleted host's Secret once the host is gone (deprovisioning needs it)."""
        for name in [n for n in self.deleting if n not in live]:
            with contextlib.suppress(NotFound):
                self.kube.delete(SECRETS, NS, f"{name}-bmc")
            del self.deleting[name]
