"""What every operation on an Ironic node shares: the settings of the nodes this
controller creates, what it remembers between polls, and the steps each operation is
built from (find the node, create it, ask for a provision target, report a failed state).

One :class:`NodeWork` per endpoint, shared by all hosts and owned by
:class:`~.provisioner.IronicProvisioner`; the operations (:mod:`.enrolling`,
:mod:`.deploying`, :mod:`.powering`) are functions of it and of one :class:`~.attempt.Attempt`.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any, NoReturn

from ..provisioner import HostView
from ..results import Result, complete, continuing, failed, retry_after
from .attempt import Attempt
from .faults import Answer
from .memory import Memory
from .nodes import (
    Node,
    NodeOverrides,
    config_drive,
    custom_deploy_steps,
    deploy_patch,
    new_node,
    node_name,
    unsupported_node_fields,
)
from .states import FailedStates, wait_out_maintenance


class NodeWork:
    """The steps of the operations, and what they share between calls and hosts.

    ``driver``, ``interfaces`` and ``node_overrides`` shape the nodes created (see
    :class:`~.provisioner.IronicProvisioner`); ``actions`` counts the provision and power
    targets Ironic accepted, per node; ``fresh_for`` is how long a node read serves the
    next call on the same host, ``reason_grace`` how long a failed state without a reason
    waits for one.
    """

    def __init__(
        self,
        *,
        driver: str | None,
        interfaces: Mapping[str, Any],
        node_overrides: NodeOverrides | None,
        poll_delay: float,
        fresh_for: float,
        reason_grace: float,
    ) -> None:
        self.driver = driver
        self.interfaces = dict(interfaces)
        self.node_overrides = node_overrides
        self.poll_delay = poll_delay
        self.fresh_for = fresh_for
        self.reason_grace = reason_grace
        self.actions: Counter[tuple[str, str]] = Counter()
        self._actions_lock = threading.Lock()
        self.memory = Memory()
        self.failures = FailedStates()

    def create(self, at: Attempt) -> Node:
        unsupported = unsupported_node_fields(at.host, at.client.version())
        if unsupported:
            raise Answer(failed(unsupported))
        body = new_node(
            at.host, driver=self.driver, interfaces=self.interfaces, overrides=self.node_overrides
        )
        node = at.create(body)
        self.memory.remember_credentials(node["uuid"], at.host)
        at.ensure_port(node, known_empty=True)
        return node

    def deploy(self, at: Attempt, node: Node) -> Result:
        self.write_deploy_info(at, node)
        return self.started(at, node, "active")

    def write_deploy_info(self, at: Attempt, node: Node) -> None:
        wait_out_maintenance(node)  # before writing: else every retry would write again
        ops = deploy_patch(
            at.host,
            deploy_interface=node.get("deploy_interface"),
            configured=self.configured(at.host, "deploy_interface"),
        )
        if ops:
            at.patch(node, ops)

    def configured(self, host: HostView, field: str) -> str | None:
        """The value this provisioner gives ``field`` of the host's new node, if any."""
        fields = {**self.interfaces, **(self.node_overrides(host) if self.node_overrides else {})}
        return str(fields[field]) if fields.get(field) else None

    def started(self, at: Attempt, node: Node, target: str) -> Result:
        drive = steps = None
        if target in ("active", "rebuild"):
            drive = config_drive(at.host, at.client.version())
            steps = custom_deploy_steps(at.host, at.client.version())
        at.move(node, target, poll_delay=self.poll_delay, configdrive=drive, deploy_steps=steps)
        self.count(node, target)
        return continuing(self.poll_delay)

    def count(self, node: Node, target: str) -> None:
        """One more provision or power target that Ironic accepted for this node."""
        with self._actions_lock:
            self.actions[(node["name"], target)] += 1

    def failed_then_retry(self, at: Attempt, node: Node, what: str, target: str) -> Result:
        """A failed state: report it once; the next attempt (after the backoff) asks again."""
        report = self.failure(node, what)
        return report if report is not None else self.started(at, node, target)

    def failure(self, node: Node, what: str) -> Result | None:
        return self.failures.failure(
            node, what, poll_delay=self.poll_delay, reason_grace=self.reason_grace
        )

    def cannot(self, operation: str, node: Node) -> NoReturn:
        raise Answer(
            failed(
                f"cannot {operation}: Ironic has node {node['name']} in state "
                f"{node['provision_state']!r}, from which hoststate does not know how to go on",
                node.get("last_error") or "",
            )
        )

    def find(self, at: Attempt) -> Node | None:
        return at.find(self.memory.take_fresh(at.host.key, fresh_for=self.fresh_for))

    def node(self, at: Attempt) -> Node:
        node = self.find(at)
        if node is None:
            raise Answer(
                retry_after(
                    self.poll_delay,
                    f"Ironic has no node {node_name(at.host)}; it is registered again first",
                )
            )
        return node

    def remove(self, at: Attempt, why: str) -> Result:
        """Delete the host's node (``detached`` or ``deleted``); another's is never touched."""
        node = at.find(None, foreign_is_none=True)  # another's node is never deleted
        if node is None:
            return complete()
        at.delete(node, why)
        self.memory.forget(node["uuid"], at.host.key)
        self.failures.forget(node["uuid"])
        return complete()
