"""baremetal-operator played: a BareMetalHost whose status is written as BMO writes it
(its documented states, operationalStatus, errors, operationHistory and conditions),
through the status subresource of BMO's own CRD on a real kube-apiserver, or the embedded
store. The tests play BMO with it one write at a time; the observe-mode demo
(:mod:`.bmo_fleet`) plays a whole fleet with it."""

from __future__ import annotations

import time
from typing import Any

from state_controller.api.objects import Obj
from state_controller.cluster.interface import BAREMETALHOSTS, Cluster

IMAGE = {"url": "http://images.example/os.qcow2", "checksum": "0" * 64, "checksumType": "sha256"}


def stamp(at: float) -> str:
    """metav1.Time as BMO writes it: whole seconds, UTC."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


# The conditions BMO v0.13 sets for each provisioning state (its computeConditions):
# Manageable, AvailableForProvisioning, Provisioned, Ready, Progressing, each (status, reason).
_BUSY = {
    "Manageable": ("True", "Manageable"),
    "AvailableForProvisioning": ("False", "NotAvailable"),
    "Provisioned": ("False", "NotProvisioned"),
    "Ready": ("False", "NotProvisioned"),
}
_IDLE = {"Progressing": ("False", "NotProgressing")}
_BY_STATE: dict[str, dict[str, tuple[str, str]]] = {
    "": {**_BUSY, "Manageable": ("False", "NotManaged"), **_IDLE},
    "registering": {**_BUSY, "Manageable": ("False", "Registering"),
                    "Progressing": ("True", "Registering")},
    "inspecting": {**_BUSY, "Progressing": ("True", "Inspecting")},
    "preparing": {**_BUSY, "Progressing": ("True", "Preparing")},
    "available": {**_BUSY, "AvailableForProvisioning": ("True", "Available"), **_IDLE},
    "provisioning": {**_BUSY, "Progressing": ("True", "Provisioning")},
    "provisioned": {**_BUSY, "Provisioned": ("True", "Provisioned"),
                    "Ready": ("True", "Provisioned"), **_IDLE},
    "deprovisioning": {**_BUSY, "Progressing": ("True", "Deprovisioning")},
    "deleting": {**_BUSY, "Progressing": ("True", "Deleting")},
}  # fmt: skip
_BY_STATE["unmanaged"] = _BY_STATE[""]
_BY_STATE["externally provisioned"] = _BY_STATE["provisioned"]


def bmo_conditions(
    state: str,
    *,
    operational_status: str = "OK",
    healthy: str = "",
    power_failure: bool = False,
    before: list[dict[str, Any]] | tuple[dict[str, Any], ...] = (),
    at: float,
) -> list[dict[str, Any]]:
    """The ``status.conditions`` BMO v0.13 writes for ``state``: each condition keeps its
    ``lastTransitionTime`` from ``before`` while its status is unchanged (metav1 rules);
    ``healthy`` is the BMC's health reason (Healthy, Warning, CriticalError; "" Unknown)."""
    wanted = dict(_BY_STATE[state])
    if state == "registering" and operational_status == "error":
        wanted["Manageable"] = ("False", "RegistrationFailed")
    for status, reason in (
        ("error", "Error"),
        ("servicing", "Servicing"),
        ("detached", "Detached"),
    ):
        if operational_status == status:
            wanted["Ready"] = ("False", reason)
    if operational_status == "detached":
        wanted["Progressing"] = ("False", "Detached")
    if power_failure:
        wanted["Manageable"] = ("False", "PowerFailure")
    wanted["Healthy"] = {
        "Healthy": ("True", "Healthy"),
        "Warning": ("False", "Warning"),
        "CriticalError": ("False", "CriticalError"),
    }.get(healthy, ("Unknown", "Unknown"))
    was = {c["type"]: c for c in before}
    out = []
    for type_, (status, reason) in wanted.items():
        old = was.get(type_)
        since = old["lastTransitionTime"] if old and old["status"] == status else stamp(at)
        out.append({"type": type_, "status": status, "reason": reason, "message": "",
                    "lastTransitionTime": since})  # fmt: skip
    return out


