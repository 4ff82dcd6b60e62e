"""Servicing through Ironic: a provisioned (``active``) node's BIOS settings, firmware and
RAID changed by out-of-band service steps, and its firmware read back.

Ironic's servicing (API 1.87 and newer) is one request, ``PUT /v1/nodes/{id}/states/provision``
``{"target": "service", "service_steps": [...]}``; the node then goes ``servicing`` ->
``service wait`` -> ``active``, or ``service failed``. The steps used need no ramdisk (the
BMC does the work, as the ``redfish`` interfaces do): ``bios.apply_configuration``,
``firmware.update`` and ``raid.delete_configuration`` / ``raid.apply_configuration``.
Software RAID is the one in-band step: the ``agent`` RAID interface's
``raid.apply_configuration`` (deleting what is there first), run by the agent ramdisk that
Ironic boots for the run. Ironic changes an active node's interfaces only in maintenance,
so the node must already have that interface (the controller's node defaults), and the
agent offers no step that only deletes: both are refused before the request, naming the
fix.
Measured on Ironic 39.0.0 against sushy-tools (tests/ironic/test_redfish_servicing.py):

* a failed step leaves the node ``service failed``, powered off and in maintenance (fault
  ``service failure``); Ironic refuses ``abort`` while it is in maintenance, so the way back
  to ``active`` (which a new run needs) is to clear maintenance, then abort;
* a failed run's ``last_error`` is Ironic's frame then what the BMC or the firmware's
  server said: ``Node <uuid> failed step {'interface': 'firmware', ...}: <exception>``
  (a step that raised), or ``Firmware update failed for node <uuid>, firmware <url>.
  Error: <the BMC task's messages>`` (the BMC's task failed). The user's sentence
  (:func:`service_failure`) is chosen by the frame alone, so it is the same whether the
  URL's server answered, refused or timed out;
* the BIOS settings with their registry's schema are ``GET /v1/nodes/{id}/bios?detail=True``
  (API 1.74), the firmware components ``GET /v1/nodes/{id}/firmware`` (API 1.86).
"""

from __future__ import annotations

import re
from typing import Any

from ...api.servicing import HardwareRAIDVolume, ServiceStep, SoftwareRAIDVolume
from ...servicing.plan import ServicePlan, ServiceTask
from ..results import Result, complete, continuing, failed, retry_after
from .attempt import UUID, Attempt, node_path
from .client import Version
from .faults import INTERRUPTED, NOT_SHOWN, READ_MAX, Answer
from .memory import Memory
from .nodes import Node, root_device

SERVICE_VERSION: Version = (1, 87)
BIOS_DETAIL_VERSION: Version = (1, 74)
FIRMWARE_VERSION: Version = (1, 86)
RUNNING = ("servicing", "service wait")
STEP_OF_INTERFACE = {
    "bios": ServiceStep.APPLYING_SETTINGS,
    "firmware": ServiceStep.UPDATING_FIRMWARE,
    "raid": ServiceStep.CONFIGURING_RAID,
}
SCHEMA_FIELDS = {  # Ironic's name -> the name servicing/schema.py reads
    "attribute_type": "attributeType",
    "allowable_values": "allowableValues",
    "lower_bound": "lowerBound",
    "upper_bound": "upperBound",
    "read_only": "readOnly",
    "min_length": "minLength",
    "max_length": "maxLength",
}


FIRMWARE_FAILED = (
    "the BMC did not complete the firmware update; check the image at "
    "spec.firmwareUpdates[].url and that the BMC can fetch it (Ironic's words are in "
    "hoststate's log)"
)
# Ironic's own frame at the start of a failed run's last_error, and the user's sentence.
# Anchored at the start: what follows it quotes a remote server, which must choose nothing.
_SERVICE_FAILURES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"(?:Node \S+ failed step \{'interface': 'firmware'|"
            r"Firmware update failed for node \S+, firmware )"
        ),
        FIRMWARE_FAILED,
    ),
    (
        re.compile(r"Node \S+ failed step \{'interface': 'bios'"),
        "the BMC refused the firmware settings; check spec.firmwareSettings against what "
        "the HostState's status.firmware shows",
    ),
    (
        re.compile(r"Node \S+ failed step \{'interface': 'raid'"),
        "the RAID controller refused the volumes; check spec.raid against the host's disks",
    ),
)


