"""``state-controller demo``: a simulated fleet on the embedded cluster, provisioned and
then updated, watched live (see :mod:`.run`)."""

from .options import DemoOptions
from .run import run_demo

__all__ = ["DemoOptions", "run_demo"]
