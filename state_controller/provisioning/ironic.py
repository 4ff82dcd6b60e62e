"""The ``ironic`` backend: drive a real OpenStack Ironic through its REST API.

Each operation reads the node once (``GET /v1/nodes/{id}``), decides from its
``provision_state`` what, if anything, Ironic must be asked to do next, asks
(one ``PUT .../states/provision`` and friends) and answers with a semantic
result. Calling it again polls, so a host's work is never started twice: a
node that is ``deploying`` is waited for, one that is ``active`` is done.

Ironic's answers map onto results like this:

* ``202`` accepted → ``continuing(poll_delay)``; a stable target state → ``complete``;
* ``409`` that passes (node locked by another operation, or a node between two
  provision states that may not be updated yet) → ``retry_after`` naming the lock
  holder; nothing is recorded as started. A 409 that is a refusal → ``failed``;
* ``406``: the microversion is negotiated again; if the server now offers another one
  (an older Ironic took its place) → ``transient``, else the request is refused → ``failed``;
* ``503``, other ``5xx``, connection errors and timeouts → ``transient``
  ("Ironic at URL is unreachable/busy"): the host shows ``BackendUnavailable``;
* other ``4xx`` → ``failed`` with a readable message, Ironic's ``faultstring`` in
  the details;
* ``* failed`` states → ``failed`` with a message a user understands, the raw
  ``last_error`` kept next to it (``Result.details``). The next attempt retries
  the work (Ironic allows ``inspect``/``active``/``adopt`` again from the failed
  state, ``manage`` after a failed cleaning). A failure Ironic made up itself
  because it restarted mid-operation ("... can't be resumed by conductor") is
  retried at once instead: the host did nothing wrong.

Why plain HTTP (urllib3, already a dependency through ``kubernetes``) and not
openstacksdk's baremetal proxy — measured against Ironic 39.0.0 with
openstacksdk 4.22.0 (``Connection(auth_type="none", baremetal_endpoint_override=url,
baremetal_status_code_retries=0)``):

* keystoneauth logs every request at DEBUG as a curl line *with the body*:
  ``POST /v1/nodes`` printed ``"ipmi_password": "secret"`` in clear. The BMC
  password must never reach a log line, whatever the log level.
* the SDK pins its own microversion (sent ``1.109`` while the server offers
  ``1.115``), spends two discovery ``GET /v1`` calls before the first request,
  and re-reads the node after every provision-state ``PUT`` (one extra ``GET``
  per action), where the controller polls anyway.
* an unreachable Ironic surfaces as keystoneauth's ``DiscoveryFailure`` (not a
  connection error) and error texts come wrapped in SDK prose; here the raw
  status code, ``faultstring`` and ``last_error`` are kept as Ironic sent them.
* it would add openstacksdk, keystoneauth1, requests' siblings, dogpile.cache,
  os-service-types … to the controller image for about fifteen endpoints.

The microversion is negotiated on first use from ``GET /v1``: the lower of the
server's maximum and :data:`PREFERRED_VERSION`; below :data:`MIN_VERSION` every
call fails with a message saying so. Node names are ``{namespace}~{name}``
(``~`` is allowed in Ironic names, not in Kubernetes ones). Passwords are sent
in request bodies only: never logged (only method, route and status are), and
scrubbed from every message and detail this module returns.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, NoReturn
from urllib.parse import quote

import urllib3

from .provisioner import HostView
from .results import Outcome, Result, complete, continuing, failed, retry_after, transient

log = logging.getLogger(__name__)

Node = dict[str, Any]
NodeOverrides = Callable[[HostView], Mapping[str, Any]]

MIN_VERSION = (1, 47)  # automated_clean on nodes; everything else used is older
PREFERRED_VERSION = (1, 115)  # the newest this module was tested against (Ironic 39.0.0)
INVENTORY_VERSION = (1, 81)  # GET /v1/nodes/{id}/inventory
FRESH_FOR = 1.0  # seconds a node read stays good for the next operation on the same host
# Ironic enters some failed states before it writes last_error (an inspection timeout
# moves the node to `inspect failed`, then a callback records why): a reasonless failed
# state is given this long for its reason to appear before it is reported without one.
REASON_GRACE = 5.0

NODE_FIELDS = ",".join(
    (
        "uuid",
        "name",
        "provision_state",
        "target_provision_state",
        "power_state",
        "target_power_state",
        "last_error",
        "reservation",
        "maintenance",
        "maintenance_reason",
        "fault",
        "instance_info",
        "provision_updated_at",
        "inspection_finished_at",
        "properties",
    )
)

# States Ironic leaves on its own (work in progress): wait for them.
BUSY_STATES = frozenset(
    {
        "verifying",
        "inspecting",
        "inspect wait",
        "cleaning",
        "clean wait",
        "deploying",
        "wait call-back",
        "deleting",
        "adopting",
        "rescuing",
        "rescue wait",
        "unrescuing",
        "servicing",
        "service wait",
    }
)
# Ironic deletes nodes in these states without maintenance mode.
DELETABLE_STATES = frozenset({"enroll", "manageable", "available", "adopt failed"})

_DRIVERS = {
    "ipmi": "ipmi",
    "redfish": "redfish",
    "idrac": "idrac",
    "idrac-redfish": "idrac",
    "ilo4": "ilo",
    "ilo5": "ilo5",
    "ilo5-redfish": "redfish",
    "irmc": "irmc",
}
_VIRTUAL_MEDIA_BOOT = {
    "redfish": "redfish-virtual-media",
    "idrac": "idrac-redfish-virtual-media",
}
_INTERRUPTED = "can't be resumed by conductor"
_VERBS = {  # provision-state targets, as a person says them
    "manage": "verify the BMC of",
    "provide": "clean and make available",
    "active": "deploy",
    "deleted": "tear down",
}
_MISSING = object()


class _Answer(Exception):
    """Ends an operation early with this result (a refusal, an outage, a failure)."""

    def __init__(self, result: Result) -> None:
        super().__init__(result.message)
        self.result = result


class IronicProvisioner:
    """A :class:`~.provisioner.Provisioner` over one Ironic endpoint, shared by all hosts.

    ``driver`` forces one hardware type for every node (tests: ``fake-hardware``);
    otherwise it follows the BMC address scheme. ``interfaces`` are extra node
    fields for every node (``{"deploy_interface": "direct"}``), ``node_overrides``
    extra fields per host, applied last. ``calls`` counts requests by
    ``METHOD route`` and ``actions`` the provision/power targets sent per node.
    ``username``/``password`` are for HTTP basic auth in front of Ironic (noauth
    otherwise); ``reread_credentials``, if given, is asked again after a 401 so that a
    rotated password needs no restart. ``ca_file``/``insecure`` are for an https URL.
    ``max_connections`` should be at least the controller's worker count.
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
    ) -> None:
        url = url.rstrip("/")
        self.url = url[: -len("/v1")] if url.endswith("/v1") else url
        self.driver = driver
        self.interfaces = dict(interfaces or {})
        self.node_overrides = node_overrides
        self.poll_delay = poll_delay
        self.lock_retry_delay = poll_delay if lock_retry_delay is None else lock_retry_delay
        self._timeout = urllib3.Timeout(connect=connect_timeout, read=read_timeout)
        tls: dict[str, Any] = {"cert_reqs": "CERT_NONE"} if insecure else {}
        if ca_file:
            tls["ca_certs"] = ca_file
        self._http = urllib3.PoolManager(num_pools=2, maxsize=max_connections, retries=False, **tls)
        self._headers: dict[str, str] = {"Accept": "application/json"}
        if username:
            self._headers["authorization"] = _basic_auth(username, password or "")
        self._reread_credentials = reread_credentials
        self._version: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self._negotiating = threading.Lock()
        self._salt = os.urandom(16)
        self.calls: Counter[str] = Counter()
        self.actions: Counter[tuple[str, str]] = Counter()
        # What this process remembers between polls (lost on restart, and that is fine:
        # without it a failure is reported once more, a re-inspection is trusted).
        self._reported: dict[str, str] = {}  # node -> failure already reported
        self._reasonless: dict[str, tuple[str, float]] = {}  # node -> (failure, first seen)
        self._inspect_base: dict[str, object] = {}  # node -> inspection_finished_at at start
        self._adopting: set[str] = set()
        self._recreated: set[str] = set()  # nodes created anew for hosts Ironic had lost
        self._power_target: dict[str, str] = {}  # node -> power target we asked for
        self._credentials: dict[str, str] = {}  # node -> fingerprint of what Ironic has
        # The node as the last completed operation read it, for the next call within
        # FRESH_FOR seconds (register, then the state's action: one read, not two).
        # Any write to the node, or an operation that did not complete, drops it.
        self._fresh: dict[str, tuple[float, Node]] = {}
        self._op = threading.local()

    @property
    def microversion(self) -> str | None:
        """The API microversion in use, once negotiated (on the first request)."""
        version = self._version
        return None if version is None else f"{version[0]}.{version[1]}"

    def check(self) -> str:
        """Negotiate the API version now: ``""`` when Ironic answers, else what is wrong.

        For a command line to say at once that the URL, the credentials or the Ironic
        version will not do, instead of every host failing the same way later.
        """
        try:  # /v1 is public; listing nodes proves the credentials too
            self._request("GET", "/v1/nodes?limit=1&fields=uuid", route="nodes")
        except _Answer as answer:
            return answer.result.explain()
        return ""

    def node_names(self) -> list[str]:
        """The names of every node in Ironic (all pages); raises RuntimeError if it cannot."""
        names: list[str] = []
        path: str | None = "/v1/nodes?fields=name&limit=1000"
        try:
            while path:
                _, data = self._request("GET", path, route="nodes")
                names += [str(n.get("name") or "") for n in data.get("nodes", [])]
                following = str(data.get("next") or "")
                path = following[following.find("/v1/") :] if "/v1/" in following else None
        except _Answer as answer:
            raise RuntimeError(answer.result.explain()) from None
        return names

    # -- Provisioner --------------------------------------------------------------------

    def register(self, host: HostView, *, credentials_changed: bool) -> Result:
        return self._guard(host, lambda: self._register(host, credentials_changed))

    def inspect(self, host: HostView, *, restart: bool) -> Result:
        return self._guard(host, lambda: self._inspect(host, restart))

    def prepare(self, host: HostView) -> Result:
        return self._guard(host, lambda: self._prepare(host))

    def provision(self, host: HostView) -> Result:
        return self._guard(host, lambda: self._provision(host))

    def deprovision(self, host: HostView) -> Result:
        return self._guard(host, lambda: self._deprovision(host))

    def adopt(self, host: HostView) -> Result:
        return self._guard(host, lambda: self._adopt(host))

    def power(self, host: HostView, *, on: bool) -> Result:
        return self._guard(host, lambda: self._power(host, "power on" if on else "power off"))

    def reboot(self, host: HostView) -> Result:
        return self._guard(host, lambda: self._power(host, "rebooting"))

    def detach(self, host: HostView) -> Result:
        return self._guard(host, lambda: self._remove(host, "detached"))

    def delete(self, host: HostView) -> Result:
        return self._guard(host, lambda: self._remove(host, "deleted"))

    # -- operations ---------------------------------------------------------------------

    def _register(self, host: HostView, credentials_changed: bool) -> Result:
        node = self._find(host, use_fresh=True)
        created = node is None
        if node is None:
            node = self._create(host)
            if host.provider_id:  # it had a node Ironic no longer has
                with self._lock:
                    self._recreated.add(node["uuid"])
        uuid, state = node["uuid"], node["provision_state"]
        # Ironic masks passwords, so what it has is known from what this process sent.
        changed = credentials_changed and not self._knows_credentials(uuid, host)
        if changed:
            self._update_credentials(node, host)  # 409 while Ironic works on it: retry_after
            if state != "enroll":  # in enroll, `manage` below checks them
                self._validate_bmc(node, host)
            # only now: credentials that failed are sent and checked again on the retry
            self._remember_credentials(uuid, host)
        if state == "enroll":
            error = str(node.get("last_error") or "")
            if error and not changed and self._should_report(node):
                return failed(_registration_message(host, error), error)
            if not created:
                self._ensure_port(node, host, known_empty=False)
            self._act(node, "manage")
            return continuing(self.poll_delay)
        if state == "verifying":
            return continuing(self.poll_delay)
        return complete(
            provider_id=uuid, powered_on=_powered(node), deployed_image=_deployed_image(node)
        )

    def _inspect(self, host: HostView, restart: bool) -> Result:
        node = self._node(host)
        uuid, state = node["uuid"], node["provision_state"]
        if restart and state not in BUSY_STATES:
            with self._lock:
                self._inspect_base[uuid] = node.get("inspection_finished_at")
        if state in BUSY_STATES:
            return self._busy(node)
        if state == "inspect failed":
            return self._failed_then_retry(node, "inspecting the hardware", "inspect")
        if state == "manageable":
            with self._lock:
                base = self._inspect_base.get(uuid, _MISSING)
            finished = node.get("inspection_finished_at")
            if finished and finished != base:
                with self._lock:
                    self._inspect_base.pop(uuid, None)
                return complete(hardware=self._hardware(node))
            return self._started(node, "inspect")
        if state in ("available", "adopt failed", "clean failed"):
            return self._started(node, "manage")
        return self._cannot("inspect", node)

    def _prepare(self, host: HostView) -> Result:
        node = self._node(host)
        state = node["provision_state"]
        if state == "available":
            return complete()
        if state in BUSY_STATES:
            return self._busy(node)
        if state == "manageable":
            return self._started(node, "provide")
        if state == "clean failed":
            return self._failed_then_retry(node, "cleaning the host", "manage")
        if state in ("active", "deploy failed"):  # e.g. no longer externally provisioned
            return self._started(node, "deleted")
        if state == "error":  # that teardown failed
            return self._failed_then_retry(node, "tearing down the host", "deleted")
        if state in ("inspect failed", "adopt failed"):
            return self._started(node, "manage")
        return self._cannot("prepare", node)

    def _provision(self, host: HostView) -> Result:
        node = self._node(host)
        state = node["provision_state"]
        if state == "active":
            return complete(powered_on=_powered(node))
        if state in BUSY_STATES:
            return self._busy(node)
        if state == "available":
            self._set_instance_info(node, host)
            return self._started(node, "active")
        if state == "deploy failed":
            if report := self._failure(node, "deploying the image"):
                return report
            self._set_instance_info(node, host)
            return self._started(node, "active")
        if state == "manageable":
            return self._started(node, "provide")
        if state == "clean failed":
            return self._failed_then_retry(node, "cleaning before deploying", "manage")
        return self._cannot("provision", node)

    def _deprovision(self, host: HostView) -> Result:
        node = self._node(host)
        state = node["provision_state"]
        if state == "available":
            return complete(powered_on=False)
        if state in BUSY_STATES - {"wait call-back"}:
            return self._busy(node)
        if state == "error":  # a teardown that failed (deleting -> error)
            return self._failed_then_retry(node, "tearing down the host", "deleted")
        if state in ("active", "deploy failed", "wait call-back"):
            return self._started(node, "deleted")
        if state == "manageable":
            return self._started(node, "provide")
        if state == "clean failed":
            return self._failed_then_retry(node, "cleaning the disks", "manage")
        if state in ("inspect failed", "adopt failed"):
            return self._started(node, "manage")
        return self._cannot("deprovision", node)

    def _adopt(self, host: HostView) -> Result:
        node = self._node(host)
        uuid, state = node["uuid"], node["provision_state"]
        if state == "active":
            with self._lock:
                adopted = uuid in self._adopting
                self._adopting.discard(uuid)
                lost = uuid in self._recreated
                self._recreated.discard(uuid)
            if not adopted:
                return complete()
            return Result(Outcome.COMPLETE, adopted=True, message=_adopted_message(lost))
        if state in BUSY_STATES:
            return self._busy(node)
        if state == "available":
            if not host.externally_provisioned:
                # torn down (and cleaned) behind our back: adopting would claim an image runs
                raise _Answer(
                    failed(
                        f"the Ironic node {node['name']} is available: it was torn down "
                        "outside hoststate and its image no longer runs; to deploy it again, "
                        "remove spec.image and set it back"
                    )
                )
            return self._started(node, "manage")  # adopt needs manageable
        if state == "adopt failed" and (report := self._failure(node, "adopting the running host")):
            return report
        if state in ("manageable", "adopt failed"):
            self._set_instance_info(node, host)
            result = self._started(node, "adopt")
            with self._lock:
                self._adopting.add(uuid)
            return result
        return self._cannot("adopt", node)

    def _power(self, host: HostView, target: str) -> Result:
        node = self._node(host)
        uuid = node["uuid"]
        if node.get("target_power_state"):
            return continuing(self.poll_delay)
        with self._lock:
            asked = self._power_target.get(uuid)
        if asked == target:  # our request ran: did it work?
            with self._lock:
                self._power_target.pop(uuid, None)
            want = "power on" if target == "rebooting" else target
            # Ironic clears last_error when it starts a power action, so one now is ours
            # (a failed reboot leaves the host on, which alone would look done)
            if node.get("power_state") == want and not node.get("last_error"):
                return complete(powered_on=want == "power on")
            verb = {"power on": "power on", "power off": "power off", "rebooting": "reboot"}
            return failed(
                f"the BMC did not {verb[target]} the host; it may be busy or misconfigured",
                node.get("last_error") or f"power state is {node.get('power_state')}",
            )
        if target != "rebooting" and node.get("power_state") == target:
            with self._lock:  # an older request of ours for another target is moot
                self._power_target.pop(uuid, None)
            return complete(powered_on=target == "power on")
        _wait_out_maintenance(node)  # Ironic would power it; its operator may not want that
        self._request(
            "PUT", f"/v1/nodes/{uuid}/states/power", {"target": target}, route="states/power"
        )
        with self._lock:
            self._power_target[uuid] = target
            self.actions[(node["name"], target)] += 1
        return continuing(self.poll_delay)

    def _remove(self, host: HostView, why: str) -> Result:
        node = self._find(host, use_fresh=False)
        if node is None:
            return complete()
        uuid = node["uuid"]
        if node["provision_state"] not in DELETABLE_STATES and not node.get("maintenance"):
            self._request(
                "PUT",
                f"/v1/nodes/{uuid}/maintenance",
                {"reason": f"hoststate: host {host.key} {why}"},
                route="maintenance",
            )
        self._request("DELETE", f"/v1/nodes/{uuid}", route="node", allow=(404,))
        self._forget(uuid, host)
        return complete()

    # -- pieces -------------------------------------------------------------------------

    def _create(self, host: HostView) -> Node:
        body: dict[str, Any] = {
            "name": node_name(host),
            "driver": self.driver or _DRIVERS.get(host.bmc.protocol, host.bmc.protocol),
            "driver_info": _driver_info(host),
            "properties": {"capabilities": _capabilities(host.boot_mode)},
            "automated_clean": host.automated_cleaning,
        }
        if self.driver is None and "virtualmedia" in host.bmc.scheme:
            boot = _VIRTUAL_MEDIA_BOOT.get(body["driver"])
            if boot:
                body["boot_interface"] = boot
        body.update(self.interfaces)
        if self.node_overrides is not None:
            body.update(self.node_overrides(host))
        status, node = self._request("POST", "/v1/nodes", body, route="nodes", allow=(400,))
        if status == 400:
            fault = _fault(node)
            message = f"Ironic refused to create node {body['name']}: {fault}"
            if "which supports driver" in fault:  # no conductor has that hardware type
                message = (
                    f"Ironic does not offer the {body['driver']!r} hardware type that "
                    f"spec.bmc.address ({host.bmc_address}) needs; enable it in Ironic "
                    "(enabled_hardware_types) or use a BMC type it offers"
                )
            raise _Answer(failed(message, fault))
        assert isinstance(node, dict)
        self._remember_credentials(node["uuid"], host)
        self._ensure_port(node, host, known_empty=True)
        return node

    def _ensure_port(self, node: Node, host: HostView, *, known_empty: bool) -> None:
        mac = (host.boot_mac_address or "").lower()
        if not mac:
            return
        uuid = node["uuid"]
        if not known_empty:
            _, data = self._request(
                "GET", f"/v1/nodes/{uuid}/ports?fields=address", route="node/ports"
            )
            if any(p.get("address", "").lower() == mac for p in data.get("ports", [])):
                return
        status, _ = self._request(
            "POST",
            "/v1/ports",
            {"node_uuid": uuid, "address": mac, "pxe_enabled": True},
            route="ports",
            allow=(409,),
        )
        if status == 409:
            raise _Answer(
                failed(
                    f"the boot MAC address {mac} is already used by another Ironic node; "
                    "check spec.bootMACAddress, or delete the stale node in Ironic",
                    f"409 on POST /v1/ports for {mac}",
                )
            )

    def _update_credentials(self, node: Node, host: HostView) -> None:
        ops = [
            {"op": "add", "path": f"/driver_info/{key}", "value": value}
            for key, value in _driver_info(host).items()
        ]
        self._request("PATCH", f"/v1/nodes/{node['uuid']}", ops, route="node")

    def _validate_bmc(self, node: Node, host: HostView) -> None:
        _, data = self._request("GET", f"/v1/nodes/{node['uuid']}/validate", route="validate")
        power = data.get("power") or {}
        if power.get("result") is False:
            reason = str(power.get("reason") or "")
            raise _Answer(failed(_registration_message(host, reason), reason))

    def _set_instance_info(self, node: Node, host: HostView) -> None:
        _wait_out_maintenance(node)  # before writing: else every retry would write again
        info: dict[str, Any] = {}
        image = host.image or {}
        if image.get("url"):
            info["image_source"] = image["url"]
            checksum = image.get("checksum")
            kind = image.get("checksumType") or "auto"
            if checksum and kind in ("md5", "auto"):
                info["image_checksum"] = checksum
            elif checksum:
                info["image_os_hash_algo"] = kind
                info["image_os_hash_value"] = checksum
            if image.get("diskFormat"):
                info["image_disk_format"] = image["diskFormat"]
        ops: list[dict[str, Any]] = [{"op": "add", "path": "/instance_info", "value": info}]
        hints = _root_device(host.root_device_hints)
        if hints:
            ops.append({"op": "add", "path": "/properties/root_device", "value": hints})
        if not info and not hints:
            return
        self._request("PATCH", f"/v1/nodes/{node['uuid']}", ops, route="node")

    def _hardware(self, node: Node) -> dict[str, Any]:
        if self._negotiate() >= INVENTORY_VERSION:
            status, data = self._request(
                "GET", f"/v1/nodes/{node['uuid']}/inventory", route="inventory", allow=(404,)
            )
            if status == 200 and isinstance(data, dict):
                hardware = _from_inventory(data.get("inventory") or {})
                if hardware:
                    return hardware
        return _from_properties(node.get("properties") or {})

    def _busy(self, node: Node) -> Result:
        """Ironic is working on the node: poll again, unless maintenance holds it.

        Ironic stops the timeouts of a node in maintenance, so a deploy waiting for its
        ramdisk would wait forever and show nothing; say why instead.
        """
        _wait_out_maintenance(node)
        return continuing(self.poll_delay)

    def _started(self, node: Node, target: str) -> Result:
        self._act(node, target)
        return continuing(self.poll_delay)

    def _act(self, node: Node, target: str) -> None:
        """Ask for a provision-state change; return only once Ironic accepted it (202)."""
        uuid = node["uuid"]
        if node.get("maintenance") and node.get("fault") == "clean failure":
            # Ironic set it because cleaning failed: this retry is the fix it waits for
            self._request("DELETE", f"/v1/nodes/{uuid}/maintenance", route="maintenance")
        else:
            _wait_out_maintenance(node)
        status, data = self._request(
            "PUT",
            f"/v1/nodes/{uuid}/states/provision",
            {"target": target},
            route="states/provision",
            allow=(400,),
        )
        if status == 400:
            fault = _fault(data)
            _, now = self._request(
                "GET", f"/v1/nodes/{uuid}?fields={NODE_FIELDS}", route="node", allow=(404,)
            )
            if not isinstance(now, dict) or now.get("provision_state") != node["provision_state"]:
                # it moved between our read and our request: decide again from the new state
                raise _Answer(retry_after(self.poll_delay, f"node {uuid} changed state: {fault}"))
            _wait_out_maintenance(now)  # put in maintenance since our read: that is why
            verb = _VERBS.get(target, target)
            raise _Answer(failed(f"Ironic refused to {verb} node {node['name']}: {fault}", fault))
        with self._lock:
            self.actions[(node["name"], target)] += 1

    def _cannot(self, operation: str, node: Node) -> NoReturn:
        raise _Answer(
            failed(
                f"cannot {operation}: Ironic has node {node['name']} in state "
                f"{node['provision_state']!r}, from which hoststate does not know how to go on",
                node.get("last_error") or "",
            )
        )

    # -- reading nodes ------------------------------------------------------------------

    def _node(self, host: HostView) -> Node:
        node = self._find(host, use_fresh=True)
        if node is None:
            raise _Answer(
                retry_after(
                    self.poll_delay,
                    f"Ironic has no node {node_name(host)}; it is registered again first",
                )
            )
        return node

    def _find(self, host: HostView, *, use_fresh: bool) -> Node | None:
        name = node_name(host)
        with self._lock:
            fresh = self._fresh.pop(host.key, None)
        if use_fresh and fresh is not None and time.monotonic() - fresh[0] < FRESH_FOR:
            self._op.node, self._op.read_at = fresh[1], fresh[0]
            return fresh[1]
        read_at = time.monotonic()
        found: Node | None = None
        if host.provider_id:
            status, node = self._request(
                "GET",
                f"/v1/nodes/{quote(host.provider_id)}?fields={NODE_FIELDS}",
                route="node",
                allow=(404,),
            )
            if status == 200 and isinstance(node, dict) and node.get("name") == name:
                found = node
        if found is None:
            status, node = self._request(
                "GET", f"/v1/nodes/{quote(name)}?fields={NODE_FIELDS}", route="node", allow=(404,)
            )
            found = node if status == 200 and isinstance(node, dict) else None
        self._op.node, self._op.read_at = found, read_at
        return found

    # -- what this process remembers ----------------------------------------------------

    def _first_report(self, node: Node) -> bool:
        """True the first time this failure (state, time, text) is seen: report it."""
        token = f"{_failure_token(node)}|{node.get('last_error')}"
        with self._lock:
            if self._reported.get(node["uuid"]) == token:
                return False
            self._reported[node["uuid"]] = token
            return True

    def _failed_then_retry(self, node: Node, what: str, target: str) -> Result:
        """A failed state: report it once; the next attempt (after the backoff) asks again."""
        report = self._failure(node, what)
        return report if report is not None else self._started(node, target)

    def _failure(self, node: Node, what: str) -> Result | None:
        """``failed`` the first time a failed state is seen; None after: retry the step.
        A failure whose reason Ironic has not written yet is waited on, briefly."""
        error = str(node.get("last_error") or "")
        if not error and self._reason_may_follow(node):
            return continuing(min(self.poll_delay, REASON_GRACE))
        if not self._should_report(node):
            return None
        return failed(f"{what} failed: {_readable(error)}", error)

    def _reason_may_follow(self, node: Node) -> bool:
        """True while this reasonless failed state is younger (to us) than REASON_GRACE."""
        token = _failure_token(node)
        now = time.monotonic()
        with self._lock:
            seen, since = self._reasonless.get(node["uuid"], (token, now))
            if seen != token:
                since = now
            self._reasonless[node["uuid"]] = (token, since)
        return now - since < REASON_GRACE

    def _should_report(self, node: Node) -> bool:
        """Report a failure once; retry it on the next attempt (or at once if Ironic
        itself interrupted the work by restarting)."""
        return not _interrupted(node) and self._first_report(node)

    def _fingerprint(self, host: HostView) -> str:
        text = "\0".join((host.bmc_address, host.credentials.username, host.credentials.password))
        return hmac.new(self._salt, text.encode(), hashlib.sha256).hexdigest()

    def _remember_credentials(self, uuid: str, host: HostView) -> None:
        with self._lock:
            self._credentials[uuid] = self._fingerprint(host)

    def _knows_credentials(self, uuid: str, host: HostView) -> bool:
        with self._lock:
            return self._credentials.get(uuid) == self._fingerprint(host)

    def _forget(self, uuid: str, host: HostView) -> None:
        with self._lock:
            for memory in (
                self._reported,
                self._reasonless,
                self._inspect_base,
                self._power_target,
            ):
                memory.pop(uuid, None)
            self._credentials.pop(uuid, None)
            self._adopting.discard(uuid)
            self._recreated.discard(uuid)
            self._fresh.pop(host.key, None)

    # -- HTTP ---------------------------------------------------------------------------

    def _guard(self, host: HostView, operation: Callable[[], Result]) -> Result:
        self._op.node, self._op.read_at, self._op.wrote = None, 0.0, False
        try:
            result = operation()
        except _Answer as answer:
            result = answer.result
        node: Node | None = self._op.node
        with self._lock:
            if result.done and node is not None and not self._op.wrote:
                self._fresh[host.key] = (self._op.read_at, node)
            else:
                self._fresh.pop(host.key, None)
        return _scrub(result, host.credentials.password)

    def _negotiate(self) -> tuple[int, int]:
        version = self._version
        if version is not None:
            return version
        with self._negotiating:  # once, not once per worker
            if self._version is not None:
                return self._version
            return self._negotiate_now()

    def _negotiate_now(self) -> tuple[int, int]:
        _, data = self._send("GET", "/v1", None, "v1", version=None)
        try:
            top = _parse_version(str(data["version"]["version"]))
        except (KeyError, TypeError, ValueError):
            raise _Answer(
                transient(f"Ironic at {self.url} answered GET /v1 without an API version")
            ) from None
        if top < MIN_VERSION:
            raise _Answer(
                failed(
                    f"Ironic at {self.url} offers API 1.{top[1]} at most; hoststate needs "
                    f"1.{MIN_VERSION[1]} or newer (Ironic 12.0, Stein, or later)"
                )
            )
        version = min(top, PREFERRED_VERSION)
        self._version = version
        log.info("Ironic at %s: using API microversion %d.%d", self.url, *version)
        return version

    def _renegotiated(self, version: tuple[int, int]) -> bool:
        """After a 406: True if the server now offers another microversion (it was
        replaced); False if it still offers ``version``, so the request itself is refused
        (Ironic answers 406 for a field the version does not have) and retrying won't help."""
        with self._negotiating:
            if self._version == version:
                self._version = None
                self._negotiate_now()
            return self._version != version

    def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        route: str,
        allow: tuple[int, ...] = (),
    ) -> tuple[int, Any]:
        version = self._negotiate()
        status, data = self._send(method, path, body, route, version=version)
        if status == 401 and self._credentials_rotated():
            status, data = self._send(method, path, body, route, version=version)
        if status == 406 and self._renegotiated(version):  # replaced by an older Ironic
            raise _Answer(transient(f"Ironic at {self.url} no longer speaks API 1.{version[1]}"))
        if 200 <= status < 300:
            return status, data
        fault = _fault(data) or f"HTTP {status}"
        if status == 409 and _passes(fault):  # even where a caller allows other 409s
            raise _Answer(retry_after(self.lock_retry_delay, _conflict_message(fault)))
        if status in allow:
            return status, data
        if status >= 500:
            busy = "busy (no free conductor)" if status == 503 else f"failing (HTTP {status})"
            raise _Answer(transient(f"Ironic at {self.url} is {busy}", fault))
        if status == 401:
            raise _Answer(
                failed(
                    f"Ironic at {self.url} refused hoststate's credentials (HTTP 401); "
                    "check the Ironic username and password",
                    fault,
                )
            )
        if status == 403:  # a protected node, or a policy: not the password
            raise _Answer(
                failed(
                    f"Ironic forbade {method} {route} (HTTP 403): {fault}; the node may be "
                    "protected (protected=true), or the Ironic user may not do this",
                    fault,
                )
            )
        # other 4xx, and a 409 that is no lock (a state that forbids it): waiting won't help
        raise _Answer(failed(f"Ironic refused {method} {route} (HTTP {status}): {fault}", fault))

    def _credentials_rotated(self) -> bool:
        """After a 401: True if the credentials source now holds other credentials, which
        are used from here on (a rotated Secret needs no restart)."""
        if self._reread_credentials is None:
            return False
        try:
            username, password = self._reread_credentials()
        except ValueError as err:
            log.warning("Ironic refused the credentials and reading them again failed: %s", err)
            return False
        header = _basic_auth(username, password)
        with self._lock:
            if self._headers.get("authorization") == header:
                return False
            self._headers = {**self._headers, "authorization": header}
        log.info("Ironic refused the credentials; using the changed ones now on disk")
        return True

    def _send(
        self, method: str, path: str, body: Any, route: str, *, version: tuple[int, int] | None
    ) -> tuple[int, Any]:
        headers = dict(self._headers)
        if version is not None:
            headers["X-OpenStack-Ironic-API-Version"] = f"{version[0]}.{version[1]}"
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        with self._lock:
            self.calls[f"{method} {route}"] += 1
        if method != "GET":
            self._op.wrote = True
        try:
            response = self._http.request(
                method, self.url + path, body=payload, headers=headers, timeout=self._timeout
            )
        except urllib3.exceptions.HTTPError as error:
            log.debug("%s %s: %s", method, route, type(error).__name__)
            raise _Answer(
                transient(f"Ironic at {self.url} is unreachable", _connection_error(error))
            ) from None
        log.debug("%s %s: %d", method, route, response.status)
        data: Any = None
        if response.data:
            try:
                data = json.loads(response.data)
            except ValueError:
                data = response.data.decode(errors="replace")[:500]
        return response.status, data


