"""``state-controller demo``: a simulated fleet on the embedded cluster, provisioned and
then updated, watched live (see :mod:`.run`)."""

from .run import DemoOptions, run_demo

__all__ = ["DemoOptions", "run_demo"]
