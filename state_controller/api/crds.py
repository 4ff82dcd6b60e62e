"""Generate structural CustomResourceDefinitions from the pydantic models.

The pydantic JSON schema is turned into the OpenAPI v3 subset Kubernetes
accepts for CRDs ("structural" schemas): references are inlined, optional
values lose their ``null`` branch, constants become enums, and titles go.

Every schema is closed: no ``x-kubernetes-preserve-unknown-fields``. The API
server then knows every field, so kubectl's default strict field validation
rejects a misspelt one by name, and a client that asks for no field validation
has it dropped (with a warning) instead of stored where nothing reads it. Every
list is ``atomic`` (one writer replaces it whole) unless its model says
otherwise, as conditions do (a map keyed by ``type``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from . import GROUP, VERSION
from .columns import (
    CONTROLLER_COLUMNS,
    HOST_COLUMNS,
    HOSTSTATE_COLUMNS,
    NODEPOOL_COLUMNS,
    Column,
)
from .controller_status import HostStateControllerSpec, HostStateControllerStatus
from .host import HostSpec
from .host_status import HostStatus
from .hoststate import HostStateSpec, HostStateStatus
from .nodepool import NodePoolSpec, NodePoolStatus

Schema = dict[str, Any]

_KEEP = {
    "type",
    "properties",
    "items",
    "required",
    "enum",
    "pattern",
    "maxLength",
    "minLength",
    "minimum",
    "maximum",
    "format",
    "description",
    "default",
    "additionalProperties",
    "maxProperties",
    "maxItems",
    "x-kubernetes-int-or-string",
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
}


CATEGORY = "hoststate-all"
"""``kubectl get hoststate-all -n NS``: Hosts, HostStates and NodePools at once."""

# Cluster API's clusterctl labels (sigs.k8s.io/cluster-api v1.14.2,
# cmd/clusterctl/api/v1alpha3/labels.go). `clusterctl move` reads only the CRDs that carry
# CLUSTERCTL (cmd/clusterctl/client/cluster/objectgraph.go, getCRDList): the objects of
# those kinds join its graph and move with what owns them (an object whose owner moves,
# moves). MOVE_HIERARCHY on a CRD, or on one object, moves every such object with all it
# owns, whoever owns it.
CLUSTERCTL = "clusterctl.cluster.x-k8s.io"
CLUSTERCTL_MOVE_HIERARCHY = CLUSTERCTL + "/move-hierarchy"
CLUSTERCTL_MOVE = CLUSTERCTL + "/move"

# The CRDs clusterctl discovers: a HostState moves with its Host or its BareMetalHost
# when that moves, and stays with its Node (a node-only one) since no Node ever moves.
# No kind is moved by force: a Host arrives without its status (the API server drops a
# created object's status), and a Host whose status is not restored would be registered,
# inspected and provisioned again, so a Host moves only when its owner does or when the
# user labels it (docs/cluster.md, "Moving with clusterctl"). NodePools and the
# HostStateController describe the cluster they are in: clusterctl never sees them.
CLUSTERCTL_LABELS: dict[str, dict[str, str]] = {
    "hosts": {CLUSTERCTL: ""},
    "hoststates": {CLUSTERCTL: ""},
}


def _resolve(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            target = defs[node["$ref"].rsplit("/", 1)[-1]]
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return _resolve(merged, defs)
        return {k: _resolve(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(v, defs) for v in node]
    return node


def _merge_any_of(node: Schema) -> Schema:
    branches = [b for b in node.pop("anyOf") if b.get("type") != "null"]
    if len(branches) == 1:
        return {**branches[0], **node}
    if sorted(b.get("type", "") for b in branches) == ["integer", "string"]:
        return {**node, "x-kubernetes-int-or-string": True}  # as IntOrString is written
    enums: list[Any] = []
    for b in branches:
        if "const" in b:
            enums.append(b["const"])
        elif "enum" in b:
            enums.extend(b["enum"])
        else:
            raise ValueError(f"cannot express union {branches} structurally")
    return {**node, "type": "string", "enum": enums}


def _structural(node: Schema, *, defaults: bool = True) -> Schema:
    if "anyOf" in node:
        node = _merge_any_of(dict(node))
    if "const" in node:
        node = {**node, "enum": [node["const"]]}
    if "patternProperties" in node:  # a map whose keys the model checks (with a CEL rule)
        node = dict(node)
        (value,) = node.pop("patternProperties").values()
        node["additionalProperties"] = value
    out: Schema = {k: v for k, v in node.items() if k in _KEEP}
    if out.get("default") is None or not defaults:
        out.pop("default", None)
    if "enum" in out:
        out.setdefault("type", "string")
    if "properties" in out:
        out["type"] = "object"
        out["properties"] = {
            name: _structural(sub, defaults=defaults) for name, sub in out["properties"].items()
        }
    if isinstance(out.get("additionalProperties"), bool):
        del out["additionalProperties"]  # structural schemas express "closed" by pruning
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = _structural(out["additionalProperties"], defaults=defaults)
    if "items" in out:
        out["items"] = _structural(out["items"], defaults=defaults)
        out.setdefault("x-kubernetes-list-type", "atomic")
    return out


def model_schema(model: type[BaseModel], *, defaults: bool = True) -> Schema:
    """The structural schema of a model; status schemas go without defaults (we write them)."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    return _structural(_resolve(raw, defs), defaults=defaults)


