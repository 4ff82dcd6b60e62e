"""What the words a Node carries about its machine name: each ``spec.providerID`` form
and the ``metal3.io/uuid`` label, in one table.

The peers write them; hoststate only reads them, so each form is written down with the
source that writes it:

- ``metal3://<namespace>/<bmh>/<metal3machine>``: cluster-api-provider-metal3's form
  (``providerIDNew`` in ``baremetal/metal3machine_manager.go``, v1.13.2,
  ``getPossibleProviderIDs``), the one it sets on a Node that has none;
- ``metal3://<bmh uid>``: its older form (``providerIDLegacy``, same file), which it
  still accepts on a Node that has it (``docs/deployment_workflow.md``, v1.13.2: to be
  removed in v1.14);
- ``baremetalhost:///<namespace>/<bmh>/<bmh uid>``: OpenShift's machine-api
  (openshift/cluster-api-provider-baremetal,
  ``pkg/cloud/baremetal/actuators/machine/actuator.go``, ``providerIDForHost``);
- the label ``metal3.io/uuid=<bmh uid>``: cluster-api-provider-metal3's kubeadm
  templates have the kubelet set it from the metadata Ironic serves
  (``metal3.io/uuid={{ ds.meta_data.uuid }}``, ``examples/clusterctl-templates/``,
  v1.13.2); it finds the Node by it before the Node has a providerID
  (``SetProviderIDFromNodeLabel``, ``ProviderLabelPrefix``).

A form names the machine by ``namespace/name``, by UID, or by both (then the name
decides: the UID is another way to say the same machine). Adding a form is adding a row.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .signals import NodeSignals


class Part(StrEnum):
    """What one '/'-separated part of a form names."""

    NAMESPACE = "namespace"
    NAME = "name"  # the BareMetalHost's (or Host's) name
    UID = "uid"  # the BareMetalHost's (or Host's) metadata.uid
    MACHINE = "machine"  # the Metal3Machine's name: not the host's, read for nothing


class Field(StrEnum):
    """Where on the Node a form is written."""

    PROVIDER_ID = "spec.providerID"
    UUID_LABEL = 'metadata.labels["metal3.io/uuid"]'


@dataclass(frozen=True, slots=True)
class Form:
    field: Field
    prefix: str
    parts: tuple[Part, ...]
    writer: str  # who writes it, and where its source says so

    @property
    def sample(self) -> str:
        return self.prefix + "/".join(f"<{p}>" for p in self.parts)


FORMS: tuple[Form, ...] = (
    Form(
        Field.PROVIDER_ID,
        "metal3://",
        (Part.NAMESPACE, Part.NAME, Part.MACHINE),
        "cluster-api-provider-metal3 v1.13.2, baremetal/metal3machine_manager.go (providerIDNew)",
    ),
    Form(
        Field.PROVIDER_ID,
        "metal3://",
        (Part.UID,),
        "cluster-api-provider-metal3 v1.13.2, baremetal/metal3machine_manager.go "
        "(providerIDLegacy)",
    ),
    Form(
        Field.PROVIDER_ID,
        "baremetalhost:///",
        (Part.NAMESPACE, Part.NAME, Part.UID),
        "openshift/cluster-api-provider-baremetal, "
        "pkg/cloud/baremetal/actuators/machine/actuator.go (providerIDForHost)",
    ),
    Form(
        Field.UUID_LABEL,
        "",
        (Part.UID,),
        "cluster-api-provider-metal3 v1.13.2, examples/clusterctl-templates/ "
        "(metal3.io/uuid={{ ds.meta_data.uuid }})",
    ),
)


@dataclass(frozen=True, slots=True)
class Named:
    """The machine a Node's word names: its key (``namespace/name``) or its UID."""

    form: Form
    key: str = ""
    uid: str = ""


def value_of(node: NodeSignals, field: Field) -> str:
    return {Field.PROVIDER_ID: node.provider_id, Field.UUID_LABEL: node.metal3_uuid}[field]


def parse(value: str, form: Form) -> Named | None:
    """What ``value`` names when it is of ``form``; None when it is not."""
    if not value.startswith(form.prefix):
        return None
    parts = value[len(form.prefix) :].split("/")
    if len(parts) != len(form.parts) or not all(parts):
        return None
    said = dict(zip(form.parts, parts, strict=True))
    namespace, name = said.get(Part.NAMESPACE, ""), said.get(Part.NAME, "")
    return Named(form, key=f"{namespace}/{name}" if name else "", uid=said.get(Part.UID, ""))


def named_by(node: NodeSignals, field: Field) -> Named | None:
    """The machine the Node's ``field`` names, by the first form of the table it fits."""
    value = value_of(node, field)
    for form in FORMS:
        if form.field == field:
            named = parse(value, form)
            if named is not None:
                return named
    return None
