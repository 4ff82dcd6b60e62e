"""Handing machines over from metal3's baremetal-operator to hoststate, nothing redeployed.

``state-controller adopt baremetalhosts`` takes BareMetalHosts one by one: it pauses
each in baremetal-operator for good, creates the hoststate Host with the same spec and
a status restored from the BareMetalHost's, and gives the Host the HostState that told
the BareMetalHost's story, so the history stays one. The controller then finds the
Ironic node baremetal-operator created (same Ironic, same ``namespace~name``) and goes
on from where it is. :mod:`.translate` reads a BareMetalHost as a Host,
:mod:`.ironic_node` checks its node, :mod:`.handover` holds the steps and
:mod:`.command` the command line's side.
"""

from __future__ import annotations

from .command import AdoptOptions, run_adopt
from .handover import Handover, Outcome

__all__ = ["AdoptOptions", "Handover", "Outcome", "run_adopt"]
