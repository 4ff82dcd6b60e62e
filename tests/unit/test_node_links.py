"""A Node's ``hoststate.io/host`` label links it to one Host of one namespace, or none.

A Host's name is anyone's to give: a name alone must never link a Node to a tenant's
Host of that name in another namespace, whichever replica asks and whenever the
operator's Host is away (deleted to be created again). A kubelet may write its own
Node's labels, so a Node its label moved to another Host does not get that Host
power-cycled."""

from __future__ import annotations

from typing import Any, cast

from state_controller.api.states import ProvisioningState
from state_controller.books.book import Book
from state_controller.books.journal import Notice
from state_controller.remediation.policy import Action, RemediationPolicy
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.hosts.remediator import Remediator
from state_controller.runtime.indexes.nodes import NodeIndex
from state_controller.runtime.nodes.reconciler import LINK_DOUBTED, LINK_REFUSED, NodeFollower
from state_controller.updates.adapters.base import DrainStatus
from testbed.clocks import T0

OPERATOR, TENANT = "metal/worker-3", "team-0/worker-3"


def labelled(host: str, namespace: str = "", *, ready: str = "True") -> dict[str, Any]:
    labels = {"node-role.kubernetes.io/worker": "", "hoststate.io/host": host}
    if namespace:
        labels["hoststate.io/host-namespace"] = namespace
    return {
        "metadata": {"name": "n-3", "uid": "u-3", "labels": labels},
        "spec": {},  # no providerID: the label is all it says
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


class Hosts:
    """The Hosts one controller (or one shard) knows, by name."""

    def __init__(self, *keys: str) -> None:
        self.keys = set(keys)

    def named(self, name: str) -> list[str]:
        return sorted(k for k in self.keys if k.partition("/")[2] == name)


def test_a_bare_name_links_no_node_to_a_host_of_another_namespace() -> None:
    hosts = Hosts(OPERATOR, TENANT)
    index = NodeIndex(hosts.named)
    index.observe("n-3", labelled("worker-3"))
    assert index.key_of("n-3") == "node:n-3"  # several namespaces watched: a name is nothing
    problem = index.link_problem("n-3")
    assert problem.startswith("metadata.labels[\"hoststate.io/host\"]: 'worker-3' names a Host")
    assert "hoststate.io/host-namespace=" in problem  # the fix

    # the operator's Host deleted to be created again: the tenant's does not take the Node
    hosts.keys.discard(OPERATOR)
    index.relink("worker-3")
    assert index.key_of("n-3") == "node:n-3"


def test_a_namespaced_link_holds_while_its_host_is_away_and_comes_back_to_it() -> None:
    hosts = Hosts(OPERATOR, TENANT)
    index = NodeIndex(hosts.named)
    index.observe("n-3", labelled("worker-3", "metal"))
    assert index.key_of("n-3") == OPERATOR and index.link_problem("n-3") == ""
    hosts.keys.discard(OPERATOR)
    assert index.relink("worker-3") == {OPERATOR, "node:n-3"}
    assert index.key_of("n-3") == "node:n-3"  # followed on its own meanwhile, not the tenant's
    hosts.keys.add(OPERATOR)
    index.relink("worker-3")
    assert index.key_of("n-3") == OPERATOR


def test_a_bare_name_means_the_one_watched_namespace() -> None:
    hosts = Hosts(OPERATOR, TENANT)
    index = NodeIndex(hosts.named, watched=("metal",))
    index.observe("n-3", labelled("worker-3"))
    assert index.key_of("n-3") == OPERATOR and index.link_problem("n-3") == ""
    hosts.keys.discard(OPERATOR)
    index.relink("worker-3")
    assert index.key_of("n-3") == "node:n-3"


def test_two_shards_never_both_claim_a_node() -> None:
    """Sharded, each replica knows only its own Hosts: the operator's on one, the tenant's
    on the other. Both read the same label; at most one finds its Host in it."""
    for node in (labelled("worker-3"), labelled("worker-3", "metal")):
        for watched in (None, ("metal",)):
            claims = []
            for shard in (Hosts(OPERATOR), Hosts(TENANT)):
                index = NodeIndex(shard.named, watched=watched)
                index.observe("n-3", node)
                claims.append(index.key_of("n-3"))
            assert TENANT not in claims, (node, watched, claims)
            assert claims.count(OPERATOR) <= 1


def test_a_node_its_label_moved_to_another_host_does_not_get_that_host_power_cycled() -> None:
    victim = "metal/worker-9"
    hosts = Hosts(OPERATOR, victim)
    index = NodeIndex(hosts.named, watched=("metal",))
    index.observe("n-3", labelled("worker-3"))
    assert index.key_of("n-3") == OPERATOR and index.link_doubt("n-3") == ""

    # root on n-3 points its own Node at another Host, then stops its kubelet
    index.observe("n-3", labelled("worker-9", ready="False"))
    assert index.key_of("n-3") == victim
    doubt = index.link_doubt("n-3")
    assert "from 'worker-3' to 'worker-9'" in doubt and "spec.providerID" in doubt

    config = ControllerConfig(remediation=RemediationPolicy(not_ready_after=60))
    book = Book(victim, now=T0)
    book.move(ProvisioningState.PROVISIONED, now=T0 + 1, reason="ProvisioningComplete")
    book.note(now=T0 + 2, node="n-3", powered_on=True)
    node = index.node_on(victim)
    assert node is not None
    verdict = Remediator(config, index).consider(book, node, deleting=False, now=T0 + 3600)
    assert verdict is not None and verdict.action is Action.BLOCKED
    assert "hoststate.io/host label, which changed" in verdict.why
    assert book.facts.remediation is not None  # shown in the HostState's status

    index.observe("n-3", labelled("worker-3", ready="False"))  # the label set back
    assert index.key_of("n-3") == OPERATOR and index.link_doubt("n-3") == ""


class NoDrains:
    def status(self, node: str) -> DrainStatus:
        return DrainStatus()


def warnings(book: Book) -> list[str]:
    entries, _ = book.journal.since(0)
    return [e.reason for e in entries if isinstance(e, Notice) and e.type == "Warning"]


def test_a_refused_or_doubted_link_is_told_once_as_a_warning() -> None:
    hosts = Hosts(OPERATOR, "metal/worker-9")
    index = NodeIndex(hosts.named)
    follower = NodeFollower(index, cast(Any, NoDrains()))
    own = Book("hoststate-system/n-3", now=T0, node_only=True)
    index.observe("n-3", labelled("worker-3"))
    for at in (1, 2):
        follower.follow(own, index.unlinked("n-3"), T0 + at)
    assert warnings(own) == [LINK_REFUSED]

    index.observe("n-3", labelled("worker-3", "metal"))
    index.observe("n-3", labelled("worker-9", "metal"))
    victim = Book("metal/worker-9", now=T0)
    for at in (3, 4):
        follower.follow(victim, index.node_on("metal/worker-9"), T0 + at)
    assert warnings(victim) == [LINK_DOUBTED]