def _crd(
    *,
    kind: str,
    plural: str,
    short_names: list[str],
    spec: type[BaseModel],
    status: type[BaseModel],
    columns: tuple[Column, ...],
    description: str,
    scope: str = "Namespaced",
) -> dict[str, Any]:
    spec_schema = model_schema(spec)
    spec_schema["description"] = description
    if spec_schema.get("properties") == {}:
        # nothing to set: the API server stores no empty map, and a schema it would
        # store differently makes every client-side apply of the CRD a change
        del spec_schema["properties"]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}", **_labels(plural)},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short_names,
                # not "hoststate": a category named like a kind's singular makes
                # `kubectl get hoststate NAME` fetch every kind of the category
                "categories": [CATEGORY],
            },
            "scope": scope,
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [c.crd() for c in columns],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec_schema,
                                "status": model_schema(status, defaults=False),
                            },
                        }
                    },
                }
            ],
        },
    }


def _labels(plural: str) -> dict[str, dict[str, str]]:
    labels = CLUSTERCTL_LABELS.get(plural)
    return {"labels": dict(labels)} if labels else {}


def generate() -> dict[str, dict[str, Any]]:
    """File name -> CRD object, for every resource of the API."""
    host = _crd(
        kind="Host",
        plural="hosts",
        short_names=["hst"],
        spec=HostSpec,
        status=HostStatus,
        columns=HOST_COLUMNS,
        description="What the operator wants of one physical machine.",
    )
    hoststate = _crd(
        kind="HostState",
        plural="hoststates",
        short_names=["hs"],
        spec=HostStateSpec,
        status=HostStateStatus,
        columns=HOSTSTATE_COLUMNS,
        description="Which host (and node) this state reports on; set by the controller.",
    )
    nodepool = _crd(
        kind="NodePool",
        plural="nodepools",
        # not "np" nor "nps": HyperShift's NodePool (hypershift.openshift.io) has them, and
        # kubectl would pick one of the two kinds by its discovery order (docs/versioning.md)
        short_names=["hsnp"],
        spec=NodePoolSpec,
        status=NodePoolStatus,
        columns=NODEPOOL_COLUMNS,
        description="Which label makes this pool; set by the controller.",
        scope="Cluster",
    )
    controller = _crd(
        kind="HostStateController",
        plural="hoststatecontrollers",
        short_names=["hsc"],
        spec=HostStateControllerSpec,
        status=HostStateControllerStatus,
        columns=CONTROLLER_COLUMNS,
        description="Nothing: the controller creates it and writes its status.",
        scope="Cluster",
    )
    return {
        f"{GROUP}_hosts.yaml": host,
        f"{GROUP}_hoststates.yaml": hoststate,
        f"{GROUP}_nodepools.yaml": nodepool,
        f"{GROUP}_hoststatecontrollers.yaml": controller,
    }


HEADER = "# Generated by `state-controller gen crds` from state_controller/api; do not edit.\n"


def render(crd: dict[str, Any]) -> str:
    return HEADER + yaml.safe_dump(crd, sort_keys=False, width=100)


def render_kustomization() -> str:
    """``api/kustomization.yaml``: the CRDs as a kustomize base for manifests/.

    It sits above ``v1alpha1/`` rather than in it, so that ``kubectl apply -f
    api/v1alpha1/`` finds only CRDs (kubectl would try to apply a kustomization file
    as an object, and fail); kustomize refuses files outside a kustomization's root,
    hence a base here rather than paths from manifests/.
    """
    body = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [f"{VERSION}/{name}" for name in generate()],
    }
    return HEADER + yaml.safe_dump(body, sort_keys=False, width=100)


CHART_LABELS = {"app.kubernetes.io/name": "hoststate", "app.kubernetes.io/part-of": "hoststate"}
"""What the kustomize installs add to every object (manifests/base/kustomization.yaml),
less ``managed-by``, which Helm writes itself: the chart's CRDs carry them as they are."""


def render_chart(name: str, crd: dict[str, Any]) -> str:
    """A CRD as the Helm chart's ``crds/`` holds it: Helm never templates that folder,
    so the labels the kustomize installs give are written in."""
    labelled = {**crd, "metadata": dict(crd["metadata"])}
    labelled["metadata"]["labels"] = {**crd["metadata"].get("labels", {}), **CHART_LABELS}
    header = (
        f"# {API_DIR}/{VERSION}/{name} (generated by `state-controller gen crds`) with the\n"
        "# labels the kustomize installs give it. Helm installs what is in crds/ before the\n"
        "# templates, never templates it, never upgrades it and never deletes it\n"
        '# (docs/helm.md, "CRDs"); tests/install/test_chart.py fails when it differs from\n'
        "# what `kubectl kustomize manifests/` renders.\n"
    )
    return header + yaml.safe_dump(labelled, sort_keys=False, width=100)


API_DIR = "api"
CHART_CRDS_DIR = "charts/hoststate/crds"


def write_chart(root: Path) -> list[Path]:
    """Writes the Helm chart's copies, ``root/charts/hoststate/crds/<crd>.yaml``."""
    directory = root / CHART_CRDS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, crd in generate().items():
        path = directory / name
        path.write_text(render_chart(name, crd))
        written.append(path)
    return written


def write(root: Path) -> list[Path]:
    """Writes ``root/v1alpha1/<crd>.yaml`` and ``root/kustomization.yaml``."""
    directory = root / VERSION
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, crd in generate().items():
        path = directory / name
        path.write_text(render(crd))
        written.append(path)
    kustomization = root / "kustomization.yaml"
    kustomization.write_text(render_kustomization())
    written.append(kustomization)
    return written
