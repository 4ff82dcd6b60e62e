"""Validation the embedded store applies, matching what the CRD schema enforces.

The real API server validates Hosts against the generated CRD; the embedded
store does the same from the same pydantic models. Unknown fields pass here
as they pass the CRD (which preserves them in spec): the controller names
them in a condition instead.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError

from ..api.errors import describe
from ..api.host import HostSpec
from ..api.objects import Obj
from .interface import HOSTS, FieldCause, Invalid, Resource


def validate_host(obj: Obj) -> None:
    spec = obj.get("spec")
    if spec is None:
        return
    if not isinstance(spec, dict):
        raise Invalid("Host.spec must be an object", [FieldCause("spec", "must be an object")])
    try:
        HostSpec.model_validate(spec)
    except ValidationError as err:
        kept = [e for e in err.errors() if e["type"] != "extra_forbidden"]
        if not kept:
            return
        narrowed = ValidationError.from_exception_data(err.title, kept)  # type: ignore[arg-type]
        _, message = describe(narrowed, HostSpec, "spec")
        name = obj.get("metadata", {}).get("name", "")
        causes = [
            FieldCause("spec." + ".".join(str(p) for p in e["loc"]), str(e["msg"])) for e in kept
        ]
        raise Invalid(f'Host "{name}" is invalid: {message}', causes) from None


def validators() -> dict[Resource, Callable[[Obj], None]]:
    return {HOSTS: validate_host}
