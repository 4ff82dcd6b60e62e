"""``state-controller demo``: a simulated fleet on the embedded cluster, provisioned and
then updated, watched live (see :mod:`.run`)."""

from .fleet import IMAGE, create_fleet, host_manifest, secret_manifest
from .run import DemoOptions, run_demo

__all__ = [
    "IMAGE",
    "DemoOptions",
    "create_fleet",
    "host_manifest",
    "run_demo",
    "secret_manifest",
]
