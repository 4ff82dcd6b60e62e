"""The ``ironic`` backend: a real OpenStack Ironic driven through its REST API.

Its modules, each one concern:

* :mod:`.provisioner` — :class:`IronicProvisioner`, the provisioner protocol's front: each
  call one attempt, run by the operation of its kind of work;
* :mod:`.enrolling`, :mod:`.deploying`, :mod:`.powering`, :mod:`.servicing` — the
  operations by kind of work: registration, inspection and preparation; deploying,
  tearing down and adopting; power and reboots; servicing and firmware reads;
* :mod:`.node_work` — the steps those operations share, and what they keep between calls;
* :mod:`.attempt` — one provisioner call: the requests it makes about a host's node, and
  what it read and wrote;
* :mod:`.client` — the HTTP client: microversion, basic auth, credential rotation, what a
  status code means (and why plain HTTP rather than openstacksdk, measured);
* :mod:`.nodes` — Ironic node fields from a Host and a Host's facts from a node;
* :mod:`.states` — what a node's provision state means: busy, failed, in maintenance;
* :mod:`.faults` — Ironic's error texts read and turned into sentences for users;
* :mod:`.memory` — what the provisioner remembers between polls;
* :mod:`.settings` — the endpoint and credentials from the command line, checked.
"""

from .client import MIN_VERSION, PREFERRED_VERSION
from .nodes import node_name, node_name_prefix
from .provisioner import IronicProvisioner
from .settings import IronicSettings, load_ironic_settings

__all__ = [
    "MIN_VERSION",
    "PREFERRED_VERSION",
    "IronicProvisioner",
    "IronicSettings",
    "load_ironic_settings",
    "node_name",
    "node_name_prefix",
]
