"""Which Host a Node runs on.

In order of trust:

1. ``spec.providerID`` naming a Host (or an observed BareMetalHost): metal3's
   ``metal3://<namespace>/<host>/<machine>`` (cluster-api-provider-metal3), its older
   ``metal3://<uid of the BareMetalHost>``, and OpenShift's
   ``baremetalhost:///<namespace>/<host>[/<uid>]`` (machine-api);
2. the label ``hoststate.io/host`` on the Node: ``<namespace>/<host>``, or the Host's
   name alone when that name is unique among the Hosts;
3. only when the operator opts in (``--link-nodes-by-hostname``): the Node's hostname
   (the ``kubernetes.io/hostname`` label, else its name) equal to the name of exactly
   one Host.

The first two are written by whoever set the Node up (a cluster-api provider, the
machine-api, an operator); the third is a name a tenant can give any Host, so by
default it proves nothing: a Host named like a Node would take that Node's update
and drain story. A key named by the first two counts only when that Host exists;
else the next rule is asked. A link by name (a bare label, or the hostname) is kept
while its Host exists, however many Hosts of that name appear elsewhere later: a
second Host of the same name does not take the Node away. A Node that names none
(or names one ambiguously) is followed on its own, with a HostState of its own in
the controller's namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .signals import NodeSignals

PROVIDER_PREFIXES = ("metal3://", "baremetalhost:///")
# ``hosts_named`` is asked for this and a UID to find the machine of that UID: no name
# has a colon, so a Host named like a UID cannot answer for it
UID = "uid:"


def host_of(
    node: NodeSignals,
    hosts_named: Callable[[str], Iterable[str]],
    *,
    by_hostname: bool = False,
    current: str | None = None,
) -> str | None:
    """The key (``namespace/name``) of the Host ``node`` runs on, or None.

    ``hosts_named(name)`` gives the keys of the existing Hosts with that name (and
    ``hosts_named(UID + uid)`` the one with that UID); ``current`` is the link the Node
    has now, kept by a link by name while it holds.
    """
    named = _provider_key(node)
    if named is not None and named in hosts_named(named.partition("/")[2]):
        return named
    uid = _provider_uid(node)
    if uid:
        with_uid = list(hosts_named(UID + uid))
        if len(with_uid) == 1:
            return with_uid[0]
    label = node.host_label
    if "/" in label:
        namespace, _, name = label.partition("/")
        if namespace and name and label in hosts_named(name):
            return label
    elif label:
        return _kept_or_unique(hosts_named(label), current)
    if not by_hostname:
        return None
    return _kept_or_unique(hosts_named(node.hostname or node.name), current)


def names_read(node: NodeSignals, *, by_hostname: bool = False) -> set[str]:
    """The Host names whose coming or going can change what :func:`host_of` answers."""
    names = {node.hostname or node.name} if by_hostname else set()
    named = _provider_key(node)
    if named is not None:
        names.add(named.partition("/")[2])
    uid = _provider_uid(node)
    if uid:
        names.add(UID + uid)
    if node.host_label:
        names.add(node.host_label.rpartition("/")[2])
    return names


def _provider_uid(node: NodeSignals) -> str:
    """The BareMetalHost UID of cluster-api-provider-metal3's older ``metal3://<uid>``."""
    rest = node.provider_id[len("metal3://") :]
    if node.provider_id.startswith("metal3://") and rest and "/" not in rest:
        return rest
    return ""


def _provider_key(node: NodeSignals) -> str | None:
    for prefix in PROVIDER_PREFIXES:
        if node.provider_id.startswith(prefix):
            parts = node.provider_id[len(prefix) :].split("/")
            if len(parts) >= 2 and parts[0] and parts[1]:
                return f"{parts[0]}/{parts[1]}"
    return None


def _kept_or_unique(keys: Iterable[str], current: str | None) -> str | None:
    found = list(keys)
    if current is not None and current in found:
        return current  # a link already made holds while its Host exists
    return found[0] if len(found) == 1 else None
