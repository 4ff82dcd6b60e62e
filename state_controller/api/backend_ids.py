"""The ID a backend gives a host (``status.provisioning.id``): checked before any use.

It is read back from Host.status, or from the ``hoststate.io/status`` annotation that
whoever may annotate a Host can write, and it goes into a URL path
(``/v1/nodes/{id}``). Ironic's IDs are UUIDs, its node names RFC 3986's unreserved
characters (``ironic.common.utils.is_valid_logical_name``): letters, digits, ``.``,
``_``, ``~`` and ``-``, at most 255; the simulated backend's are UUIDs. Anything else
(``/``, ``?``, ``%``, a space) is refused, and so are ``.`` and ``..``, the dot segments
urllib3 resolves (``/v1/nodes/../ports`` is sent as ``/v1/ports``).
"""

from __future__ import annotations

import re

ID_MAX = 255
_ID = re.compile(rf"[A-Za-z0-9._~-]{{1,{ID_MAX}}}")
ID_FIX = (
    "a UUID or an Ironic node name (letters, digits, '.', '_', '~' and '-', at most "
    f"{ID_MAX}, not '.' or '..')"
)


def id_problem(value: str, field: str) -> str | None:
    """None for an ID that may go into a URL path; else why not, naming ``field``."""
    if _ID.fullmatch(value) is not None and value.strip("."):
        return None
    shown = value if len(value) <= 80 else value[:79] + "…"
    return f"{field} {shown!r} is not a backend ID: it must be {ID_FIX}"
