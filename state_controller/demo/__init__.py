"""``state-controller demo``: a simulated fleet on the embedded cluster, provisioned and
then updated, watched live (see :mod:`.session`)."""

from .options import DemoOptions
from .session import run_demo

__all__ = ["DemoOptions", "run_demo"]
