"""What a HostState says its machine is (``status.inventory``): the few facts a fleet is
grouped by, the same the ``hoststate_host_info`` series carries (books/inventory.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .base import StatusModel

LABEL_MAX = 64  # each value is a label value too: bounded alike


class InventoryShown(StatusModel):
    """The machine's vendor, model and BIOS version (from its inspection, or from its BMC
    once servicing read it), its Node's pool, what the HostState follows and who uses the
    host; a field is absent while it is not known."""

    vendor: Annotated[str, Field(max_length=LABEL_MAX)] = Field(
        default="", description="The system's manufacturer, as inspection reported it."
    )
    model: Annotated[str, Field(max_length=LABEL_MAX)] = Field(
        default="", description="The system's product name, as inspection reported it."
    )
    bios_version: Annotated[str, Field(max_length=LABEL_MAX)] = Field(
        default="",
        description="The BIOS version: the BMC's own report after servicing, else the "
        "inspection's.",
    )
    pool: Annotated[str, Field(max_length=LABEL_MAX)] = Field(
        default="", description="The node pool of the host's Node."
    )
    source: Literal["Host", "BareMetalHost", "Node"] = Field(
        description="What the HostState follows (as status.source)."
    )
    consumer: Annotated[str, Field(max_length=LABEL_MAX)] = Field(
        default="", description="Who uses the host, `Kind namespace/name`, cut to 64 characters."
    )
