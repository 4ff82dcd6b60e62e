"""A health rollup a test can change on sushy-tools' fake systems: imported by
testbed/sushy_hardware.py (the emulator's launcher), in the emulator's own interpreter.

Why: sushy-tools 2.2.0's ``system.json`` template writes ``"Status": {"Health": "OK",
"HealthRollUp": "OK"}`` for every system, always, so a BMC reporting failing hardware
cannot be shown. Here a system's ``Status.Health`` (and the template's ``HealthRollUp``)
are what the JSON file named by the config key ``SUSHY_EMULATOR_HEALTH_FILE`` says for
its UUID (``{"<uuid>": "Critical"}``; written by ``RedfishBMC.set_health``), read at
every GET of the system, as a BMC reports what its sensors say now; a system not in it
stays OK.
Ironic 39.0.0 reads that ``Status.Health`` into the node's ``health`` field at its power
sync (``ironic/drivers/modules/redfish/management.py`` ``get_node_health``).

No import from the project: this runs in the emulator's virtualenv, not the project's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sushy_tools.emulator import main  # type: ignore[import-not-found]

_render = main.app.render_template


def _health_of(uuid: str) -> str | None:
    path = main.app.config.get("SUSHY_EMULATOR_HEALTH_FILE")
    if not path or not Path(path).is_file():
        return None
    said: dict[str, str] = json.loads(Path(path).read_text() or "{}")
    return said.get(uuid)


def render_template(template_name: str, /, **params: Any) -> Any:
    """The emulator's own rendering; a system's health from the health file."""
    text = _render(template_name, **params)
    if template_name != "system.json":
        return text
    health = _health_of(str(params.get("uuid") or ""))
    if health is None:
        return text
    system = json.loads(text)
    status = system.setdefault("Status", {})
    status.update(
        {key: health for key in ("Health", "HealthRollUp") if key == "Health" or key in status}
    )
    return json.dumps(system)


main.app.render_template = render_template
