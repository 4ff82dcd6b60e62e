"""What the embedded store does with a Host or HostState before storing it: what the
API server does with the generated CRDs.

Unknown fields. The CRD schemas are closed, so the API server prunes every field
they do not declare, in spec and status alike. What else happens depends on the
request's ``fieldValidation``: ``Strict`` (kubectl's default, ``--validate=strict``)
fails the request naming each unknown field; ``Warn`` — the server's default when
the parameter is absent, as from the Python ``kubernetes`` client and this
controller — stores the object without them and names them in a ``Warning``
header; ``Ignore`` drops them silently (tests/cluster/test_api_schema.py shows all
three on a real kube-apiserver). The embedded store takes no ``fieldValidation``,
so it does what a request without one gets: the fields are dropped and the write
succeeds. It walks the generated CRD schema itself, the one the API server holds,
so both drop exactly the same fields.

Validation. The spec is then validated with the pydantic models the schema came
from; each constraint there carries the message its CEL rule carries in the CRD.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError

from ..api import crds
from ..api.controller_status import HostStateControllerSpec
from ..api.errors import describe
from ..api.host import HostSpec
from ..api.hoststate import HostStateSpec
from ..api.nodepool import NodePoolSpec
from ..api.objects import Obj
from .interface import CONTROLLERS, HOSTS, HOSTSTATES, NODEPOOLS, FieldCause, Invalid, Resource

Schema = dict[str, Any]


def prune(value: Any, schema: Schema) -> Any:
    """``value`` without what ``schema`` does not declare, as the API server prunes.

    Objects keep their declared properties (``additionalProperties`` declares every
    key), lists prune each item, and a ``null`` is dropped where the schema does not
    allow one (none of ours does). Values of the wrong type are left for validation.
    """
    return SchemaPruner(schema)(value)


class SchemaPruner:
    """:func:`prune` for one schema, compiled once.

    Every write to the embedded store is pruned; walking the schema dicts on each
    write, scalars included, would cost 70 calls a HostState status write, a third of
    the 10,000-host benchmark's time. Compiled, a value under a schema with
    nothing to prune (a string, a number, a free-form object) is taken as it is.
    """

    __slots__ = ("extra", "flat", "items", "keep_unknown", "leaf", "nullable", "properties")

    def __init__(self, schema: Schema) -> None:
        self.properties = {k: SchemaPruner(v) for k, v in (schema.get("properties") or {}).items()}
        extra, items = schema.get("additionalProperties"), schema.get("items")
        self.extra = SchemaPruner(extra) if isinstance(extra, dict) else None
        self.items = SchemaPruner(items) if isinstance(items, dict) else None
        self.keep_unknown = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        self.nullable = bool(schema.get("nullable"))
        self.leaf = (
            not self.properties
            and self.extra is None
            and self.items is None
            and (self.keep_unknown or schema.get("type") != "object")
        )
        # An object of scalars only (a history entry, a condition): when it has no key
        # the schema lacks and no null, it is already what the API server would store.
        self.flat = bool(self.properties) and all(p.leaf for p in self.properties.values())

    def __call__(self, value: Any) -> Any:
        if self.leaf:
            return value
        if isinstance(value, dict):
            if self.flat and value.keys() <= self.properties.keys() and None not in value.values():
                return value
            out: dict[str, Any] = {}
            for key, item in value.items():
                sub = self.properties.get(key, self.extra)
                if item is None and not (sub is not None and sub.nullable):
                    continue
                if sub is not None:
                    out[key] = item if sub.leaf else sub(item)
                elif self.keep_unknown:
                    out[key] = item
            return out
        if isinstance(value, list) and self.items is not None:
            items = self.items
            if items.leaf:
                return value
            if items.flat:  # the history: checked inline, a call per entry costs more
                keys = items.properties.keys()
                return [
                    item
                    if type(item) is dict and item.keys() <= keys and None not in item.values()
                    else items(item)
                    for item in value
                ]
            return [items(item) for item in value]
        return value


class SchemaAdmission:
    """One resource's CRD schema (for pruning) and spec model (for validation)."""

    def __init__(self, kind: str, schema: Schema, spec: type[BaseModel]) -> None:
        self.kind = kind
        self.schema = schema
        self.spec = spec
        self._pruner = SchemaPruner(schema)

    def prune(self, obj: Obj) -> Obj:
        """The object as the API server stores it; ``metadata`` is the server's own
        business (ObjectMeta, not the CRD schema) and is kept as given."""
        pruned: Obj = self._pruner(obj)
        if "metadata" in obj:
            pruned["metadata"] = obj["metadata"]
        return pruned

    def __call__(self, obj: Obj) -> None:
        """Rejects an invalid spec with :class:`Invalid` naming each field and its fix."""
        spec = obj.get("spec")
        if spec is None:
            return
        name = obj.get("metadata", {}).get("name", "")
        if not isinstance(spec, dict):
            raise Invalid(
                f'{self.kind} "{name}" is invalid: spec must be an object',
                [FieldCause("spec", "must be an object")],
            )
        try:
            self.spec.model_validate(spec)
        except ValidationError as err:
            _, message = describe(err, self.spec, "spec")
            causes = [
                FieldCause(
                    "spec." + ".".join(str(p) for p in e["loc"]),
                    str(e["msg"]).removeprefix("Value error, "),
                )
                for e in err.errors()
            ]
            raise Invalid(f'{self.kind} "{name}" is invalid: {message}', causes) from None


@cache
def _schemas() -> dict[str, Schema]:
    """Kind -> the openAPIV3Schema of its generated CRD."""
    out = {}
    for crd in crds.generate().values():
        version = crd["spec"]["versions"][0]
        out[crd["spec"]["names"]["kind"]] = version["schema"]["openAPIV3Schema"]
    return out


def validators() -> dict[Resource, Callable[[Obj], None]]:
    return {
        HOSTS: SchemaAdmission("Host", _schemas()["Host"], HostSpec),
        HOSTSTATES: SchemaAdmission("HostState", _schemas()["HostState"], HostStateSpec),
        NODEPOOLS: SchemaAdmission("NodePool", _schemas()["NodePool"], NodePoolSpec),
        CONTROLLERS: SchemaAdmission(
            "HostStateController", _schemas()["HostStateController"], HostStateControllerSpec
        ),
    }