# -- naming and node fields -------------------------------------------------------------


def node_name(host: HostView) -> str:
    """The Ironic node name of a host: ``{namespace}~{name}``."""
    return node_name_prefix(host.namespace) + host.name


def node_name_prefix(namespace: str) -> str:
    """What the names of all Ironic nodes of one namespace's hosts start with."""
    return f"{namespace}~"


def _driver_info(host: HostView) -> dict[str, Any]:
    bmc, creds = host.bmc, host.credentials
    protocol = bmc.protocol
    verify = not host.disable_certificate_verification
    if protocol == "ipmi":
        return {
            "ipmi_address": bmc.host,
            "ipmi_port": bmc.port or 623,
            "ipmi_username": creds.username,
            "ipmi_password": creds.password,
        }
    if protocol in ("ilo4", "ilo5"):
        return {
            "ilo_address": bmc.host,
            "ilo_username": creds.username,
            "ilo_password": creds.password,
            "ilo_verify_ca": verify,
        }
    if protocol == "irmc":
        info: dict[str, Any] = {
            "irmc_address": bmc.host,
            "irmc_username": creds.username,
            "irmc_password": creds.password,
        }
        if bmc.port:
            info["irmc_port"] = bmc.port
        return info
    transport = "http" if bmc.scheme.endswith("+http") else "https"
    port = f":{bmc.port}" if bmc.port else ""
    info = {
        "redfish_address": f"{transport}://{bmc.host}{port}",
        "redfish_username": creds.username,
        "redfish_password": creds.password,
        "redfish_verify_ca": verify,
    }
    if bmc.path and bmc.path != "/":
        info["redfish_system_id"] = bmc.path
    return info


