"""Retiring a handed-over BareMetalHost: the commands that delete it with nothing done to
the machine, read from what baremetal-operator left on it.

After ``adopt`` the BareMetalHost stays, paused for good, so that the host can be given
back. Once it will not be, it can go; but baremetal-operator (v0.13.2) left three holds
on it and its objects, and taking it away carelessly costs the Host its machine or its
credentials:

- its finalizer ``baremetalhost.metal3.io``: baremetal-operator removes it only in its
  own deletion (``actionDeleting``, ``internal/controller/metal3.io/
  baremetalhost_controller.go``), after ``prov.Delete`` has removed the Ironic node the
  Host now drives. While the ``baremetalhost.metal3.io/paused`` annotation is there, its
  ``Reconcile`` returns before any of that ("host is paused, no work to do"), so the
  deletion waits for ever unless the finalizer is taken off by hand; the pause must stay
  until the object is gone. (The ``detached`` annotation is no way out here: it acts only
  unpaused, and its ``Detach`` deletes the Ironic node too, ``pkg/provisioner/ironic/
  ironic.go``.)
- the Secrets it claimed (``pkg/secretutils/secret_manager.go``, ``claimSecret``): an
  ownerReference to the BareMetalHost on the BMC Secret (with the finalizer
  ``baremetalhost.metal3.io/secret``) and on the preprovisioning network data Secret.
  The garbage collector deletes a Secret whose owners are all gone: the Host's BMC
  credentials would go with the BareMetalHost. Both are taken off first.
- its HardwareData (same name), owned by it, with the finalizer
  ``baremetalhost.metal3.io/hardwareData``, which it removes only while reconciling a
  deletion (``reconcileHostData``, after the pause check): taken off, the garbage
  collector deletes it with its owner. The Host keeps the hardware in its own status.

The HostState is the Host's since the handover's ``hoststate`` step, so it stays, and
its history with it. :func:`retirement` writes nothing: it prints the commands, each
keeping every owner and finalizer that is not baremetal-operator's.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..api import annotations as ann
from ..api.baremetalhost import PAUSED
from ..api.objects import Obj
from ..cluster.interface import BAREMETALHOSTS, HOSTS, SECRETS, Cluster, NotFound, Resource

FINALIZER = "baremetalhost.metal3.io"  # apis/metal3.io/v1alpha1/baremetalhost_types.go
SECRET_FINALIZER = FINALIZER + "/secret"  # pkg/secretutils/secret_manager.go
HARDWARE_DATA_FINALIZER = FINALIZER + "/hardwareData"  # baremetalhost_controller.go
HARDWAREDATA = Resource("metal3.io", "v1alpha1", "HardwareData", "hardwaredata", has_status=False)
# the Secrets a BareMetalHost claims as their owner: the field naming each
OWNED_SECRETS = ("bmc.credentialsName", "preprovisioningNetworkDataName")


@dataclass
class Retirement:
    """The commands for one BareMetalHost, or why it is not to be retired."""

    key: str
    commands: list[str] = field(default_factory=list)
    refusal: str = ""

    def text(self) -> str:
        if self.refusal:
            return f"{self.key}: not retired: {self.refusal}"
        return "\n".join(
            [f"# {self.key}: handed over; to delete its BareMetalHost:", *self.commands]
        )


def retirement(cluster: Cluster, namespace: str, name: str) -> Retirement:
    """What retires the BareMetalHost ``namespace/name``: read only, nothing written."""
    out = Retirement(f"{namespace}/{name}")
    try:
        bmh = cluster.get(BAREMETALHOSTS, namespace, name)
    except NotFound:
        out.refusal = "no such BareMetalHost"
        return out
    out.refusal = _refusal(cluster, bmh)
    if out.refusal:
        return out
    uid = bmh["metadata"]["uid"]
    for secret in _claimed_secrets(cluster, bmh):
        owners = [o for o in secret["metadata"].get("ownerReferences") or () if o.get("uid") != uid]
        finalizers = [
            f for f in secret["metadata"].get("finalizers") or () if f != SECRET_FINALIZER
        ]
        patch = {"ownerReferences": owners or None, "finalizers": finalizers or None}
        out.commands.append(_patch("secret", secret, patch))
    hardware = _get(cluster, HARDWAREDATA, namespace, name)
    if hardware is not None and HARDWARE_DATA_FINALIZER in (
        hardware["metadata"].get("finalizers") or ()
    ):
        left = [f for f in hardware["metadata"]["finalizers"] if f != HARDWARE_DATA_FINALIZER]
        out.commands.append(_patch("hardwaredata", hardware, {"finalizers": left or None}))
    left = [f for f in bmh["metadata"].get("finalizers") or () if f != FINALIZER]
    out.commands.append(_patch("bmh", bmh, {"finalizers": left or None}))
    out.commands.append(f"kubectl delete bmh {shlex.quote(name)} -n {shlex.quote(namespace)}")
    return out


def _refusal(cluster: Cluster, bmh: Obj) -> str:
    """Why this BareMetalHost is not one ``adopt`` handed over to a Host that has it now."""
    meta = bmh["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    notes = meta.get("annotations") or {}
    if ann.HANDED_OVER_TO not in notes:
        return f"not handed over (no {ann.HANDED_OVER_TO} annotation); run adopt first"
    if PAUSED not in notes:
        return (
            f"its {PAUSED} annotation is gone, so baremetal-operator acts on it again and "
            f"would deprovision it when deleted; pause it again first: kubectl annotate bmh "
            f"{name} -n {namespace} {PAUSED}=hoststate.io/adopt"
        )
    if (bmh.get("spec") or {}).get("consumerRef"):
        return (
            "spec.consumerRef: a Metal3Machine still uses it, and cluster-api-provider-metal3 "
            "finds its machine by it; delete it once that Metal3Machine is gone"
        )
    host = _get(cluster, HOSTS, namespace, name)
    if (
        host is None
        or (host["metadata"].get("annotations") or {}).get(ann.ADOPTED_FROM) != meta["uid"]
    ):
        return (
            f"no Host {namespace}/{name} adopted from it (annotation {ann.ADOPTED_FROM}); "
            "the machine would have no owner: run adopt again to finish the handover"
        )
    return ""


def _claimed_secrets(cluster: Cluster, bmh: Obj) -> list[Obj]:
    spec, uid = bmh.get("spec") or {}, bmh["metadata"]["uid"]
    names = {str(_field(spec, path)) for path in OWNED_SECRETS if _field(spec, path)}
    found = [_get(cluster, SECRETS, bmh["metadata"]["namespace"], n) for n in sorted(names)]
    return [
        s
        for s in found
        if s is not None
        and (
            any(o.get("uid") == uid for o in s["metadata"].get("ownerReferences") or ())
            or SECRET_FINALIZER in (s["metadata"].get("finalizers") or ())
        )
    ]


def _field(spec: dict[str, Any], path: str) -> Any:
    value: Any = spec
    for part in path.split("."):
        value = (value or {}).get(part) if isinstance(value, dict) else None
    return value


def _get(cluster: Cluster, resource: Resource, namespace: str, name: str) -> Obj | None:
    try:
        return cluster.get(resource, namespace, name)
    except NotFound:
        return None


def _patch(kind: str, obj: Obj, metadata: dict[str, Any]) -> str:
    meta = obj["metadata"]
    body = json.dumps({"metadata": metadata}, separators=(",", ":"))
    return (
        f"kubectl patch {kind} {shlex.quote(meta['name'])} -n {shlex.quote(meta['namespace'])} "
        f"--type merge -p {shlex.quote(body)}"
    )
