"""The demo's fleet: Hosts with their BMC Secrets, created and (against Ironic) deleted."""

from __future__ import annotations

import base64
import contextlib
import sys
import time
from typing import Any

from ..api import API_VERSION
from ..api import annotations as ann
from ..cluster.interface import HOSTS, SECRETS, AlreadyExists, Cluster

IMAGE = {
    "url": "http://images.demo.example/os/rhcos-4.16.qcow2",
    "checksum": "http://images.demo.example/os/rhcos-4.16.qcow2.sha256sum",
    "checksumType": "sha256",
    "diskFormat": "qcow2",
}


def host_manifest(namespace: str, index: int, *, image: bool = True) -> dict[str, Any]:
    name = f"host-{index:04d}"
    spec: dict[str, Any] = {
        "bmc": {
            "address": f"redfish://bmc-{index:04d}.demo.example/redfish/v1/Systems/1",
            "credentialsName": f"{name}-bmc",
        },
        "bootMACAddress": "52:54:00:" + ":".join(f"{b:02x}" for b in index.to_bytes(3, "big")),
        "online": True,
    }
    if image:
        spec["image"] = dict(IMAGE)
    return {
        "apiVersion": API_VERSION,
        "kind": "Host",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def secret_manifest(namespace: str, name: str, username: str, password: str) -> dict[str, Any]:
    def b64(v: str) -> str:
        return base64.b64encode(v.encode()).decode()

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {ann.BMC_CREDENTIALS: "true"},  # the controller reads no other Secret
        },
        "type": "Opaque",
        "data": {"username": b64(username), "password": b64(password)},
    }


def create_fleet(cluster: Cluster, namespace: str, count: int, *, image: bool = True) -> list[str]:
    """The fleet's Hosts and Secrets; those a kept store (``demo --store``) holds already
    are left as they are, so a second run carries on with them."""
    keys = []
    for index in range(count):
        host = host_manifest(namespace, index, image=image)
        name = host["metadata"]["name"]
        secret = secret_manifest(namespace, f"{name}-bmc", "admin", f"pw-{index}")
        for resource, obj in ((SECRETS, secret), (HOSTS, host)):
            with contextlib.suppress(AlreadyExists):
                cluster.create(resource, obj)
        keys.append(f"{namespace}/{name}")
    return keys


def delete_fleet(cluster: Cluster, namespace: str, timeout: float) -> bool:
    """Delete the demo's hosts and wait until the controller let them go (True)."""
    hosts, _ = cluster.list(HOSTS, namespace)
    print(
        f"deleting {plural(len(hosts), 'host')} (their Ironic nodes go with them)", file=sys.stderr
    )
    began = time.monotonic()
    for host in hosts:
        cluster.delete(HOSTS, namespace, host["metadata"]["name"])
    deadline = time.monotonic() + timeout
    last = 0.0
    while True:
        left = len(cluster.list(HOSTS, namespace)[0])
        if left == 0:
            print(f"deleted in {time.monotonic() - began:.1f}s", file=sys.stderr)
            return True
        if time.monotonic() >= deadline:
            print(f"{plural(left, 'host')} still being deleted after {timeout:g}s", file=sys.stderr)
            return False
        if time.monotonic() - last >= 2:
            print(f"  {plural(left, 'host')} left", file=sys.stderr, flush=True)
            last = time.monotonic()
        time.sleep(0.25)


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
