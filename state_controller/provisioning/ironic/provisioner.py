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

This module is the provisioner's front: each call becomes one :class:`~.attempt.Attempt`
on the host's node, run by the operation of its kind of work (:mod:`.enrolling`,
:mod:`.deploying`, :mod:`.powering`, :mod:`.servicing`) over the steps and memory they
share (:mod:`.node_work`). What the command lines ask of the same endpoint (``check``,
``node_names``, ``read_node``, ``mark_node``) shares its client, its credentials and its
scrubbing, so it is here too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from ...api.backend_ids import id_problem
from ...servicing.plan import ServicePlan
from ..provisioner import HostView
from ..results import HistoryRead, Result, complete
from . import deploying, enrolling, powering
from .attempt import Attempt
from .client import IronicClient
from .faults import Answer, scrub
from .health import HEALTH_EVERY
from .history import read_history
from .memory import FRESH_FOR
from .node_work import NodeWork
from .nodes import Node, NodeOverrides
from .servicing import read_firmware, service
from .states import REASON_GRACE


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
    ``health_every`` is how often (seconds) a host at rest is read again for its hardware
    health (:mod:`.health`; 0: only when something else wakes it).
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
        health_every: float = HEALTH_EVERY,
    ) -> None:
        self.health_every = health_every
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
        self._work = NodeWork(
            driver=driver,
            interfaces=interfaces or {},
            node_overrides=node_overrides,
            poll_delay=poll_delay,
            fresh_for=fresh_for,
            reason_grace=reason_grace,
        )
        self.driver, self.node_overrides = driver, node_overrides
        self.interfaces = self._work.interfaces
        self.calls: Counter[str] = self.client.calls
        self.actions: Counter[tuple[str, str]] = self._work.actions

    @property
    def poll_delay(self) -> float:
        return self._work.poll_delay

    @property
    def fresh_for(self) -> float:
        return self._work.fresh_for

    @property
    def reason_grace(self) -> float:
        return self._work.reason_grace

    @reason_grace.setter
    def reason_grace(self, seconds: float) -> None:
        self._work.reason_grace = seconds

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

    @property
    def history_every(self) -> float:
        """Node history is read at the pace of health (:mod:`.history`)."""
        return self.health_every

    def history(self, host: HostView, mark: str) -> HistoryRead | None:
        """The node's history after ``mark`` (:mod:`.history`); None when it cannot be read
        now (an outage, an Ironic older than 1.78, no node yet)."""
        try:
            return read_history(Attempt(self.client, host), mark)
        except Answer:
            return None

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
        return self._attempt(
            host, lambda at: enrolling.register(self._work, at, credentials_changed)
        )

    def inspect(self, host: HostView, *, restart: bool) -> Result:
        return self._attempt(host, lambda at: enrolling.inspect(self._work, at, restart))

    def prepare(self, host: HostView) -> Result:
        return self._attempt(host, lambda at: enrolling.prepare(self._work, at))

    def provision(self, host: HostView) -> Result:
        return self._attempt(host, lambda at: deploying.provision(self._work, at))

    def deprovision(self, host: HostView) -> Result:
        return self._attempt(host, lambda at: deploying.deprovision(self._work, at))

    def adopt(self, host: HostView) -> Result:
        return self._attempt(host, lambda at: deploying.adopt(self._work, at))

    def power(self, host: HostView, *, on: bool, soft: bool = False) -> Result:
        target = "power on" if on else "soft power off" if soft else "power off"
        return self._attempt(host, lambda at: powering.power(self._work, at, target))

    def reboot(self, host: HostView, *, soft: bool = False) -> Result:
        target = "soft rebooting" if soft else "rebooting"
        return self._attempt(host, lambda at: powering.power(self._work, at, target))

    def firmware(self, host: HostView) -> Result:
        return self._attempt(
            host, lambda at: complete(firmware=read_firmware(at, self._work.node(at)))
        )

    def service(self, host: HostView, plan: ServicePlan, *, started: bool) -> Result:
        work = self._work

        def run(at: Attempt) -> Result:
            node = work.node(at)
            return service(at, node, plan, work.memory, started=started, poll=work.poll_delay)

        return self._attempt(host, run)

    def detach(self, host: HostView) -> Result:
        return self._attempt(host, lambda at: self._work.remove(at, "detached"))

    def delete(self, host: HostView) -> Result:
        return self._attempt(host, lambda at: self._work.remove(at, "deleted"))

    def _attempt(self, host: HostView, operation: Callable[[Attempt], Result]) -> Result:
        """Run one operation; a read it made without writing serves the next call."""
        at = Attempt(self.client, host)
        try:
            result = operation(at)
        except Answer as answer:
            result = answer.result
        self._work.memory.keep_read(host.key, at.read if result.done and not at.wrote else None)
        return scrub(result, host.credentials.password)
