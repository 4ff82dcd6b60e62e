"""Which disk is meant: baremetal-operator's root device hints, used by ``spec.rootDeviceHints``
and by a software RAID volume's ``physicalDisks``."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .base import Count, SpecModel

_HINT = Field(max_length=256)


class RootDeviceHints(SpecModel):
    device_name: Annotated[str, _HINT] | None = None
    hctl: Annotated[str, _HINT] | None = None
    model: Annotated[str, _HINT] | None = None
    vendor: Annotated[str, _HINT] | None = None
    serial_number: Annotated[str, _HINT] | None = None
    min_size_gigabytes: Count | None = None
    wwn: Annotated[str, _HINT] | None = None
    rotational: bool | None = None
