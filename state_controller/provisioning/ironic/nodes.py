"""Ironic node fields from a Host, and a Host's facts from an Ironic node.

Pure functions, no requests. Node names are ``{namespace}~{name}`` (``~`` is allowed in
Ironic names, not in Kubernetes ones), so one namespace's nodes share a prefix. The
hardware type and ``driver_info`` follow the BMC address scheme (``ipmi://``,
``redfish+https://``, ``idrac-virtualmedia://`` …), as in metal3's baremetal-operator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..provisioner import HostData, HostView, default_meta_data
from ..results import failed
from .faults import Answer

Node = dict[str, Any]
PatchOps = list[dict[str, Any]]
NodeOverrides = Callable[[HostView], Mapping[str, Any]]

INVENTORY_VERSION = (1, 81)  # GET /v1/nodes/{id}/inventory
LIVE_ISO = "live-iso"  # spec.image.diskFormat of an image booted, not written

# What every read of a node asks for: what the operations decide on, nothing more.
NODE_FIELDS = ",".join(
    (
        "uuid",
        "name",
        "provision_state",
        "target_provision_state",
        "power_state",
        "target_power_state",
        "last_error",
        "reservation",
        "maintenance",
        "maintenance_reason",
        "fault",
        "instance_info",
        "provision_updated_at",
        "inspection_finished_at",
        "properties",
        "deploy_interface",
        "raid_interface",
        "extra",  # whose node it is: .ownership
    )
)


def node_name(host: HostView) -> str:
    """The Ironic node name of a host: ``{namespace}~{name}``."""
    return node_name_prefix(host.namespace) + host.name


def node_name_prefix(namespace: str) -> str:
    """What the names of all Ironic nodes of one namespace's hosts start with."""
    return f"{namespace}~"


def new_node(
    host: HostView,
    *,
    driver: str | None,
    interfaces: Mapping[str, Any],
    overrides: NodeOverrides | None,
) -> Node:
    """The body of ``POST /v1/nodes`` for a host.

    ``driver`` forces a hardware type (else the BMC scheme picks it, with virtual-media
    boot where the scheme asks for it); ``interfaces`` and then ``overrides(host)`` are
    laid over the result.
    """
    properties: dict[str, Any] = {"capabilities": capabilities(host.boot_mode)}
    if host.architecture:
        properties["cpu_arch"] = host.architecture
    body: Node = {
        "name": node_name(host),
        "driver": driver or host.bmc.kind.driver,
        "driver_info": driver_info(host),
        "properties": properties,
        "automated_clean": host.automated_cleaning,
    }
    if host.disable_power_off:
        body["disable_power_off"] = True
    ramdisk_network = host.data.ramdisk_network_data if host.data is not None else None
    if ramdisk_network is not None:
        body["network_data"] = ramdisk_network
    if driver is None and host.bmc.kind.boot_interface:
        body["boot_interface"] = host.bmc.kind.boot_interface
    body.update(interfaces)
    if overrides is not None:
        body.update(overrides(host))
    return body


def driver_info(host: HostView) -> dict[str, Any]:
    """The node's ``driver_info`` from the BMC address and credentials (passwords included:
    this goes only into request bodies)."""
    bmc, creds = host.bmc, host.credentials
    verify = not host.disable_certificate_verification
    if bmc.kind.driver == "ipmi":  # ipmi and libvirt (a virtual BMC) alike
        return {
            "ipmi_address": bmc.host,
            "ipmi_port": bmc.port or 623,
            "ipmi_username": creds.username,
            "ipmi_password": creds.password,
        }
    port = f":{bmc.port}" if bmc.port else ""
    info = {
        "redfish_address": f"{bmc.transport}://{bmc.host}{port}",
        "redfish_username": creds.username,
        "redfish_password": creds.password,
        "redfish_verify_ca": verify,
    }
    if bmc.path and bmc.path != "/":
        info["redfish_system_id"] = bmc.path
    return info


def driver_info_patch(host: HostView) -> PatchOps:
    """The JSON patch that gives a node the host's current BMC settings and credentials."""
    return [
        {"op": "add", "path": f"/driver_info/{key}", "value": value}
        for key, value in driver_info(host).items()
    ]


def capabilities(boot_mode: str) -> str:
    """The node's ``properties.capabilities`` for ``spec.bootMode``."""
    if boot_mode == "legacy":
        return "boot_mode:bios"
    if boot_mode == "UEFISecureBoot":
        return "boot_mode:uefi,secure_boot:true"
    return "boot_mode:uefi"


_HINT_KEYS = {
    "deviceName": "name",
    "hctl": "hctl",
    "model": "model",
    "vendor": "vendor",
    "serialNumber": "serial",
    "wwn": "wwn",
    "rotational": "rotational",
}


