"""Reading a metric in a test: a series that does not exist is a failure that names the
series of that family which do, never a zero (a renamed metric or label would otherwise
pass every ``== 0``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry


def sample(registry: CollectorRegistry, name: str, labels: dict[str, str] | None = None) -> float:
    """The value of the series ``name{labels}``; AssertionError when there is none."""
    value = registry.get_sample_value(name, labels or {})
    if value is not None:
        return value
    raise AssertionError(f"no series {name}{labels or {}}; {_what_exists(registry, name)}")


def absent(registry: CollectorRegistry, name: str, labels: dict[str, str] | None = None) -> bool:
    """Whether the series ``name{labels}`` is absent, for the series that must leave (a
    gauge of a state a host has left); its family must exist."""
    if registry.get_sample_value(name, labels or {}) is not None:
        return False
    if not any(s.name == name for m in registry.collect() for s in m.samples) and not any(
        name.startswith(m.name) for m in registry.collect()
    ):
        raise AssertionError(f"no metric family for {name}; {_what_exists(registry, name)}")
    return True


def _what_exists(registry: CollectorRegistry, name: str) -> str:
    series = [
        f"{s.name}{s.labels}" for m in registry.collect() for s in m.samples if s.name == name
    ]
    if series:
        shown = ", ".join(series[:8]) + (f" and {len(series) - 8} more" if len(series) > 8 else "")
        return f"the series of {name} are: {shown}"
    prefix = name.split("_")[0] + "_" + name.split("_")[1] if name.count("_") else name
    names = sorted({s.name for m in registry.collect() for s in m.samples})
    near = [n for n in names if n.startswith(prefix)][:12]
    return f"no series named {name} at all; names like it: {', '.join(near) or '(none)'}"