def service_failure(last_error: str) -> str:
    """The user's sentence for a failed run: which step failed, by Ironic's frame, never
    what a server answered (a firmware URL's server may be any the Host's author named:
    "refused", "timed out" or a page would tell them whether it is there). Ironic's words
    are the result's details, for the operator's log."""
    for frame, sentence in _SERVICE_FAILURES:
        if frame.match(last_error, 0, READ_MAX):
            return sentence
    if INTERRUPTED in last_error[:READ_MAX]:
        return "Ironic restarted while the service run was under way"
    return NOT_SHOWN if last_error.strip() else "Ironic gave no reason"


def read_firmware(at: Attempt, node: Node) -> dict[str, Any]:
    """The node's BIOS settings (with their schema where Ironic has it) and components."""
    version = at.client.version()
    detail = "?detail=True" if version >= BIOS_DETAIL_VERSION else ""
    reply = at.request("GET", node_path(node["uuid"], UUID, f"/bios{detail}"), route="bios")
    settings: dict[str, Any] = {}
    for setting in (reply.data or {}).get("bios") or ():
        entry = {"value": setting.get("value")}
        entry.update({ours: setting[theirs] for theirs, ours in SCHEMA_FIELDS.items()
                      if setting.get(theirs) is not None})  # fmt: skip
        settings[str(setting.get("name"))] = entry
    components: list[dict[str, Any]] = []
    if version >= FIRMWARE_VERSION:
        path = node_path(node["uuid"], UUID, "/firmware")
        reply = at.request("GET", path, route="firmware")
        for component in (reply.data or {}).get("firmware") or ():
            version_now = component.get("current_version") or ""
            components.append({"component": component.get("component"), "version": version_now})
    return {"components": components, "settings": settings}


def service_steps(plan: ServicePlan) -> list[dict[str, Any]]:
    """The plan as Ironic's service steps, in order."""
    steps: list[dict[str, Any]] = []
    for task in plan.tasks:
        if task.step == ServiceStep.APPLYING_SETTINGS:
            settings = [{"name": name, "value": str(v)} for name, v in task.settings.items()]
            steps.append(_step("bios", "apply_configuration", settings=settings))
        elif task.step == ServiceStep.UPDATING_FIRMWARE and task.update is not None:
            update = {"component": task.update.component, "url": task.update.url}
            steps.append(_step("firmware", "update", settings=[update]))
        elif task.step == ServiceStep.CONFIGURING_RAID and task.software:
            disks = [_software_disk(v) for v in task.volumes]
            config = {"logical_disks": disks}
            steps.append(_step("raid", "apply_configuration", raid_config=config,
                               delete_existing=True))  # fmt: skip
        elif task.step == ServiceStep.CONFIGURING_RAID:
            steps.append(_step("raid", "delete_configuration"))
            if task.volumes:
                disks = [_logical_disk(v, root=i == 0) for i, v in enumerate(task.volumes)]
                steps.append(
                    _step("raid", "apply_configuration", raid_config={"logical_disks": disks})
                )
    return steps


def _step(interface: str, step: str, **args: Any) -> dict[str, Any]:
    return {"interface": interface, "step": step, "args": args}


def _software_disk(volume: HardwareRAIDVolume | SoftwareRAIDVolume) -> dict[str, Any]:
    """A Linux md volume in Ironic's words: controller ``software``, disks by their hints."""
    disk: dict[str, Any] = {
        "controller": "software",
        "size_gb": volume.size_gibibytes if volume.size_gibibytes is not None else "MAX",
        "raid_level": volume.level,
    }
    if isinstance(volume, SoftwareRAIDVolume) and volume.physical_disks:
        hints = [h.model_dump(by_alias=True, exclude_none=True) for h in volume.physical_disks]
        disk["physical_disks"] = [root_device(h) for h in hints]
    return disk


def software_raid_refusal(node: Node, plan: ServicePlan) -> str | None:
    """Why Ironic cannot run the plan's software RAID on this node, or None."""
    task = next((t for t in plan.tasks if t.software), None)
    if task is None:
        return None
    if not task.volumes:
        return (
            "spec.raid.softwareRAIDVolumes: Ironic's agent RAID interface cannot only delete "
            "software volumes on a running host (it can at preparation); name the volumes "
            "to build, or remove the field"
        )
    interface = node.get("raid_interface")
    if interface != "agent":
        return (
            f"spec.raid.softwareRAIDVolumes: software RAID needs Ironic's agent RAID interface "
            f"and node {node['name']} has {interface!r}; set raid_interface: agent in the "
            "controller's Ironic node defaults (Ironic changes an active node's interfaces "
            "only in maintenance)"
        )
    return None


