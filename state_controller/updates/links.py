"""Which Host a Node runs on.

In order of trust:

1. ``spec.providerID`` naming a Host: metal3's ``metal3://<namespace>/<host>/<machine>``
   (cluster-api-provider-metal3) and OpenShift's
   ``baremetalhost:///<namespace>/<host>[/<uid>]`` (machine-api);
2. the label ``hoststate.io/host`` on the Node: ``<namespace>/<host>``, or the Host's
   name alone when that name is unique among the Hosts;
3. the Node's hostname (the ``kubernetes.io/hostname`` label, else its name) equal to
   the name of exactly one Host.

A key named by the first two counts only when that Host exists; else the next
rule is asked. A Node that names none (or names one ambiguously) is followed on
its own, with a HostState of its own in the controller's namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .signals import NodeSignals

PROVIDER_PREFIXES = ("metal3://", "baremetalhost:///")


def host_of(node: NodeSignals, hosts_named: Callable[[str], Iterable[str]]) -> str | None:
    """The key (``namespace/name``) of the Host ``node`` runs on, or None.

    ``hosts_named(name)`` gives the keys of the existing Hosts with that name.
    """
    named = _provider_key(node)
    if named is not None and named in hosts_named(named.partition("/")[2]):
        return named
    label = node.host_label
    if "/" in label:
        namespace, _, name = label.partition("/")
        if namespace and name and label in hosts_named(name):
            return label
    elif label:
        return _unique(hosts_named(label))
    return _unique(hosts_named(node.hostname or node.name))


def names_read(node: NodeSignals) -> set[str]:
    """The Host names whose coming or going can change what :func:`host_of` answers."""
    names = {node.hostname or node.name}
    named = _provider_key(node)
    if named is not None:
        names.add(named.partition("/")[2])
    if node.host_label:
        names.add(node.host_label.rpartition("/")[2])
    return names


def _provider_key(node: NodeSignals) -> str | None:
    for prefix in PROVIDER_PREFIXES:
        if node.provider_id.startswith(prefix):
            parts = node.provider_id[len(prefix) :].split("/")
            if len(parts) >= 2 and parts[0] and parts[1]:
                return f"{parts[0]}/{parts[1]}"
    return None


def _unique(keys: Iterable[str]) -> str | None:
    found = list(keys)
    return found[0] if len(found) == 1 else None