def root_device(hints: Mapping[str, Any] | None) -> dict[str, Any]:
    """Ironic's ``properties.root_device`` from ``spec.rootDeviceHints``."""
    out: dict[str, Any] = {}
    for key, value in (hints or {}).items():
        if value is None:
            continue
        if key == "minSizeGigabytes":
            out["size"] = f">= {value}"
        elif key in _HINT_KEYS:
            out[_HINT_KEYS[key]] = value
    return out


def instance_info(image: Mapping[str, Any] | None) -> dict[str, Any]:
    """The node's ``instance_info`` from ``spec.image``: source, checksum, disk format.

    A ``live-iso`` image is booted, not written (BMO's meaning): its URL is the node's
    ``boot_iso``, with no source or checksum, for the ``ramdisk`` deploy
    (:func:`deploy_patch`), which boots it as virtual media where the BMC has it.

    A checksum file's URL goes in ``image_checksum`` whatever its type: Ironic fetches a
    URL only from there, takes ``image_os_hash_value`` literally and first (Ironic 39,
    ``checksum_utils.get_checksum_and_algo``), and tells sha256 from sha512 by the length
    of what it fetched. So does an md5 (or unspecified) checksum; a sha256 or sha512 one
    goes in ``image_os_hash_algo``/``_value``.
    """
    info: dict[str, Any] = {}
    image = image or {}
    if image.get("url") and image.get("diskFormat") == LIVE_ISO:
        return {"boot_iso": image["url"]}
    if image.get("url"):
        info["image_source"] = image["url"]
        checksum = image.get("checksum")
        kind = image.get("checksumType") or "auto"
        if checksum and (kind in ("md5", "auto") or checksum.startswith(("http://", "https://"))):
            info["image_checksum"] = checksum
        elif checksum:
            info["image_os_hash_algo"] = kind
            info["image_os_hash_value"] = checksum
        if image.get("diskFormat"):
            info["image_disk_format"] = image["diskFormat"]
    return info


def deploy_patch(
    host: HostView, *, deploy_interface: str | None = None, configured: str | None = None
) -> PatchOps:
    """The JSON patch that tells a node what to deploy and where: ``[]`` when the host
    says neither (nothing to write).

    A live ISO gets the ``ramdisk`` deploy interface, a custom deploy ``custom-agent``
    (its step runs in the deploy ramdisk; :func:`custom_deploy_steps`). Any other image
    takes a node whose ``deploy_interface`` is one of these (set for an earlier deploy)
    back to ``configured``, the one hoststate gives new nodes, or to Ironic's default
    when none is configured: as baremetal-operator does, else the next image would be
    booted instead of written.
    """
    info = instance_info(host.image)
    if (pull := host.data.image_pull_secret if host.data else None) and "image_source" in info:
        info["image_pull_secret"] = pull  # read for an oci:// image only; as BMO sends it
    ops: PatchOps = [{"op": "add", "path": "/instance_info", "value": info}]
    if host.custom_deploy:
        ops.append({"op": "add", "path": "/deploy_interface", "value": CUSTOM_DEPLOY_INTERFACE})
        return ops
    if "boot_iso" in info:
        ops.append({"op": "add", "path": "/deploy_interface", "value": "ramdisk"})
    elif deploy_interface in TAKEN_BACK and configured != deploy_interface:
        if configured:
            ops.append({"op": "add", "path": "/deploy_interface", "value": configured})
        else:
            ops.append({"op": "remove", "path": "/deploy_interface"})
    hints = root_device(host.root_device_hints)
    if hints:
        ops.append({"op": "add", "path": "/properties/root_device", "value": hints})
    return ops if info or hints else []


CUSTOM_DEPLOY_INTERFACE = "custom-agent"
TAKEN_BACK = ("ramdisk", CUSTOM_DEPLOY_INTERFACE)  # set per deploy, undone by the next
CUSTOM_DEPLOY_VERSION = (1, 69)  # deploy_steps in a provision-state request
CUSTOM_DEPLOY_PRIORITY = 80  # after the agent's own early deploy steps, as BMO runs it


def custom_deploy_steps(host: HostView, version: tuple[int, int]) -> list[dict[str, Any]] | None:
    """The deploy steps of ``spec.customDeploy`` (None without one): its method as a step
    of the deploy interface, with no arguments. An Ironic older than API 1.69 takes no
    deploy steps: refused naming the field."""
    if not host.custom_deploy:
        return None
    if version < CUSTOM_DEPLOY_VERSION:
        raise Answer(
            failed(
                f"spec.customDeploy needs Ironic API 1.{CUSTOM_DEPLOY_VERSION[1]} or newer, "
                f"and Ironic offers 1.{version[1]}"
            )
        )
    step = {"interface": "deploy", "step": host.custom_deploy, "args": {}}
    return [{**step, "priority": CUSTOM_DEPLOY_PRIORITY}]


def powered(node: Node) -> bool | None:
    """True/False for a node powered on/off; None when Ironic does not know."""
    state = node.get("power_state")
    if state == "power on":
        return True
    if state == "power off":
        return False
    return None


