"""Turn validation errors into messages that name the field and the fix."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from pydantic import BaseModel, ValidationError

from .bmc import ADDRESS_FIX
from .host import CHECKSUM_FIX, IMAGE_URL_FIX, MAC_FIX, SECRET_NAME_FIX

FIXES: dict[str, str] = {
    "image.checksum": CHECKSUM_FIX,
    "image.url": IMAGE_URL_FIX,
    "bmc.address": ADDRESS_FIX,
    "bmc.credentialsName": SECRET_NAME_FIX,
    "bootMACAddress": MAC_FIX,
}


def _fields(model: type[BaseModel]) -> dict[str, type[BaseModel] | None]:
    out: dict[str, type[BaseModel] | None] = {}
    for name, info in model.model_fields.items():
        sub = info.annotation
        nested = None
        for candidate in getattr(sub, "__args__", ()) or (sub,):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                nested = candidate
        out[info.alias or name] = nested
    return out


def _known_at(model: type[BaseModel], path: Iterable[str | int]) -> list[str]:
    current: type[BaseModel] | None = model
    for part in path:
        if current is None or not isinstance(part, str):
            return []
        current = _fields(current).get(part)
    return list(_fields(current)) if current is not None else []


def describe(err: ValidationError, model: type[BaseModel], prefix: str) -> tuple[str, str]:
    """(condition reason, message) for a failed validation of ``prefix`` (e.g. ``spec``)."""
    parts: list[str] = []
    reasons: set[str] = set()
    for e in err.errors():
        loc = [p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        dotted = ".".join(str(p) for p in loc)
        where = f"{prefix}.{dotted}" if dotted else prefix
        if e["type"] == "extra_forbidden":
            reasons.add("UnknownField")
            parent, name = loc[:-1], str(loc[-1])
            known = _known_at(model, parent)
            close = difflib.get_close_matches(name, known, n=1)
            hint = (
                f"did you mean {prefix}.{'.'.join(map(str, [*parent, close[0]]))}? "
                if close
                else ""
            )
            parts.append(f"{where} is not a known field; {hint}remove or rename it")
        elif e["type"] == "missing":
            reasons.add("MissingField")
            fix = FIXES.get(dotted, "set it")
            parts.append(f"{where} is required: {fix}")
        else:
            reasons.add("InvalidField")
            message = str(e["msg"]).removeprefix("Value error, ")
            advice = FIXES.get(dotted)
            if advice and advice not in message:
                message = f"{message}; {advice}"
            parts.append(f"{where}: {message}" if not message.startswith(where) else message)
    reason = "InvalidSpec" if len(reasons) != 1 else reasons.pop()
    return reason, "; ".join(parts)