class PlayedBMO:
    """One BareMetalHost, its status moved by :meth:`show` as baremetal-operator would."""

    def __init__(self, cluster: Cluster, namespace: str, name: str, *, image: bool = True) -> None:
        self.cluster = cluster
        spec: dict[str, Any] = {
            "bmc": {"address": f"redfish://{name}.bmc.example/redfish/v1/Systems/1",
                    "credentialsName": f"{name}-bmc"},
            "bootMACAddress": "52:54:00:00:00:01",
            "online": True,
        }  # fmt: skip
        if image:
            spec["image"] = dict(IMAGE)
        self.obj: Obj = cluster.create(
            BAREMETALHOSTS,
            {
                "apiVersion": BAREMETALHOSTS.api_version,
                "kind": BAREMETALHOSTS.kind,
                "metadata": {"name": name, "namespace": namespace},
                "spec": spec,
            },
        )
        self.history: dict[str, dict[str, str]] = {}

    def show(
        self,
        state: str,
        *,
        started: tuple[str, ...] = (),
        ended: tuple[str, ...] = (),
        at: float | None = None,
        healthy: str = "",
        power_failure: bool = False,
        **status: Any,
    ) -> Obj:
        """Write the status BMO would write on entering ``state``: the operations
        ``started`` and ``ended`` now (or ``at``) in operationHistory, its conditions
        (``healthy`` and ``power_failure`` as its BMC reports them), and any other status
        field given (operationalStatus, errorType, errorMessage, errorCount, poweredOn)."""
        when = time.time() if at is None else at
        written = stamp(when)
        conditions = bmo_conditions(
            state,
            operational_status=str(status.get("operationalStatus") or "OK"),
            healthy=healthy,
            power_failure=power_failure,
            before=(self.obj.get("status") or {}).get("conditions") or (),
            at=when,
        )
        for op in ended:
            self.history.setdefault(op, {})["end"] = written
        for op in started:
            self.history[op] = {"start": written}
        body = {
            "apiVersion": BAREMETALHOSTS.api_version,
            "kind": BAREMETALHOSTS.kind,
            "metadata": {
                "name": self.obj["metadata"]["name"],
                "namespace": self.obj["metadata"]["namespace"],
                "resourceVersion": self.obj["metadata"]["resourceVersion"],
            },
            "status": {
                "provisioning": {"state": state, "ID": "", "bootMode": "UEFI"},
                "operationalStatus": "OK",
                "errorMessage": "",
                "errorCount": 0,
                "poweredOn": False,
                "lastUpdated": written,
                "operationHistory": {op: dict(times) for op, times in self.history.items()},
                "conditions": conditions,
                **status,
            },
        }
        self.obj = self.cluster.update_status(BAREMETALHOSTS, body)
        return self.obj

    def claim(self, kind: str, namespace: str, name: str) -> Obj:
        """Set ``spec.consumerRef``, as cluster-api-provider-metal3 does for a Machine."""
        ref = {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": kind,
               "namespace": namespace, "name": name}  # fmt: skip
        return self._patch_spec({"consumerRef": ref})

    def set_image(self, image: dict[str, Any]) -> Obj:
        """Set ``spec.image``, as cluster-api-provider-metal3 does for the Machine it
        provisions the host for."""
        return self._patch_spec({"image": image})

    def release(self) -> Obj:
        return self._patch_spec({"consumerRef": None})

    def _patch_spec(self, spec: dict[str, Any]) -> Obj:
        meta = self.obj["metadata"]
        self.obj = self.cluster.patch(
            BAREMETALHOSTS, meta["namespace"], meta["name"], {"spec": spec}
        )
        return self.obj
