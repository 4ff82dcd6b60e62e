"""What Ironic's out-of-band *servicing* steps need of sushy-tools' fake driver: a BIOS,
firmware versions, a SimpleUpdate that names no target, and RAID volumes. Imported by
testbed/sushy_hardware.py (the emulator's launcher), in the emulator's own interpreter;
each patch replaces what sushy-tools 2.2.0 lacks, measured against Ironic 39.0.0:

* BIOS (``bios.apply_configuration``, ``bios.factory_reset``, ``GET /v1/nodes/{id}/bios``):
  the fake driver has no ``get_bios``, ``set_bios`` nor ``reset_bios``, so its systems have
  no ``Bios`` link; Ironic's ``redfish`` BIOS interface then lists no settings, and a step
  ends ``service failed``: "Redfish exception occurred. Error: Redfish BIOS factory reset
  failed for node <uuid>, because BIOS settings are not supported." Each system gets
  :data:`DEFAULT_BIOS`, whose names and types are those of the attribute registry the
  emulator serves itself (template ``bios_registry.json``, found by Ironic through
  ``/redfish/v1/Registries``): that is where ``bios?detail=True`` finds ``attribute_type``,
  ``allowable_values``, ``read_only``, ``lower_bound``/``upper_bound``, ``max_length``.
  ``NumCores`` (Integer 10..20) and ``SecureBootStatus`` are read-only there. Ironic checks
  values against that registry before it writes, and lets names it does not know through;
  this BMC answers those, and read-only ones, 400 ("unknown or read-only BIOS
  attribute(s)"), as real ones do. As on a real BMC, a PATCH of ``BIOS/Settings`` (and a
  ``Bios.ResetBios``) is pending, shown by ``BIOS/Settings`` (only the changed attributes),
  until the system next powers on (a reset, or off then on); ``BIOS`` shows the current
  values. The emulator itself serves both from one ``get_bios``, which applies a PATCH at
  once, so a step that never reboots would pass unnoticed. Ironic's ``apply_configuration``
  reboots the system, then polls (``[redfish] firmware_update_status_interval``) until the
  current values are those asked for.
* Firmware (``firmware.update``, ``GET /v1/nodes/{id}/firmware``): the fake driver has no
  ``get_versions``/``set_versions``, so the system shows no ``BiosVersion`` and the
  emulator's SimpleUpdate answers 500 "Failed fetching BIOS information". Each system starts
  at :data:`DEFAULT_VERSIONS`; the emulator's SimpleUpdate bumps the minor version ("1.0.0"
  -> "1.1.0") of every system it targets. The BMC's own version is a constant of the
  emulator's manager ("1.00"): a ``bmc`` update changes nothing there.
* SimpleUpdate without ``Targets``: Ironic sends ``Targets`` only when the BMC has more
  than one system; the emulator requires them and answers 400 "Missing ImageURI and/or
  Targets." (Ironic: "HTTP POST .../UpdateService/Actions/UpdateService.SimpleUpdate
  returned code 400. Base.1.0.GeneralError: Missing ImageURI and/or Targets."). With a
  single system, a request without them targets that system. The emulator never fetches
  ``ImageURI`` (nor does Ironic, whose ``[redfish] firmware_source`` ``http`` hands an http
  URL to the BMC as is): here the BMC downloads it first, as a real one does, and answers
  400 "could not download <url>: <reason>" when it cannot.
* RAID (``raid.apply_configuration``, ``raid.delete_configuration``): a POST to a Volumes
  collection answers 501 ("HTTP POST .../Storage/1/Volumes returned code 501.
  Base.1.0.GeneralError: Not implemented": the fake driver has no
  ``find_or_create_storage_volume``), the stored volume would keep neither ``RAIDType`` nor
  its drives (Ironic reads the RAID level back from ``RAIDType``), two volumes created in
  the same second would get the same ID, and a volume cannot be deleted (the route is GET
  only). Here a volume is created with the next free ``Id`` (``1``, ``2``, ...), keeps what
  Ironic posted (``Name``, ``RAIDType``, ``CapacityBytes``, ``Links.Drives``), is served
  with them and is deleted by ``DELETE``. The volumes live in the emulator's static volume
  store (``SUSHY_EMULATOR_VOLUMES``), which a restart of the emulator resets.

No import from the project: this runs in the emulator's virtualenv, not the project's.
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import flask  # type: ignore[import-not-found]
from sushy_tools import error  # type: ignore[import-not-found]
from sushy_tools.emulator import main  # type: ignore[import-not-found]
from sushy_tools.emulator.resources.systems.fakedriver import (  # type: ignore[import-not-found]
    FakeDriver,
)

#: Every system's BIOS until changed: the attributes of the emulator's registry.
DEFAULT_BIOS: dict[str, Any] = {
    "BootMode": "Uefi",
    "EmbeddedSata": "Raid",
    "L2Cache": "10x256 KB",
    "NicBoot1": "NetworkBoot",
    "NumCores": 10,
    "ProcTurboMode": "Enabled",
    "QuietBoot": True,
    "SecureBootStatus": "Enabled",
    "SerialNumber": "QPX12345",
    "SysPassword": "",
}
#: Read-only in the emulator's registry.
READ_ONLY = frozenset({"NumCores", "SecureBootStatus"})
#: Every system's firmware until updated.
DEFAULT_VERSIONS = {"BiosVersion": "1.0.0"}


def _system(driver: Any, identity: str) -> dict[str, Any]:
    system: dict[str, Any] = driver._get(driver.uuid(identity))
    return system


def get_bios(self: Any, identity: str) -> dict[str, Any]:
    """The current attributes (``BIOS``)."""
    return dict(_system(self, identity).get("bios") or DEFAULT_BIOS)


def pending_bios(driver: Any, identity: str) -> dict[str, Any]:
    """The attributes set since the last power-on (``BIOS/Settings``)."""
    return dict(_system(driver, identity).get("bios_pending") or {})


def set_bios(self: Any, identity: str, attributes: dict[str, Any]) -> None:
    refused = sorted(set(attributes) - set(DEFAULT_BIOS) | set(attributes) & READ_ONLY)
    if refused:
        raise error.BadRequest(f"unknown or read-only BIOS attribute(s): {', '.join(refused)}")
    pending = {**pending_bios(self, identity), **attributes}
    self._update(_system(self, identity), bios_pending=pending)


def reset_bios(self: Any, identity: str) -> None:
    self._update(_system(self, identity), bios_pending=dict(DEFAULT_BIOS))


_update_if_needed = FakeDriver._update_if_needed


def update_if_needed(self: Any, system: dict[str, Any]) -> dict[str, Any]:
    """The fake driver's lazy power change (on the next read of the system); a power-on
    applies the pending BIOS attributes."""
    power = system.get("pending_power")
    due = power is not None and time.time() >= power["apply_time"]
    system = _update_if_needed(self, system)
    if due and system.get("power_state") == "On" and system.get("bios_pending"):
        current = system.get("bios") or DEFAULT_BIOS
        self._update(system, bios={**current, **system["bios_pending"]}, bios_pending={})
    return system


def get_versions(self: Any, identity: str) -> dict[str, str]:
    return dict(_system(self, identity).get("versions") or DEFAULT_VERSIONS)


def set_versions(self: Any, identity: str, firmware_versions: dict[str, str]) -> None:
    versions = {**get_versions(self, identity), **firmware_versions}
    self._update(_system(self, identity), versions=versions)


def reset_versions(self: Any, identity: str) -> None:
    self._update(_system(self, identity), versions=dict(DEFAULT_VERSIONS))


def find_or_create_storage_volume(self: Any, data: dict[str, Any]) -> str:
    """Every volume in the static store exists (the libvirt driver's would make one)."""
    return str(data["Id"])


for _method in (get_bios, set_bios, reset_bios, get_versions, set_versions, reset_versions):
    setattr(FakeDriver, _method.__name__, _method)
FakeDriver.find_or_create_storage_volume = find_or_create_storage_volume
FakeDriver._update_if_needed = update_if_needed

# -- routes -----------------------------------------------------------------------------

_app = main.app
_simple_update = _app.view_functions["UpdateService.update_service_simple_update"]
_volumes_collection = _app.view_functions["volumes_collection"]
_volume = _app.view_functions["volume"]
_bios_settings = _app.view_functions["bios_settings"]


def bios_settings(identity: str) -> Any:
    """GET serves the pending attributes; PATCH is the emulator's (``set_bios``)."""
    if flask.request.method != "GET":
        return _bios_settings(identity=identity)
    pending = json.dumps(pending_bios(_app.systems, identity), sort_keys=True)
    body = _app.render_template(
        "bios_settings.json", identity=identity, bios_pending_attributes=pending
    )
    return flask.Response(body, content_type="application/json")


def simple_update() -> Any:
    """The emulator's SimpleUpdate, once the image is downloaded; without ``Targets`` on a
    one-system BMC, that system."""
    body = flask.request.get_json(silent=True)
    if not isinstance(body, dict):
        raise error.BadRequest("SimpleUpdate needs a JSON object")
    systems = _app.systems.systems
    if not body.get("Targets") and len(systems) == 1:
        body["Targets"] = [f"/redfish/v1/Systems/{systems[0]}"]  # the request's cached JSON
    if body.get("ImageURI"):
        try:
            with urllib.request.urlopen(body["ImageURI"], timeout=10) as image:
                image.read()
        except (OSError, ValueError) as e:
            raise error.BadRequest(f"could not download {body['ImageURI']}: {e}") from e
    return _simple_update()


def _volume_url(identity: str, storage_id: str, volume_id: str) -> str:
    return f"/redfish/v1/Systems/{identity}/Storage/{storage_id}/Volumes/{volume_id}"


def _volume_json(identity: str, storage_id: str, volume: dict[str, Any]) -> flask.Response:
    body = {
        "@odata.type": "#Volume.v1_6_0.Volume",
        "@odata.id": _volume_url(identity, storage_id, volume["Id"]),
        "Id": volume["Id"],
        "Name": volume.get("Name") or volume["Id"],
        "Status": {"State": "Enabled", "Health": "OK"},
        "RAIDType": volume.get("RAIDType"),
        "CapacityBytes": volume.get("CapacityBytes") or 0,
        "Links": {"Drives": volume.get("Drives") or []},
    }
    return flask.Response(json.dumps(body), content_type="application/json")


def volumes_collection(identity: str, storage_id: str) -> Any:
    """POST creates a volume that keeps what was asked; GET is the emulator's."""
    if flask.request.method != "POST":
        return _volumes_collection(identity=identity, storage_id=storage_id)
    body = flask.request.get_json(silent=True) or {}
    uuid = _app.systems.uuid(identity)
    existing = _app.volumes.get_volumes_col(uuid, storage_id) or []
    taken = [int(v["Id"]) for v in existing if str(v["Id"]).isdigit()]
    volume_id = str(max(taken, default=0) + 1)
    volume = {
        "Id": volume_id,
        "Name": body.get("Name"),
        "RAIDType": body.get("RAIDType"),
        "CapacityBytes": body.get("CapacityBytes"),
        "Drives": (body.get("Links") or {}).get("Drives") or [],
    }
    _app.volumes.add_volume(uuid, storage_id, volume)
    response = _volume_json(identity, storage_id, volume)
    response.status_code = 201
    response.headers["Location"] = _volume_url(identity, storage_id, volume_id)
    return response


def volume(identity: str, stg_id: str, vol_id: str) -> Any:
    """GET serves a volume with its RAID type and drives; DELETE deletes it."""
    uuid = _app.systems.uuid(identity)
    for found in _app.volumes.get_volumes_col(uuid, stg_id) or []:
        if found["Id"] != vol_id:
            continue
        if flask.request.method == "DELETE":
            _app.volumes.delete_volume(uuid, stg_id, found)
            return flask.Response(status=204)
        return _volume_json(identity, stg_id, found)
    return _volume(identity=identity, stg_id=stg_id, vol_id=vol_id)  # the emulator's 404


_app.view_functions["UpdateService.update_service_simple_update"] = simple_update
_app.view_functions["bios_settings"] = bios_settings
_app.view_functions["volumes_collection"] = volumes_collection
_app.view_functions["volume"] = volume
_app.add_url_rule(
    "/redfish/v1/Systems/<identity>/Storage/<stg_id>/Volumes/<vol_id>",
    "volume_delete",
    volume,
    methods=["DELETE"],
)
