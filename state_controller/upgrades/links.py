"""Which Host a Node runs on.

In order of trust:

1. ``spec.providerID`` naming a Host: metal3's ``metal3://<namespace>/<host>/<machine>``
   (cluster-api-provider-metal3) and OpenShift's
   ``baremetalhost:///<namespace>/<host>[/<uid>]`` (machine-api);
2. the label ``hoststate.io/host`` on the Node: ``<namespace>/<host>``, or the Host's
   name alone when that name is unique among the Hosts;
3. the Node's hostname (the ``kubernetes.io/hostname`` label, else its name) equal to
   the name of exactly one Host.

A Node that names none (or names one ambiguously) is followed on its own, with a
HostState of its own in the controller's namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .signals import NodeSignals

PROVIDER_PREFIXES = ("metal3://", "baremetalhost:///")


def host_of(node: NodeSignals, hosts_named: Callable[[str], Iterable[str]]) -> str | None:
    """The key (``namespace/name``) of the Host ``node`` runs on, or None.

    ``hosts_named(name)`` gives the keys of the Hosts with that name.
    """
    for prefix in PROVIDER_PREFIXES:
        if node.provider_id.startswith(prefix):
            parts = node.provider_id[len(prefix) :].split("/")
            if len(parts) >= 2 and parts[0] and parts[1]:
                return f"{parts[0]}/{parts[1]}"
    label = node.host_label
    if "/" in label:
        namespace, _, name = label.partition("/")
        if namespace and name:
            return label
    elif label:
        return _unique(hosts_named(label))
    return _unique(hosts_named(node.hostname or node.name))


def _unique(keys: Iterable[str]) -> str | None:
    found = list(keys)
    return found[0] if len(found) == 1 else None
