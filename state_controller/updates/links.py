"""Which Host a Node runs on.

In order of trust:

1. ``spec.providerID`` naming a Host (or an observed BareMetalHost): metal3's
   ``metal3://<namespace>/<host>/<machine>`` (cluster-api-provider-metal3), its older
   ``metal3://<uid of the BareMetalHost>``, and OpenShift's
   ``baremetalhost:///<namespace>/<host>[/<uid>]`` (machine-api);
2. the labels ``hoststate.io/host=<host>`` and ``hoststate.io/host-namespace=<namespace>``
   on the Node (a label value cannot hold a '/'; ``hoststate.io/host=<namespace>/<host>``
   is read too where a store takes it). ``hoststate.io/host`` alone names a Host of the
   controller's one watched namespace (``run --namespace`` given once), and nothing when
   it watches several: a name alone proves nothing across namespaces, since any tenant
   may give a Host any name (:func:`link_problem` says what to write instead);
3. only when the operator opts in (``--link-nodes-by-hostname``): the Node's hostname
   (the ``kubernetes.io/hostname`` label, else its name) equal to the name of exactly
   one Host.

The first claim a Node makes decides alone: a providerID of metal3's forms is never
passed over for a label, nor a label for the hostname, even while the Host it names does
not exist (it was deleted to be created again; it belongs to another shard). So the
answer is one key, or none, wherever it is asked, and no other Host takes the Node
meanwhile. The first two are written by whoever set the Node up (a cluster-api
provider, the machine-api, an operator), though a kubelet may write its own Node's
labels too: :mod:`..runtime.indexes.nodes` keeps how each link was made, for remediation
to ask. The third is a name a tenant can give any Host, so by default it proves
nothing; a link by hostname is kept while its Host exists, however many Hosts of that
name appear elsewhere later. A Node that names none is followed on its own, with a
HostState of its own in the controller's namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .signals import NodeSignals

PROVIDER_PREFIXES = ("metal3://", "baremetalhost:///")
# how a link was made (:func:`claim_of`)
BY_PROVIDER, BY_LABEL, BY_HOSTNAME = "providerID", "label", "hostname"
# ``hosts_named`` is asked for this and a UID to find the machine of that UID: no name
# has a colon, so a Host named like a UID cannot answer for it
UID = "uid:"


def host_of(
    node: NodeSignals,
    hosts_named: Callable[[str], Iterable[str]],
    *,
    by_hostname: bool = False,
    current: str | None = None,
    home: str = "",
) -> str | None:
    """The key (``namespace/name``) of the Host ``node`` runs on, or None.

    ``hosts_named(name)`` gives the keys of the existing Hosts with that name (and
    ``hosts_named(UID + uid)`` the one with that UID); ``current`` is the link the Node
    has now, kept by a link by hostname while it holds; ``home`` the namespace a bare
    ``hoststate.io/host`` label names a Host of ("": none).
    """
    how = claim_of(node, by_hostname=by_hostname)
    if how == BY_PROVIDER:
        named = _provider_key(node)
        if named is not None:
            return named if named in hosts_named(named.partition("/")[2]) else None
        with_uid = list(hosts_named(UID + _provider_uid(node)))
        return with_uid[0] if len(with_uid) == 1 else None
    if how == BY_LABEL:
        key = label_key(node.host_label, home)
        return key if key and key in hosts_named(key.partition("/")[2]) else None
    if how == BY_HOSTNAME:
        return _kept_or_unique(hosts_named(node.hostname or node.name), current)
    return None


def claim_of(node: NodeSignals, *, by_hostname: bool = False) -> str:
    """Which claim decides the Node's Host: the first it makes ("" for none)."""
    if _provider_key(node) is not None or _provider_uid(node):
        return BY_PROVIDER
    if node.host_label:
        return BY_LABEL
    return BY_HOSTNAME if by_hostname else ""


def label_key(label: str, home: str) -> str:
    """The Host key a ``hoststate.io/host`` label (with its namespace folded in as
    ``namespace/name``) names; "" when it names none (a bare name with no home)."""
    namespace, slash, name = label.partition("/")
    if slash:
        return label if namespace and name and "/" not in name else ""
    return f"{home}/{label}" if home else ""


def link_problem(node: NodeSignals, home: str) -> str:
    """Why the Node's ``hoststate.io/host`` label links it to nothing, with the fix ("" when
    it is not the label's fault)."""
    if claim_of(node) != BY_LABEL or label_key(node.host_label, home):
        return ""
    return (
        f'metadata.labels["hoststate.io/host"]: {node.host_label!r} names a Host by its name '
        "alone, which proves nothing while the controller watches several namespaces (any "
        "tenant may name a Host so); add the label hoststate.io/host-namespace=<the Host's "
        "namespace>"
    )


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
