"""Pivot: move Hosts with their Secrets and their books (HostStates) into a cluster,
from a bootstrap's state directory or from another cluster (see ``moves.py``)."""

from .command import PivotOptions, run_pivot
from .mover import PivotReport, pivot
from .moves import STEPS, Interrupted, Refused

__all__ = ["STEPS", "Interrupted", "PivotOptions", "PivotReport", "Refused", "pivot", "run_pivot"]
