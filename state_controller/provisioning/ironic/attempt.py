"""One provisioner call for one host: the requests it makes about the host's node.

An :class:`Attempt` is made by each call of the provisioner and passed to every step of
it. It is the only way a step talks to Ironic, so it knows what the call did: which node
it read, when, and whether it wrote anything. A call that completed without writing
leaves its read for the next call on the same host (registration is ensured before every
state's action: one read serves both); see :class:`~.memory.Memory`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ...api import annotations as ann
from ...api.backend_ids import id_problem
from ..provisioner import HostView
from ..results import failed, retry_after
from . import ownership
from .client import IronicClient, Reply
from .faults import Answer, fault_text, readable, registration_message
from .health import node_fields
from .nodes import (
    INVENTORY_VERSION,
    NODE_FIELDS,
    Node,
    PatchOps,
    hardware_from_inventory,
    hardware_from_properties,
    node_name,
)
from .states import DELETABLE_STATES, wait_out_maintenance

NodeRead = tuple[float, Node]  # (time.monotonic() when read, the node)

_VERBS = {  # provision-state targets, as a person says them
    "manage": "verify the BMC of",
    "provide": "clean and make available",
    "active": "deploy",
    "deleted": "tear down",
}


@dataclass
class Attempt:
    """The requests of one provisioner call for ``host``, and what they read and wrote."""

    client: IronicClient
    host: HostView
    read: NodeRead | None = None  # the node as this call read it
    wrote: bool = False  # any request that may change something in Ironic

    def request(
        self, method: str, path: str, body: Any = None, *, route: str, allow: tuple[int, ...] = ()
    ) -> Reply:
        if method != "GET":
            self.wrote = True
        return self.client.request(method, path, body, route=route, allow=allow)

    # -- reading ------------------------------------------------------------------------

    def find(self, fresh: NodeRead | None, *, foreign_is_none: bool = False) -> Node | None:
        """The host's node: ``fresh`` if given, else read by its id, then by its name.

        Only a node marked as this Host's is its node (:mod:`.ownership`); an earlier
        version's node that the Host's status records is marked now. Any other node of
        that name ends the operation with a failure saying why, before anything is sent
        to it, or, with ``foreign_is_none`` (removing the host's node), is no node.
        """
        if fresh is not None:
            self.read = fresh
            return fresh[1]
        found = self._find()
        if found is None:
            return None
        claim = ownership.claim(found, self.host)
        if claim is ownership.Claim.FOREIGN:
            self.read = None
            if foreign_is_none:
                return None
            raise Answer(failed(ownership.refusal(found, self.host)))
        if claim is ownership.Claim.UNMARKED_OURS:
            self.patch(found, ownership.mark_patch(self.host))
            found["extra"] = {**(found.get("extra") or {}), **ownership.marks(self.host)}
        return found

    def _find(self) -> Node | None:
        read_at = time.monotonic()
        name = node_name(self.host)
        found: Node | None = None
        if self.host.provider_id:
            reply = self._read(self.host.provider_id, PROVIDER_ID)
            if reply.status == 200 and isinstance(reply.data, dict):
                found = reply.data if reply.data.get("name") == name else None
        if found is None:
            reply = self._read(name, "the node name")
            found = reply.data if reply.status == 200 and isinstance(reply.data, dict) else None
        self.read = None if found is None else (read_at, found)
        return found

    def hardware(self, node: Node) -> dict[str, Any]:
        """Host.status.hardware: from the inventory where Ironic has one, else properties."""
        if self.client.version() >= INVENTORY_VERSION:
            reply = self.request("GET", _path(node, "/inventory"), route="inventory", allow=(404,))
            if reply.status == 200 and isinstance(reply.data, dict):
                hardware = hardware_from_inventory(reply.data.get("inventory") or {})
                if hardware:
                    return hardware
        return hardware_from_properties(node.get("properties") or {})

    # -- writing ------------------------------------------------------------------------

    def create(self, body: Node) -> Node:
        """``POST /v1/nodes``, marked as this host's (:mod:`.ownership`); a 400 is a
        failure that says which hardware type is missing."""
        body = {**body, "extra": {**(body.get("extra") or {}), **ownership.marks(self.host)}}
        reply = self.request("POST", "/v1/nodes", body, route="nodes", allow=(400,))
        if reply.status == 400:
            fault = fault_text(reply.data)
            message = f"Ironic refused to create node {body['name']}: {readable(fault)}"
            if "which supports driver" in fault:  # no conductor has that hardware type
                message = (
                    f"Ironic does not offer the {body['driver']!r} hardware type that "
                    f"spec.bmc.address ({self.host.bmc_address}) needs; enable it in Ironic "
                    "(enabled_hardware_types) or use a BMC type it offers"
                )
            elif "network_data" in body and "Schema error" in fault:  # its network_data schema
                message = (
                    "spec.preprovisioningNetworkDataName: Ironic refused the network data as "
                    "not valid OpenStack network_data (e.g. a network without network_id); "
                    "fix the Secret's networkData (Ironic's words are in hoststate's log)"
                )
            raise Answer(failed(message, fault))
        assert isinstance(reply.data, dict)
        return reply.data

    def ensure_port(self, node: Node, *, known_empty: bool) -> None:
        """The host's boot MAC as a port of the node (a 409: another node has it)."""
        mac = (self.host.boot_mac_address or "").lower()
        if not mac:
            return
        uuid = node["uuid"]
        if not known_empty:
            reply = self.request("GET", _path(node, "/ports?fields=address"), route="node/ports")
            if any(p.get("address", "").lower() == mac for p in reply.data.get("ports", [])):
                return
        reply = self.request(
            "POST",
            "/v1/ports",
            {"node_uuid": uuid, "address": mac, "pxe_enabled": True},
            route="ports",
            allow=(409,),
        )
        if reply.status == 409:
            raise Answer(
                failed(
                    f"the boot MAC address {mac} is already used by another Ironic node; "
                    "check spec.bootMACAddress, or delete the stale node in Ironic",
                    f"409 on POST /v1/ports for {mac}",
                )
            )

    def patch(self, node: Node, ops: PatchOps) -> None:
        self.request("PATCH", _path(node), ops, route="node")

    def validate_bmc(self, node: Node) -> None:
        """Ironic's check of the power interface: a BMC it rejects is a failure."""
        reply = self.request("GET", _path(node, "/validate"), route="validate")
        power = reply.data.get("power") or {}
        if power.get("result") is False:
            reason = str(power.get("reason") or "")
            raise Answer(failed(registration_message(self.host, reason), reason))

    def move(
        self,
        node: Node,
        target: str,
        *,
        poll_delay: float,
        configdrive: Any = None,
        deploy_steps: Any = None,
    ) -> None:
        """Ask for a provision-state change; return only once Ironic accepted it (202).
        ``configdrive``: the config drive to deploy with (``active`` and ``rebuild``);
        ``deploy_steps``: the deploy steps to run (a custom deploy)."""
        uuid = node["uuid"]
        if node.get("maintenance") and node.get("fault") == "clean failure":
            # Ironic set it because cleaning failed: this retry is the fix it waits for
            self.request("DELETE", _path(node, "/maintenance"), route="maintenance")
        else:
            wait_out_maintenance(node)
        body: dict[str, Any] = {"target": target}
        if configdrive is not None:
            body["configdrive"] = configdrive
        if deploy_steps is not None:
            body["deploy_steps"] = deploy_steps
        reply = self.request(
            "PUT",
            _path(node, "/states/provision"),
            body,
            route="states/provision",
            allow=(400,),
        )
        if reply.status != 400:
            return
        fault = fault_text(reply.data)
        now = self._read(uuid, UUID).data
        if not isinstance(now, dict) or now.get("provision_state") != node["provision_state"]:
            # it moved between our read and our request: decide again from the new state
            raise Answer(retry_after(poll_delay, f"node {uuid} changed state"))
        wait_out_maintenance(now)  # put in maintenance since our read: that is why
        verb = _VERBS.get(target, target)
        raise Answer(
            failed(f"Ironic refused to {verb} node {node['name']}: {readable(fault)}", fault)
        )

    def power(self, node: Node, target: str) -> None:
        self.request(
            "PUT",
            _path(node, "/states/power"),
            {"target": target},
            route="states/power",
        )

    def delete(self, node: Node, why: str) -> None:
        """Delete the node, in maintenance first where its state needs it."""
        if node["provision_state"] not in DELETABLE_STATES and not node.get("maintenance"):
            self.request(
                "PUT",
                _path(node, "/maintenance"),
                {"reason": f"hoststate: host {self.host.key} {why}"},
                route="maintenance",
            )
        self.request("DELETE", _path(node), route="node", allow=(404,))

    def _read(self, ident: str, field: str) -> Reply:
        return self.request(
            "GET",
            node_path(ident, field, f"?fields={node_fields(NODE_FIELDS, self.client.version())}"),
            route="node",
            allow=(404,),
        )


PROVIDER_ID = "status.provisioning.id"
UUID = "Ironic's node uuid"


def node_path(ident: str, field: str, rest: str = "") -> str:
    """``/v1/nodes/{ident}{rest}``, the ID one path segment; an ID that could be more (a
    ``/``, ``?``, a dot segment) ends the operation before any request, naming ``field``."""
    problem = id_problem(ident, field)
    if problem:
        where = (
            f"; nothing was sent to Ironic: fix or remove it in the Host's status or its "
            f"{ann.STATUS} annotation"
            if field == PROVIDER_ID
            else "; nothing was sent to Ironic with it"
        )
        raise Answer(failed(problem + where))
    return f"/v1/nodes/{quote(ident, safe='')}{rest}"


def _path(node: Node, rest: str = "") -> str:
    return node_path(str(node.get("uuid") or ""), UUID, rest)
