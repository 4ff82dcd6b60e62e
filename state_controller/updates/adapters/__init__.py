"""One small adapter per source of update signals; adding an update agent is adding one.

:data:`ADAPTERS` is asked in order; the first that claims a node reads it.
The kubelet adapter claims every node, so a node with no agent is still read.
"""

from __future__ import annotations

from ..signals import NodeSignals
from .agent import AgentAdapter
from .base import Adapter, DrainStatus, Reading, never_back
from .capi import CapiMachineAdapter
from .kubelet import KubeletAdapter
from .mcn import MachineConfigNodeAdapter
from .mco import MachineConfigAdapter

# A MachineConfigNode says more than the annotations the same operator keeps on the Node
ADAPTERS: tuple[Adapter, ...] = (
    MachineConfigNodeAdapter(),
    MachineConfigAdapter(),
    AgentAdapter(),
    CapiMachineAdapter(),  # an agent's annotations say more of the steps than the Machine
    KubeletAdapter(),
)

__all__ = ["ADAPTERS", "Adapter", "DrainStatus", "Reading", "adapter_for", "never_back"]


def adapter_for(node: NodeSignals) -> Adapter:
    return next(a for a in ADAPTERS if a.claims(node))