def _capabilities(boot_mode: str) -> str:
    if boot_mode == "legacy":
        return "boot_mode:bios"
    if boot_mode == "UEFISecureBoot":
        return "boot_mode:uefi,secure_boot:true"
    return "boot_mode:uefi"


_HINT_KEYS = {
    "deviceName": "name",
    "hctl": "hctl",
    "model": "model",
    "vendor": "vendor",
    "serialNumber": "serial",
    "wwn": "wwn",
    "rotational": "rotational",
}


def _root_device(hints: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (hints or {}).items():
        if value is None:
            continue
        if key == "minSizeGigabytes":
            out["size"] = f">= {value}"
        elif key in _HINT_KEYS:
            out[_HINT_KEYS[key]] = value
    return out


def _powered(node: Node) -> bool | None:
    state = node.get("power_state")
    if state == "power on":
        return True
    if state == "power off":
        return False
    return None


def _from_inventory(inventory: Mapping[str, Any]) -> dict[str, Any]:
    """An Ironic (IPA) inventory as Host.status.hardware."""
    if not inventory:
        return {}
    cpu = inventory.get("cpu") or {}
    memory = inventory.get("memory") or {}
    vendor = inventory.get("system_vendor") or {}
    return {
        "systemVendor": {
            k: str(v)
            for k, v in (
                ("manufacturer", vendor.get("manufacturer")),
                ("productName", vendor.get("product_name")),
                ("serialNumber", vendor.get("serial_number")),
            )
            if v
        },
        "cpu": {
            "arch": str(cpu.get("architecture") or ""),
            "model": str(cpu.get("model_name") or ""),
            "count": int(cpu.get("count") or 0),
        },
        "ramMebibytes": int(memory.get("physical_mb") or 0),
        "nics": [
            {
                "name": str(nic.get("name") or ""),
                "mac": str(nic.get("mac_address") or ""),
                "ip": str(nic.get("ipv4_address") or nic.get("ipv6_address") or ""),
                "speedGbps": int((nic.get("speed_mbps") or 0) // 1000),
            }
            for nic in inventory.get("interfaces") or []
        ],
        "storage": [
            {
                "name": str(disk.get("name") or ""),
                "sizeBytes": int(disk.get("size") or 0),
                "rotational": bool(disk.get("rotational")),
            }
            for disk in inventory.get("disks") or []
        ],
        "hostname": str(inventory.get("hostname") or ""),
    }


def _from_properties(properties: Mapping[str, Any]) -> dict[str, Any]:
    """What Ironic's node properties tell (no inventory, e.g. fake inspection): maybe {}."""
    out: dict[str, Any] = {}
    if properties.get("cpu_arch") or properties.get("cpus"):
        out["cpu"] = {
            "arch": str(properties.get("cpu_arch") or ""),
            "count": int(properties.get("cpus") or 0),
        }
    if properties.get("memory_mb"):
        out["ramMebibytes"] = int(properties["memory_mb"])
    return out


# -- messages ---------------------------------------------------------------------------


def _fault(data: Any) -> str:
    """Ironic's error text: ``{"error_message": "<JSON with a faultstring>"}``, parsed twice."""
    if isinstance(data, dict):
        inner: Any = data.get("error_message", data)
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except ValueError:
                return str(inner)
        if isinstance(inner, dict):
            return str(inner.get("faultstring") or inner.get("message") or "")
        return ""
    return str(data or "")


_LOCKED_BY = re.compile(r"locked by host ([^,\s]+)")
# Ironic's 409s that end by themselves: the node's lock is held (NodeLocked: "... is locked
# by host X, please retry ..."), or the node is between two provision states and may not be
# updated until it arrives ("Node X can not be updated while a state transition is in
# progress.", 'Cannot update node "X" while it is in state "inspecting".').
_TRANSITION_WORDS = ("state transition is in progress", "while it is in state")
_PASSING_WORDS = ("locked by host", "please retry", "try again", *_TRANSITION_WORDS)


def _says(fault: str, phrases: tuple[str, ...]) -> bool:
    lowered = fault.lower()
    return any(phrase in lowered for phrase in phrases)


def _passes(fault: str) -> bool:
    """A 409 that passes by itself (a lock, a transition under way), not a refusal."""
    return _says(fault, _PASSING_WORDS)


def _conflict_message(fault: str) -> str:
    match = _LOCKED_BY.search(fault)
    if match:
        return f"the Ironic node is locked by {match.group(1)} for another operation: {fault}"
    if _says(fault, _TRANSITION_WORDS):
        return f"the Ironic node is changing state and cannot be updated until it is done: {fault}"
    return f"Ironic asked to retry later: {fault}"


def _connection_error(error: Exception) -> str:
    reason = getattr(error, "reason", None) or error
    text = str(reason)
    for marker in ("Connection refused", "timed out", "Name or service not known", "reset"):
        if marker in text:
            return marker.lower() if marker != "reset" else "connection reset"
    return type(reason).__name__


_REASONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"image href (\S+) failed.*(Connection refused|Name or service not known)"),
        "Ironic could not download the image {0} ({1}); check spec.image.url and that the "
        "image server is reachable from Ironic",
    ),
    (
        re.compile(r"image href (\S+) failed.*(404|Not Found)"),
        "the image {0} does not exist (HTTP 404); check spec.image.url",
    ),
    (
        re.compile(r"image href (\S+) failed"),
        "Ironic could not validate the image {0}; check spec.image.url",
    ),
    (
        re.compile(r"checksum.*(mismatch|does not match|did not match)", re.I),
        "the image's checksum did not match spec.image.checksum",
    ),
    (
        re.compile(r"Timeout reached while inspecting"),
        "the inspection ramdisk never reported back; check that the host boots from the "
        "provisioning network and can reach Ironic",
    ),
    (
        re.compile(r"Timeout reached while waiting for callback|callback timeout", re.I),
        "the deploy ramdisk never called back; check that the host boots from the "
        "provisioning network and can reach Ironic",
    ),
    (
        re.compile(re.escape(_INTERRUPTED)),
        "Ironic restarted while the operation ran",
    ),
    (
        re.compile(r"\b401\b|Unauthorized|[Aa]uthentication fail|[Ii]nvalid credentials"),
        "the BMC rejected the credentials; check username and password in the credentials Secret",
    ),
    (
        re.compile(r"Connection refused|timed out|No route to host|Unable to connect"),
        "the BMC did not answer; check spec.bmc.address and that Ironic can reach the BMC",
    ),
    (
        # a driver_info Ironic cannot use: a missing or malformed field, an interface that
        # needs settings the host does not give ("Missing the following Redfish properties")
        re.compile(
            r"Failed to validate (\w+) driver interface for node \S+ Error: "
            r"((?:[^.\n]|\.(?=\S))+\.?)"  # its first sentence; a dot in a word or URL is no end
        ),
        "Ironic cannot use the {0} settings made from spec.bmc and the credentials Secret: {1}",
    ),
)


