"""baremetal-operator played by a test: a BareMetalHost whose status is written as BMO
writes it (its documented states, operationalStatus, errors and operationHistory), through
the status subresource of BMO's own CRD on a real kube-apiserver, or the embedded store."""

from __future__ import annotations

import time
from typing import Any

from state_controller.api.objects import Obj
from state_controller.cluster.interface import BAREMETALHOSTS, Cluster

IMAGE = {"url": "http://images.example/os.qcow2", "checksum": "0" * 64, "checksumType": "sha256"}


def _stamp(at: float) -> str:
    """metav1.Time as BMO writes it: whole seconds, UTC."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


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
        **status: Any,
    ) -> Obj:
        """Write the status BMO would write on entering ``state``: the operations
        ``started`` and ``ended`` now (or ``at``) in operationHistory, and any other status
        field given (operationalStatus, errorType, errorMessage, errorCount, poweredOn)."""
        stamp = _stamp(time.time() if at is None else at)
        for op in ended:
            self.history.setdefault(op, {})["end"] = stamp
        for op in started:
            self.history[op] = {"start": stamp}
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
                "lastUpdated": stamp,
                "operationHistory": {op: dict(times) for op, times in self.history.items()},
                **status,
            },
        }
        self.obj = self.cluster.update_status(BAREMETALHOSTS, body)
        return self.obj
