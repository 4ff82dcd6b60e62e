"""An API object as the API server sends and stores it: decoded JSON.

Every layer passes Hosts, HostStates, Secrets and Events in this one form
(``obj["metadata"]["name"]``); typed models are for parsing specs and
statuses, not for carrying objects around.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