def _logical_disk(volume: HardwareRAIDVolume | SoftwareRAIDVolume, *, root: bool) -> dict[str, Any]:
    """A volume in Ironic's words, as baremetal-operator writes it (the first is the root)."""
    disk: dict[str, Any] = {
        "size_gb": volume.size_gibibytes if volume.size_gibibytes is not None else "MAX",
        "raid_level": volume.level,
        "is_root_volume": root,
    }
    if not isinstance(volume, HardwareRAIDVolume):
        return disk
    if volume.name:
        disk["volume_name"] = volume.name
    if volume.rotational is not None:
        disk["disk_type"] = "hdd" if volume.rotational else "ssd"
    if volume.number_of_physical_disks is not None:
        disk["number_of_physical_disks"] = volume.number_of_physical_disks
    if volume.controller:
        disk["controller"] = volume.controller
    if volume.physical_disks:
        disk["physical_disks"] = list(volume.physical_disks)
    return disk


def service(
    at: Attempt, node: Node, plan: ServicePlan, memory: Memory, *, started: bool, poll: float
) -> Result:
    """Start the run (``started`` False), or answer where the run under way is."""
    uuid, state = node["uuid"], node["provision_state"]
    if state in RUNNING:
        step, done = _progress(at, node, plan)
        return continuing(poll, service_step=step, service_done=done)
    if state == "service failed":
        if started or memory.service_digest(uuid) == plan.digest:
            error = str(node.get("last_error") or "")
            return failed(service_failure(error), error)
        _recover(at, node)  # a new plan after a failed run: back to active first
        return retry_after(poll, "returning the node to active after its failed run")
    if state != "active":
        return failed(f"cannot service node {node['name']}: Ironic has it in state {state!r}")
    if started:
        memory.service_ended(uuid)
        return complete()  # our run ended while we looked away (or just now)
    if at.client.version() < SERVICE_VERSION:
        raise Answer(
            failed(
                f"servicing needs Ironic API 1.{SERVICE_VERSION[1]} or newer, and Ironic "
                f"offers 1.{at.client.version()[1]}; remove the servicing fields or upgrade"
            )
        )
    refusal = software_raid_refusal(node, plan)
    if refusal is not None:
        return failed(refusal)
    body = {"target": "service", "service_steps": service_steps(plan)}
    at.request("PUT", node_path(uuid, UUID, "/states/provision"), body, route="states/provision")
    memory.service_asked(uuid, plan.digest)
    return continuing(poll, service_step=plan.tasks[0].step, service_done=0)


def _progress(at: Attempt, node: Node, plan: ServicePlan) -> tuple[ServiceStep, int]:
    """The step under way, from the node's ``service_step``, and the plan's tasks done."""
    reply = at.request("GET", node_path(node["uuid"], UUID, "?fields=service_step"),
                       route="node")  # fmt: skip
    current = (reply.data or {}).get("service_step") or {}
    step = STEP_OF_INTERFACE.get(str(current.get("interface") or ""))
    if step is None:
        return ServiceStep.REBOOTING, len(plan.tasks)
    for index, task in enumerate(plan.tasks):
        same = step != ServiceStep.UPDATING_FIRMWARE or _same_update(task, current)
        if task.step == step and same:
            return step, index
    return step, 0


def _same_update(task: ServiceTask, current: dict[str, Any]) -> bool:
    settings = (current.get("args") or {}).get("settings") or [{}]
    return task.update is not None and settings[0].get("component") == task.update.component


def _recover(at: Attempt, node: Node) -> None:
    """``service failed`` -> ``active``: out of maintenance, then abort (Ironic refuses the
    abort while the node is in maintenance)."""
    uuid = node["uuid"]
    if node.get("maintenance"):
        at.request("DELETE", node_path(uuid, UUID, "/maintenance"), route="maintenance")
    at.request(
        "PUT", node_path(uuid, UUID, "/states/provision"), {"target": "abort"},
        route="states/provision",
    )  # fmt: skip
