"""Make the target able to hold the hosts: their CRDs and namespaces, created when missing."""

from __future__ import annotations

import time
from collections.abc import Iterable

from ..api import crds
from ..cluster.interface import AlreadyExists, Cluster, NotFound, Resource

CRDS = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
NAMESPACES = Resource("", "v1", "Namespace", "namespaces", namespaced=False)


class TargetError(RuntimeError):
    """The target cannot take the hosts; the message says what is missing."""


def ensure_crds(target: Cluster, timeout: float = 60.0) -> list[str]:
    """Install the project's CRDs the target lacks and wait until they serve; their names."""
    created = []
    for crd in crds.generate().values():
        name = crd["metadata"]["name"]
        try:
            target.get(CRDS, None, name)
        except NotFound:
            try:
                target.create(CRDS, crd)
                created.append(name)
            except AlreadyExists:
                pass
    for name in created:
        _wait_established(target, name, timeout)
    return created


def _wait_established(target: Cluster, name: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        crd = target.get(CRDS, None, name)
        conditions = (crd.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            return
        if time.monotonic() > deadline:
            raise TargetError(f"CRD {name} was created but not Established after {timeout:g}s")
        time.sleep(0.1)


def ensure_namespaces(target: Cluster, namespaces: Iterable[str]) -> list[str]:
    """Create the namespaces the hosts live in, when the target lacks them; their names."""
    created = []
    for namespace in sorted(set(namespaces)):
        try:
            target.get(NAMESPACES, None, namespace)
        except NotFound:
            try:
                target.create(NAMESPACES, {"metadata": {"name": namespace}})
                created.append(namespace)
            except AlreadyExists:
                pass
    return created