def _readable(last_error: str) -> str:
    """A sentence for users from Ironic's ``last_error`` (which is kept as the details)."""
    for pattern, text in _REASONS:
        match = pattern.search(last_error)
        if match:
            return text.format(*match.groups())
    first = re.split(r"(?<=[.!?])\s", last_error.strip(), maxsplit=1)[0]
    return first[:200] if first else "Ironic gave no reason"


def _registration_message(host: HostView, last_error: str) -> str:
    reason = _readable(last_error)
    port = f":{host.bmc.port}" if host.bmc.port else ""
    return f"could not validate the BMC at {host.bmc.host}{port}: {reason}"


def _wait_out_maintenance(node: Node) -> None:
    """A node in maintenance is in someone's hands: wait, visibly, and count no error.

    Operators set maintenance to work on a machine; Ironic sets it itself when it lost
    the BMC (fault ``power failure``) and clears it once the BMC answers again. Ironic
    refuses provisioning actions then (400) but would still change the power. Either way
    the host did nothing wrong, so this is a refusal (transient: shown as
    ``BackendUnavailable``, retried with backoff), not a failure.
    """
    if not node.get("maintenance"):
        return
    fault = node.get("fault")
    why = str(node.get("maintenance_reason") or "")
    if fault == "power failure":
        message = (
            f"Ironic cannot reach the BMC of node {node['name']} and put it in maintenance; "
            "it takes it out once the BMC answers: check the BMC and its network"
        )
    else:
        message = (
            f"the Ironic node {node['name']} is in maintenance"
            + (f" ({why})" if why else "")
            + "; hoststate goes on once it is taken out of maintenance"
        )
    raise _Answer(transient(message, why if why not in message else ""))


