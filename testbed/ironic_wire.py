"""A stand-in for the connection pool of an Ironic client: every request as it would go
on the wire (method and URL, as handed to urllib3), answered from a table, no server."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from state_controller.api.bmc import parse_bmc_address
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.provisioning.provisioner import Credentials, HostView


@dataclass
class Response:
    status: int
    data: bytes


@dataclass
class Wire:
    """``answers``: ``"METHOD /path-prefix"`` -> (status, JSON body); the first that the
    request starts with answers it, else 404. ``GET /v1`` offers API 1.115."""

    answers: dict[str, tuple[int, Any]] = field(default_factory=dict)
    sent: list[tuple[str, str]] = field(default_factory=list)  # (method, URL)
    base: str = ""

    def request(self, method: str, url: str, **_: Any) -> Response:
        self.sent.append((method, url))
        path = url.removeprefix(self.base)
        if path == "/v1":
            return _json(200, {"version": {"version": "1.115", "min_version": "1.1"}})
        for prefix, (status, data) in self.answers.items():
            if f"{method} {path}".startswith(prefix):
                return _json(status, data)
        return _json(404, {"error_message": json.dumps({"faultstring": "not found"})})


def _json(status: int, data: Any) -> Response:
    return Response(status, json.dumps(data).encode())


def on_wire(prov: IronicProvisioner, answers: dict[str, tuple[int, Any]] | None = None) -> Wire:
    """``prov``'s requests sent to a :class:`Wire` instead of the network."""
    wire = Wire(dict(answers or {}), base=prov.client.url)
    prov.client._http = wire  # type: ignore[assignment]
    return wire


def host_view(provider_id: str = "") -> HostView:
    """What the controller hands the provisioner for ``ns/host-0000``."""
    address = "redfish://bmc-0000.demo.example/redfish/v1/Systems/1"
    return HostView(
        namespace="ns",
        name="host-0000",
        provider_id=provider_id,
        bmc=parse_bmc_address(address),
        bmc_address=address,
        credentials=Credentials("admin", "pw-0"),
    )
