"""The small subset of kubectl's JSONPath that printer columns use.

Supports ``.a.b``, ``[N]`` and ``[?(@.key=="value")]`` — enough to evaluate
every column in :mod:`state_controller.api.columns` exactly as kubectl does.
"""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(r'\.([A-Za-z0-9_-]+)|\[(\d+)\]|\[\?\(@\.([A-Za-z0-9_-]+)=="([^"]*)"\)\]')


def evaluate(obj: Any, path: str) -> list[Any]:
    """All values ``path`` selects in ``obj`` (kubectl prints them comma-joined)."""
    current: list[Any] = [obj]
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None:
            raise ValueError(f"unsupported JSONPath {path!r} at {path[pos:]!r}")
        pos = m.end()
        field, index, key, value = m.groups()
        nxt: list[Any] = []
        for item in current:
            if field is not None and isinstance(item, dict) and field in item:
                nxt.append(item[field])
            elif index is not None and isinstance(item, list) and int(index) < len(item):
                nxt.append(item[int(index)])
            elif key is not None and isinstance(item, list):
                nxt.extend(e for e in item if isinstance(e, dict) and str(e.get(key)) == value)
        current = nxt
    return current