def _deployed_image(node: Node) -> str | None:
    """The image an ``active`` node runs ("" if Ironic does not say); None if not deployed."""
    if node.get("provision_state") != "active":
        return None
    return str((node.get("instance_info") or {}).get("image_source") or "")


def _adopted_message(lost: bool) -> str:
    if lost:
        return (
            "Ironic had lost this host's node (its database reset, or the node deleted); "
            "adopted the running host again, without deploying it"
        )
    return "registered the running host in Ironic and adopted it, without deploying it"


def _interrupted(node: Node) -> bool:
    return _INTERRUPTED in str(node.get("last_error") or "")


def _parse_version(text: str) -> tuple[int, int]:
    major, minor = text.split(".", 1)
    return int(major), int(minor)


def _basic_auth(username: str, password: str) -> str:
    """The ``Authorization`` header value for HTTP basic auth."""
    return str(urllib3.make_headers(basic_auth=f"{username}:{password}")["authorization"])


def _failure_token(node: Node) -> str:
    """Which entry into a failed state this is: the state and when Ironic entered it."""
    return f"{node['provision_state']}|{node.get('provision_updated_at')}"


def _scrub(result: Result, password: str) -> Result:
    """No message or detail may carry the BMC password, whatever Ironic wrote."""
    if len(password) < 4 or (password not in result.message and password not in result.details):
        return result
    return replace(
        result,
        message=result.message.replace(password, "******"),
        details=result.details.replace(password, "******"),
    )