def deployed_image(node: Node) -> str | None:
    """The image an ``active`` node runs ("" if Ironic does not say); None if not deployed."""
    if node.get("provision_state") != "active":
        return None
    info = node.get("instance_info") or {}
    return str(info.get("image_source") or info.get("boot_iso") or "")


def hardware_from_inventory(inventory: Mapping[str, Any]) -> dict[str, Any]:
    """An Ironic (IPA) inventory as Host.status.hardware."""
    if not inventory:
        return {}
    cpu = inventory.get("cpu") or {}
    memory = inventory.get("memory") or {}
    vendor = inventory.get("system_vendor") or {}
    bios = vendor.get("firmware") or {}  # IPA's SystemFirmware: vendor, version, build_date
    return {
        "systemVendor": {
            k: str(v)
            for k, v in (
                ("manufacturer", vendor.get("manufacturer")),
                ("productName", vendor.get("product_name")),
                ("serialNumber", vendor.get("serial_number")),
            )
            if v
        },
        "cpu": {
            "arch": str(cpu.get("architecture") or ""),
            "model": str(cpu.get("model_name") or ""),
            "count": int(cpu.get("count") or 0),
        },
        "ramMebibytes": int(memory.get("physical_mb") or 0),
        "nics": [
            {
                "name": str(nic.get("name") or ""),
                "mac": str(nic.get("mac_address") or ""),
                "ip": str(nic.get("ipv4_address") or nic.get("ipv6_address") or ""),
                "speedGbps": int((nic.get("speed_mbps") or 0) // 1000),
            }
            for nic in inventory.get("interfaces") or []
        ],
        "storage": [
            {
                "name": str(disk.get("name") or ""),
                "sizeBytes": int(disk.get("size") or 0),
                "rotational": bool(disk.get("rotational")),
            }
            for disk in inventory.get("disks") or []
        ],
        "hostname": str(inventory.get("hostname") or ""),
        "firmware": {
            "bios": {
                "date": str(bios.get("build_date") or ""),
                "vendor": str(bios.get("vendor") or ""),
                "version": str(bios.get("version") or ""),
            }
        },
    }


def hardware_from_properties(properties: Mapping[str, Any]) -> dict[str, Any]:
    """What Ironic's node properties tell (no inventory, e.g. fake inspection): maybe {}."""
    out: dict[str, Any] = {}
    if properties.get("cpu_arch") or properties.get("cpus"):
        out["cpu"] = {
            "arch": str(properties.get("cpu_arch") or ""),
            "count": int(properties.get("cpus") or 0),
        }
    if properties.get("memory_mb"):
        out["ramMebibytes"] = int(properties["memory_mb"])
    return out


CONFIG_DRIVE_VERSION = (1, 56)  # a config drive given as JSON, built by Ironic
NETWORK_DATA_VERSION = (1, 66)  # node.network_data: the deploy ramdisk's network
DISABLE_POWER_OFF_VERSION = (1, 95)  # node.disable_power_off


def config_drive(host: HostView, version: tuple[int, int]) -> dict[str, Any] | None:
    """The config drive to deploy ``host`` with, as JSON that Ironic builds the drive
    from: the Host's data, with :func:`default_meta_data` when it gives no meta data (as
    baremetal-operator: every deploy gets a drive naming the host).

    Ironic older than API 1.56 takes only a built drive image: a Host that gives data is
    refused in the user's terms rather than sending what Ironic would reject; one that
    gives none is deployed without a drive. So is a live ISO that is given none: as
    baremetal-operator, whose live ISOs never get a drive (many BMCs offer one virtual
    media slot, which the ISO takes)."""
    data = host.data if host.data is not None and host.data.for_the_drive else None
    live_iso = (host.image or {}).get("diskFormat") == LIVE_ISO
    if data is None and (live_iso or version < CONFIG_DRIVE_VERSION):
        return None
    if version < CONFIG_DRIVE_VERSION:
        raise Answer(
            failed(
                f"Ironic offers API 1.{version[1]}, which takes no config drive as JSON; "
                "spec.userData, spec.networkData and spec.metaData need Ironic API 1.56 "
                "(Ironic 13.0, Train) or newer"
            )
        )
    return (data or HostData()).config_drive(default_meta_data(host))


def unsupported_node_fields(host: HostView, version: tuple[int, int]) -> str:
    """Why Ironic at API ``version`` cannot take this host's node as the spec asks
    (the field and the version it needs), or ""."""
    needs = []
    if host.disable_power_off and version < DISABLE_POWER_OFF_VERSION:
        needs.append(("spec.disablePowerOff", DISABLE_POWER_OFF_VERSION))
    ramdisk_network = host.data.ramdisk_network_data if host.data is not None else None
    if ramdisk_network is not None and version < NETWORK_DATA_VERSION:
        needs.append(("spec.preprovisioningNetworkDataName", NETWORK_DATA_VERSION))
    return "; ".join(
        f"{field} needs Ironic API 1.{need[1]} or newer, and Ironic offers 1.{version[1]}"
        for field, need in needs
    )
