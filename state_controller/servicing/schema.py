"""Firmware settings checked against the schema the BMC reports, before anything is sent.

What the backend reports (``Provisioner.firmware``) is a mapping::

    {"components": [{"component": "bios", "version": "1.0.0"}, ...],
     "settings": {"ProcTurboMode": {"value": "Enabled", "attributeType": "Enumeration",
                                    "allowableValues": ["Enabled", "Disabled"],
                                    "readOnly": False}, ...}}

(Ironic's ``GET /v1/nodes/{id}/bios?detail=True`` and ``/firmware``, in its own words).
A setting the BMC does not have, cannot change, or would refuse is named with the fix
here, so the user reads "spec.firmwareSettings.NumCores: 128 is above the BMC's upper
bound 64" at once rather than a failed servicing run minutes later.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FIELD = "spec.firmwareSettings"


def settings_problem(wanted: Mapping[str, int | str], firmware: Mapping[str, Any]) -> str:
    """The first setting the BMC would refuse, named with the fix ("" when none is)."""
    known: Mapping[str, Any] = firmware.get("settings") or {}
    for name, value in sorted(wanted.items()):
        schema = known.get(name)
        if schema is None:
            near = sorted(n for n in known if n.lower() == name.lower())
            hint = f" (did you mean {near[0]}?)" if near else ""
            return f"{FIELD}.{name}: the BMC has no such setting{hint}; name one it reports"
        problem = _value_problem(value, schema)
        if problem:
            return f"{FIELD}.{name}: {problem}"
    return ""


def _value_problem(value: int | str, schema: Mapping[str, Any]) -> str:
    if schema.get("readOnly"):
        return "the BMC reports this setting read-only; remove it"
    kind = str(schema.get("attributeType") or "")
    if kind == "Enumeration":
        allowed = [str(v) for v in schema.get("allowableValues") or ()]
        if allowed and str(value) not in allowed:
            return f"{value!r} is not one of the values the BMC allows: {', '.join(allowed)}"
    elif kind == "Integer":
        number = _integer(value)
        if number is None:
            return f"{value!r} is not a whole number, which this setting takes"
        low, high = schema.get("lowerBound"), schema.get("upperBound")
        if low is not None and number < int(low):
            return f"{number} is below the BMC's lower bound {low}"
        if high is not None and number > int(high):
            return f"{number} is above the BMC's upper bound {high}"
    elif kind == "Boolean":
        if str(value).lower() not in ("true", "false"):
            return f"{value!r} is neither true nor false, which this setting takes"
    elif kind == "String":
        text = str(value)
        shortest, longest = schema.get("minLength"), schema.get("maxLength")
        if shortest is not None and len(text) < int(shortest):
            return f"shorter than the {shortest} characters the BMC asks for"
        if longest is not None and len(text) > int(longest):
            return f"longer than the {longest} characters the BMC allows"
    return ""


def _integer(value: int | str) -> int | None:
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except ValueError:
        return None


def shown(firmware: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
    """What the HostState shows of it: every component, the settings the spec names."""
    settings: Mapping[str, Any] = firmware.get("settings") or {}
    out_settings = []
    for name in sorted(names & set(settings)):
        schema = settings[name]
        entry: dict[str, Any] = {"name": name, "value": str(schema.get("value", ""))}
        for key in ("attributeType", "lowerBound", "upperBound"):
            if schema.get(key) is not None:
                entry[key] = schema[key]
        if schema.get("allowableValues"):
            entry["allowableValues"] = [str(v) for v in schema["allowableValues"]][:64]
        if schema.get("readOnly"):
            entry["readOnly"] = True
        out_settings.append(entry)
    return {
        "components": [
            {"component": str(c.get("component", "")), "version": str(c.get("version", ""))}
            for c in firmware.get("components") or ()
        ][:32],
        "settings": out_settings,
        "settingsCount": len(settings),
    }
