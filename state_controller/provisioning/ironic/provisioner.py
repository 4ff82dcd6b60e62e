"""The ``ironic`` backend: drive a real OpenStack Ironic through its REST API.

Each operation reads the node once (``GET /v1/nodes/{id}``), decides from its
``provision_state`` what, if anything, Ironic must be asked to do next, asks
(one ``PUT .../states/provision`` and friends) and answers with a semantic
result. Calling it again polls, so a host's work is never started twice: a
node that is ``deploying`` is waited for, one that is ``active`` is done.

Ironic's answers map onto results like this:

* ``202`` accepted → ``continuing(poll_delay)``; a stable target state → ``complete``;
* a refusal, an outage, a lock → what :mod:`.client` makes of the status code
  (``retry_after``, ``transient`` or ``failed``); nothing is recorded as started;
* busy and ``* failed`` states → what :mod:`.states` says of them: wait, report the
  failure once with a message from :mod:`.faults` (the raw ``last_error`` kept next to
  it in ``Result.details``), then retry the work.

Every message and detail returned is scrubbed of the host's BMC password.

One module on purpose: each operation is a table from provision state to step, and
the eight tables read best side by side, where a missing state shows. What the command
lines ask of the same endpoint (``check``, ``node_names``, ``read_node``, ``mark_node``)
shares its client, its credentials and its scrubbing, so it is here too.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from ...api.backend_ids import id_problem
from ...servicing.plan import ServicePlan
from ..provisioner import HostView
from ..results import Outcome, Result, complete, continuing, failed, retry_after
from .attempt import Attempt
from .client import IronicClient
from .faults import Answer, adopted_message, power_message, registration_message, scrub
from .memory import FRESH_FOR, Memory
from .nodes import (
    Node,
    NodeOverrides,
    config_drive,
    custom_deploy_steps,
    deploy_patch,
    deployed_image,
    driver_info_patch,
    new_node,
    node_name,
    powered,
    unsupported_node_fields,
)
from .servicing import read_firmware, service
from .states import BUSY_STATES, REASON_GRACE, FailedStates, busy, wait_out_maintenance

REBOOTS = ("rebooting", "soft rebooting")  # power targets that end with the host on


class IronicProvisioner:
    """A :class:`~..provisioner.Provisioner` over one Ironic endpoint, shared by all hosts.

    ``driver`` forces one hardware type for every node (tests: ``fake-hardware``);
    otherwise it follows the BMC address scheme. ``interfaces`` are extra node
    fields for every node (``{"deploy_interface": "direct"}``), ``node_overrides``
    extra fields per host, applied last. ``calls`` counts requests by
    ``METHOD route`` and ``actions`` the provision/power targets sent per node.
    ``username``/``password`` are for HTTP basic auth in front of Ironic (noauth
    otherwise); ``reread_credentials``, if given, is asked again after a 401 so that a
    rotated password needs no restart. ``ca_file``/``insecure`` are for an https URL.
    ``max_connections`` should be at least the controller's worker count.
    ``fresh_for`` is how long (seconds) a node read serves the next call on the same
    host; ``reason_grace`` how long a failed state without a reason waits for one.
    """

    backend = "ironic"

    def __init__(
        self,
        url: str,
        *,
        username: str | None = None,
        password: str | None = None,
        reread_credentials: Callable[[], tuple[str, str]] | None = None,
        driver: str | None = None,
        interfaces: Mapping[str, Any] | None = None,
        node_overrides: NodeOverrides | None = None,
        poll_delay: float = 2.0,
        lock_retry_delay: float | None = None,
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        max_connections: int = 8,
        ca_file: str | None = None,
        insecure: bool = False,
        fresh_for: float = FRESH_FOR,
        reason_grace: float = REASON_GRACE,
    ) -> None:
        self.client = IronicClient(
            url,
            username=username,
            password=password,
            reread_credentials=reread_credentials,
            lock_retry_delay=poll_delay if lock_retry_delay is None else lock_retry_delay,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_connections=max_connections,
            ca_file=ca_file,
            insecure=insecure,
        )
        self.url = self.client.url
        self.driver = driver
        self.interfaces = dict(interfaces or {})
        self.node_overrides = node_overrides
        self.poll_delay = poll_delay
        self.fresh_for = fresh_for
        self.reason_grace = reason_grace
        self.calls: Counter[str] = self.client.calls
        self.actions: Counter[tuple[str, str]] = Counter()
        self._actions_lock = threading.Lock()
        self._memory = Memory()
        self._failures = FailedStates()

    @property
    def microversion(self) -> str | None:
        """The API microversion in use, once negotiated (on the first request)."""
        return self.client.microversion

    # -- CheckedBackend -----------------------------------------------------------------

    def check(self) -> str:
        """Negotiate the API version now: ``""`` when Ironic answers, else what is wrong.

        For a command line to say at once that the URL, the credentials or the Ironic
        version will not do, instead of every host failing the same way later.
        """
        try:  # /v1 is public; listing nodes proves the credentials too
            self.client.request("GET", "/v1/nodes?limit=1&fields=uuid", route="nodes")
        except Answer as answer:
            return answer.result.for_operators()
        return ""

    def node_names(self) -> list[str]:
        """The names of every node in Ironic (all pages); raises RuntimeError if it cannot."""
        names: list[str] = []
        path: str | None = "/v1/nodes?fields=name&limit=1000"
        try:
            while path:
                data = self.client.request("GET", path, route="nodes").data
                names += [str(n.get("name") or "") for n in data.get("nodes", [])]
                following = str(data.get("next") or "")
                path = following[following.find("/v1/") :] if "/v1/" in following else None
        except Answer as answer:
            raise RuntimeError(answer.result.for_operators()) from None
        return names

    def read_node(self, uuid: str) -> Node | None:
        """The node with this UUID as Ironic holds it now, None when it has none; raises
        RuntimeError (what went wrong, for an operator) when Ironic cannot be asked."""
        problem = id_problem(uuid, "the Ironic node UUID")
        if problem:
            raise RuntimeError(problem)
        try:
            reply = self.client.request("GET", f"/v1/nodes/{uuid}", route="node", allow=(404,))
        except Answer as answer:
            raise RuntimeError(answer.result.for_operators()) from None
        return reply.data if reply.status == 200 and isinstance(reply.data, dict) else None

    def mark_node(self, uuid: str, marks: Mapping[str, str]) -> None:
        """Write ``marks`` into the node's ``extra`` (``adopt``: the node is hoststate's
        now, :mod:`.ownership`); raises RuntimeError, for an operator, when it cannot."""
        problem = id_problem(uuid, "the Ironic node UUID")
        if problem:
            raise RuntimeError(problem)
        ops = [{"op": "add", "path": f"/extra/{key}", "value": v} for key, v in marks.items()]
        try:
            self.client.request("PATCH", f"/v1/nodes/{uuid}", ops, route="node")
        except Answer as answer:
            raise RuntimeError(answer.result.for_operators()) from None

    # -- Provisioner --------------------------------------------------------------------

    def register(self, host: HostView, *, credentials_changed: bool) -> Result:
        return self._attempt(host, lambda at: self._register(at, credentials_changed))

    def inspect(self, host: HostView, *, restart: bool) -> Result:
        return self._attempt(host, lambda at: self._inspect(at, restart))

    def prepare(self, host: HostView) -> Result:
        return self._attempt(host, self._prepare)

    def provision(self, host: HostView) -> Result:
        return self._attempt(host, self._provision)

    def deprovision(self, host: HostView) -> Result:
        return self._attempt(host, self._deprovision)

    def adopt(self, host: HostView) -> Result:
        return self._attempt(host, self._adopt)

    def power(self, host: HostView, *, on: bool, soft: bool = False) -> Result:
        target = "power on" if on else "soft power off" if soft else "power off"
        return self._attempt(host, lambda at: self._power(at, target))

    def reboot(self, host: HostView, *, soft: bool = False) -> Result:
        target = "soft rebooting" if soft else "rebooting"
        return self._attempt(host, lambda at: self._power(at, target))

    def firmware(self, host: HostView) -> Result:
        return self._attempt(host, lambda at: complete(firmware=read_firmware(at, self._node(at))))

    def service(self, host: HostView, plan: ServicePlan, *, started: bool) -> Result:
        def run(at: Attempt) -> Result:
            node = self._node(at)
            return service(at, node, plan, self._memory, started=started, poll=self.poll_delay)

        return self._attempt(host, run)

    def detach(self, host: HostView) -> Result:
        return self._attempt(host, lambda at: self._remove(at, "detached"))

    def delete(self, host: HostView) -> Result:
        return self._attempt(host, lambda at: self._remove(at, "deleted"))

    # -- operations ---------------------------------------------------------------------

    def _register(self, at: Attempt, credentials_changed: bool) -> Result:
        host = at.host
        node = self._find(at)
        created = node is None
        if node is None:
            node = self._create(at)
            if host.provider_id:  # it had a node Ironic no longer has
                self._memory.recreated(node["uuid"])
        uuid, state = node["uuid"], node["provision_state"]
        # Ironic masks passwords, so what it has is known from what this process sent.
        changed = credentials_changed and not self._memory.knows_credentials(uuid, host)
        if changed:
            at.patch(node, driver_info_patch(host))  # 409 while Ironic works on it: retry_after
            if state != "enroll":  # in enroll, `manage` below checks them
                at.validate_bmc(node)
            # only now: credentials that failed are sent and checked again on the retry
            self._memory.remember_credentials(uuid, host)
        if state == "enroll":
            error = str(node.get("last_error") or "")
            if error and not changed and self._failures.should_report(node):
                return failed(registration_message(host, error), error)
            if not created:
                at.ensure_port(node, known_empty=False)
            return self._started(at, node, "manage")
        if state == "verifying":
            return continuing(self.poll_delay)
        return complete(
            provider_id=uuid, powered_on=powered(node), deployed_image=deployed_image(node)
        )

    def _inspect(self, at: Attempt, restart: bool) -> Result:
        node = self._node(at)
        uuid, state = node["uuid"], node["provision_state"]
        if restart and state not in BUSY_STATES:
            self._memory.inspection_started(uuid, node.get("inspection_finished_at"))
        if state in BUSY_STATES:
            return busy(node, self.poll_delay)
        if state == "inspect failed":
            return self._failed_then_retry(at, node, "inspecting the hardware", "inspect")
        if state == "manageable":
            if self._memory.inspection_done(uuid, node.get("inspection_finished_at")):
                return complete(hardware=at.hardware(node))
            return self._started(at, node, "inspect")
        if state in ("available", "adopt failed", "clean failed"):
            return self._started(at, node, "manage")
        self._cannot("inspect", node)

    def _prepare(self, at: Attempt) -> Result:
        node = self._node(at)
        state = node["provision_state"]
        if state == "available":
            return complete()
        if state in BUSY_STATES:
            return busy(node, self.poll_delay)
        if state == "manageable":
            return self._started(at, node, "provide")
        if state == "clean failed":
            return self._failed_then_retry(at, node, "cleaning the host", "manage")
        if state in ("active", "deploy failed"):  # e.g. no longer externally provisioned
            return self._started(at, node, "deleted")
        if state == "error":  # that teardown failed
            return self._failed_then_retry(at, node, "tearing down the host", "deleted")
        if state in ("inspect failed", "adopt failed"):
            return self._started(at, node, "manage")
        self._cannot("prepare", node)

    def _provision(self, at: Attempt) -> Result:
        node = self._node(at)
        state = node["provision_state"]
        if state == "active":
            return complete(powered_on=powered(node))
        if state in BUSY_STATES:
            return busy(node, self.poll_delay)
        if state == "available":
            return self._deploy(at, node)
        if state == "deploy failed":
            report = self._failure(node, "deploying the image")
            return report if report is not None else self._deploy(at, node)
        if state == "manageable":
            return self._started(at, node, "provide")
        if state == "clean failed":
            return self._failed_then_retry(at, node, "cleaning before deploying", "manage")
        self._cannot("provision", node)

    def _deprovision(self, at: Attempt) -> Result:
        node = self._node(at)
        state = node["provision_state"]
        if state == "available":
            return complete(powered_on=False)
        if state in BUSY_STATES - {"wait call-back"}:
            return busy(node, self.poll_delay)
        if state == "error":  # a teardown that failed (deleting -> error)
            return self._failed_then_retry(at, node, "tearing down the host", "deleted")
        if state in ("active", "deploy failed", "wait call-back"):
            return self._started(at, node, "deleted")
        if state == "manageable":
            return self._started(at, node, "provide")
        if state == "clean failed":
            return self._failed_then_retry(at, node, "cleaning the disks", "manage")
        if state in ("inspect failed", "adopt failed"):
            return self._started(at, node, "manage")
        self._cannot("deprovision", node)

    def _adopt(self, at: Attempt) -> Result:
        node = self._node(at)
        uuid, state = node["uuid"], node["provision_state"]
        if state in ("active", "service failed"):  # a failed servicing leaves the image
            adopted, lost = self._memory.adoption_done(uuid)
            if not adopted:
                return complete()
            return Result(Outcome.COMPLETE, adopted=True, message=adopted_message(lost))
        if state in BUSY_STATES:
            return busy(node, self.poll_delay)
        if state == "available":
            if not at.host.externally_provisioned:
                # torn down (and cleaned) behind our back: adopting would claim an image runs
                return failed(
                    f"the Ironic node {node['name']} is available: it was torn down "
                    "outside hoststate and its image no longer runs; to deploy it again, "
                    "remove spec.image and set it back"
                )
            return self._started(at, node, "manage")  # adopt needs manageable
        if state == "adopt failed" and (report := self._failure(node, "adopting the running host")):
            return report
        if state in ("manageable", "adopt failed"):
            self._write_deploy_info(at, node)
            result = self._started(at, node, "adopt")
            self._memory.adoption_asked(uuid)
            return result
        self._cannot("adopt", node)

    def _power(self, at: Attempt, target: str) -> Result:
        node = self._node(at)
        uuid = node["uuid"]
        if node.get("target_power_state"):
            return continuing(self.poll_delay)
        if self._memory.power_target(uuid) == target:  # our request ran: did it work?
            self._memory.power_answered(uuid)
            want = "power on" if target in REBOOTS else target.removeprefix("soft ")
            # Ironic clears last_error when it starts a power action, so one now is ours
            # (a failed reboot leaves the host on, which alone would look done)
            if node.get("power_state") == want and not node.get("last_error"):
                return complete(powered_on=want == "power on")
            verb = {
                "power on": "power on",
                "power off": "power off",
                "rebooting": "reboot",
                "soft rebooting": "soft reboot",
                "soft power off": "soft power off",
            }
            error = str(node.get("last_error") or "")
            return failed(
                power_message(verb[target], error),
                error or f"power state is {node.get('power_state')}",
            )
        if target not in REBOOTS and node.get("power_state") == target.removeprefix("soft "):
            self._memory.power_answered(uuid)  # an older request of ours for another target
            return complete(powered_on=target == "power on")
        wait_out_maintenance(node)  # Ironic would power it; its operator may not want that
        at.power(node, target)
        self._memory.power_asked(uuid, target)
        self._count(node, target)
        return continuing(self.poll_delay)

    def _remove(self, at: Attempt, why: str) -> Result:
        node = at.find(None, foreign_is_none=True)  # another's node is never deleted
        if node is None:
            return complete()
        at.delete(node, why)
        self._memory.forget(node["uuid"], at.host.key)
        self._failures.forget(node["uuid"])
        return complete()

    # -- steps --------------------------------------------------------------------------

    def _create(self, at: Attempt) -> Node:
        unsupported = unsupported_node_fields(at.host, at.client.version())
        if unsupported:
            raise Answer(failed(unsupported))
        body = new_node(
            at.host, driver=self.driver, interfaces=self.interfaces, overrides=self.node_overrides
        )
        node = at.create(body)
        self._memory.remember_credentials(node["uuid"], at.host)
        at.ensure_port(node, known_empty=True)
        return node

    def _deploy(self, at: Attempt, node: Node) -> Result:
        self._write_deploy_info(at, node)
        return self._started(at, node, "active")

    def _write_deploy_info(self, at: Attempt, node: Node) -> None:
        wait_out_maintenance(node)  # before writing: else every retry would write again
        ops = deploy_patch(
            at.host,
            deploy_interface=node.get("deploy_interface"),
            configured=self._configured(at.host, "deploy_interface"),
        )
        if ops:
            at.patch(node, ops)

    def _configured(self, host: HostView, field: str) -> str | None:
        """The value this provisioner gives ``field`` of the host's new node, if any."""
        fields = {**self.interfaces, **(self.node_overrides(host) if self.node_overrides else {})}
        return str(fields[field]) if fields.get(field) else None

    def _started(self, at: Attempt, node: Node, target: str) -> Result:
        drive = steps = None
        if target in ("active", "rebuild"):
            drive = config_drive(at.host, at.client.version())
            steps = custom_deploy_steps(at.host, at.client.version())
        at.move(node, target, poll_delay=self.poll_delay, configdrive=drive, deploy_steps=steps)
        self._count(node, target)
        return continuing(self.poll_delay)

    def _count(self, node: Node, target: str) -> None:
        """One more provision or power target that Ironic accepted for this node."""
        with self._actions_lock:
            self.actions[(node["name"], target)] += 1

    def _failed_then_retry(self, at: Attempt, node: Node, what: str, target: str) -> Result:
        """A failed state: report it once; the next attempt (after the backoff) asks again."""
        report = self._failure(node, what)
        return report if report is not None else self._started(at, node, target)

    def _failure(self, node: Node, what: str) -> Result | None:
        return self._failures.failure(
            node, what, poll_delay=self.poll_delay, reason_grace=self.reason_grace
        )

    def _cannot(self, operation: str, node: Node) -> NoReturn:
        raise Answer(
            failed(
                f"cannot {operation}: Ironic has node {node['name']} in state "
                f"{node['provision_state']!r}, from which hoststate does not know how to go on",
                node.get("last_error") or "",
            )
        )

    def _find(self, at: Attempt) -> Node | None:
        return at.find(self._memory.take_fresh(at.host.key, fresh_for=self.fresh_for))

    def _node(self, at: Attempt) -> Node:
        node = self._find(at)
        if node is None:
            raise Answer(
                retry_after(
                    self.poll_delay,
                    f"Ironic has no node {node_name(at.host)}; it is registered again first",
                )
            )
        return node

    def _attempt(self, host: HostView, operation: Callable[[Attempt], Result]) -> Result:
        """Run one operation; a read it made without writing serves the next call."""
        at = Attempt(self.client, host)
        try:
            result = operation(at)
        except Answer as answer:
            result = answer.result
        self._memory.keep_read(host.key, at.read if result.done and not at.wrote else None)
        return scrub(result, host.credentials.password)
