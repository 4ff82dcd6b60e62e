"""Read YAML a tenant wrote into plain JSON values, within bounds fixed in advance.

Network and meta data come from Secrets a tenant writes and are parsed on the
controller's own threads, then written out as JSON (the data digest, the config drive).
YAML lets a short text stand for far more than itself, and each of these would crash or
starve the controller on every reconcile of that Host, and so for every other tenant too:

* anchors and aliases repeat a node wherever it is named: a few hundred bytes expand to
  hundreds of megabytes once written out;
* an alias inside its own anchor (``&a [*a]``) makes a value that contains itself, which
  JSON cannot write at all;
* deep nesting exceeds Python's recursion in the pure-Python parser, in copying and in
  writing out;
* explicit tags make values JSON has no type for (``!!binary``, ``!!set``), and keys that
  are not strings cannot be sorted beside those that are.

So a text is read only when it is at most :data:`TEXT_MAX` bytes; the value it stands for
is walked once, without recursion, sharing counted each time it is used, and taken only
when it is acyclic, nested at most :data:`DEPTH_MAX` deep, holds only JSON's types with
string keys, and is at most :data:`EXPANDED_MAX` bytes written out. The cost of any one
text is then bounded by those figures, whatever it holds (docs/security.md has the
measurements).

Numbers follow YAML 1.2's core schema and timestamps stay text, as baremetal-operator's
Go parser reads them: PyYAML's 1.1 rules read a MAC address such as 52:54:00:00:00:01 as
a base-60 integer and ``2001-12-14`` as a date, and would hand the OS something else than
was written. libyaml's parser is used where PyYAML has it (several times faster, and it
caps nesting itself).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import yaml

TEXT_MAX = 64 * 1024  # bytes of YAML or JSON text
EXPANDED_MAX = 256 * 1024  # bytes of the value written out as JSON, aliases expanded
DEPTH_MAX = 64  # containers within containers: copying and writing out recurse

_INT, _FLOAT = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BASE):  # type: ignore[misc]
    """Safe YAML with the core schema's numbers and no implicit timestamps."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag not in (_INT, _FLOAT, _TIMESTAMP)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    _INT, re.compile(r"^(?:[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+)$"), list("-+0123456789")
)
_Loader.add_implicit_resolver(
    _FLOAT,
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+.0123456789"),
)

TOO_LONG = f"is longer than {TEXT_MAX // 1024} KiB"
TOO_LARGE = (
    f"stands for more than {EXPANDED_MAX // 1024} KiB written out (each use of a YAML "
    "alias counts in full)"
)
CONTAINS_ITSELF = "contains itself through a YAML alias"
TOO_DEEP = f"nests lists and mappings more than {DEPTH_MAX} deep"
NOT_JSON = (
    "holds a value JSON has no type for (a !!binary, !!set or other tagged value, or a key "
    "that is not a string)"
)
NOT_YAML = "is not YAML or JSON"
_SCALARS = (str, int, float, bool, type(None))


class Loaded(NamedTuple):
    """What a text stands for (None when refused), why it is refused (a phrase that
    follows "the text ..."; none quotes the text, as a parser's own message would), and
    about how many bytes it is written out as JSON (0 when refused)."""

    value: Any
    problem: str | None
    size: int


def load(text: str) -> Loaded:
    """Read ``text`` within the bounds (see the module's docstring)."""
    if len(text.encode()) > TEXT_MAX:
        return Loaded(None, TOO_LONG, 0)
    try:
        value = yaml.load(text, Loader=_Loader)  # a SafeLoader's subclass
    except (yaml.YAMLError, RecursionError):
        return Loaded(None, NOT_YAML, 0)
    size, problem = _check(value)
    return Loaded(None, problem, 0) if problem else Loaded(value, None, size)


def _size(scalar: Any) -> int:
    """Bytes of a scalar written as JSON, close enough to bound: a string's UTF-8 bytes
    and its quotes, a number's digits."""
    if isinstance(scalar, str):
        return len(scalar.encode()) + 2
    return len(repr(scalar))


def _check(root: Any) -> tuple[int, str | None]:
    """The value's size written out, and why it is refused (or None): walked depth first
    with an explicit stack, each container once (its size and height kept by identity, so
    an alias costs a lookup however often it is used), a container met again while still
    open being one that contains itself."""
    done: dict[int, tuple[int, int]] = {}  # id -> (bytes written out, height)
    open_: set[int] = set()
    stack: list[tuple[Any, bool, int]] = [(root, False, 1)]
    while stack:
        node, closing, depth = stack.pop()
        if not isinstance(node, dict | list):
            if not isinstance(node, _SCALARS):
                return 0, NOT_JSON
            continue
        ident = id(node)
        if closing:
            open_.discard(ident)
            parts = [
                done[id(c)] if isinstance(c, dict | list) else (_size(c), 0)
                for c in _children(node)
            ]
            total = 2 + sum(size for size, _ in parts)
            if total > EXPANDED_MAX:
                return 0, TOO_LARGE
            done[ident] = (total, 1 + max((height for _, height in parts), default=0))
            continue
        if ident in done:
            if depth + done[ident][1] - 1 > DEPTH_MAX:  # used again, deeper than before
                return 0, TOO_DEEP
            continue
        if ident in open_:
            return 0, CONTAINS_ITSELF
        if depth > DEPTH_MAX:
            return 0, TOO_DEEP
        if isinstance(node, dict) and not all(isinstance(key, str) for key in node):
            return 0, NOT_JSON
        open_.add(ident)
        stack.append((node, True, depth))
        stack.extend((child, False, depth + 1) for child in _children(node))
    return (done[id(root)][0] if isinstance(root, dict | list) else _size(root)), None


def _children(node: dict[str, Any] | list[Any]) -> list[Any]:
    """A container's parts as JSON writes them: a mapping's keys and values, a list's items."""
    if isinstance(node, dict):
        return [part for pair in node.items() for part in pair]
    return node
