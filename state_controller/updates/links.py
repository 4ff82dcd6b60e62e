"""Which Host a Node runs on.

In order of trust:

1. ``spec.providerID`` naming a Host (or an observed BareMetalHost) in one of the forms
   of :data:`.provider_ids.FORMS`: cluster-api-provider-metal3's
   ``metal3://<namespace>/<host>/<machine>`` and its older ``metal3://<uid>``, and
   OpenShift's machine-api ``baremetalhost:///<namespace>/<host>/<uid>``;
2. the label ``metal3.io/uuid=<uid>``, which cluster-api-provider-metal3's kubeadm
   templates have the kubelet write, and by which it finds the Node before giving it a
   providerID (a UID is no name a tenant can choose);
3. the labels ``hoststate.io/host=<host>`` and ``hoststate.io/host-namespace=<namespace>``
   on the Node (a label value cannot hold a '/'; ``hoststate.io/host=<namespace>/<host>``
   is read too where a store takes it). ``hoststate.io/host`` alone names a Host of the
   controller's one watched namespace (``run --namespace`` given once), and nothing when
   it watches several: a name alone proves nothing across namespaces, since any tenant
   may give a Host any name (:func:`link_problem` says what to write instead);
4. only when the operator opts in (``--link-nodes-by-hostname``): the Node's hostname
   (the ``kubernetes.io/hostname`` label, else its name) equal to the name of exactly
   one Host.

The first claim a Node makes decides alone: a providerID of these forms is never
passed over for a label, nor a label for the hostname, even while the Host it names does
not exist (it was deleted to be created again; it belongs to another shard). So the
answer is one key, or none, wherever it is asked, and no other Host takes the Node
meanwhile. The first three are written by whoever set the Node up (a cluster-api
provider, the machine-api, an operator), though a kubelet may write its own Node's
labels too: :mod:`..runtime.indexes.nodes` keeps how each link was made, for remediation
to ask. The last is a name a tenant can give any Host, so by default it proves
nothing; a link by hostname is kept while its Host exists, however many Hosts of that
name appear elsewhere later. A Node that names none is followed on its own, with a
HostState of its own in the controller's namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .provider_ids import Field, Named, named_by
from .signals import HOST_LABEL, METAL3_UUID_LABEL, NodeSignals

# how a link was made (:func:`claim_of`)
BY_PROVIDER, BY_UUID_LABEL, BY_LABEL, BY_HOSTNAME = "providerID", "uuid label", "label", "hostname"
# the claims made by a form of :data:`.provider_ids.FORMS`, in order of trust
_FORM_CLAIMS = ((BY_PROVIDER, Field.PROVIDER_ID), (BY_UUID_LABEL, Field.UUID_LABEL))
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
    named = _named(node, how)
    if named is not None:
        if named.key:
            return named.key if named.key in hosts_named(named.key.partition("/")[2]) else None
        with_uid = list(hosts_named(UID + named.uid))
        return with_uid[0] if len(with_uid) == 1 else None
    if how == BY_LABEL:
        key = label_key(node.host_label, home)
        return key if key and key in hosts_named(key.partition("/")[2]) else None
    if how == BY_HOSTNAME:
        return _kept_or_unique(hosts_named(node.hostname or node.name), current)
    return None


def claim_of(node: NodeSignals, *, by_hostname: bool = False) -> str:
    """Which claim decides the Node's Host: the first it makes ("" for none)."""
    for how, field in _FORM_CLAIMS:
        if named_by(node, field) is not None:
            return how
    if node.host_label:
        return BY_LABEL
    return BY_HOSTNAME if by_hostname else ""


# the claims a kubelet may write itself (its Node's labels): label and value
_LABEL_CLAIMS: dict[str, tuple[str, Callable[[NodeSignals], str]]] = {
    BY_UUID_LABEL: (METAL3_UUID_LABEL, lambda node: node.metal3_uuid),
    BY_LABEL: (HOST_LABEL, lambda node: node.host_label),
}


def label_claim(node: NodeSignals, *, by_hostname: bool = False) -> tuple[str, str]:
    """The label (name, value) the Node's link rests on, where it rests on a label its
    own kubelet may have written; ("", "") where it rests on something else."""
    label, value_of = _LABEL_CLAIMS.get(claim_of(node, by_hostname=by_hostname), ("", None))
    return (label, value_of(node)) if value_of is not None else ("", "")


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
    for _, field in _FORM_CLAIMS:
        named = named_by(node, field)
        if named is not None:
            names.add(named.key.partition("/")[2] if named.key else UID + named.uid)
    if node.host_label:
        names.add(node.host_label.rpartition("/")[2])
    return names


def _named(node: NodeSignals, how: str) -> Named | None:
    """What the claim ``how`` names, where it is one of the table's forms."""
    field = dict(_FORM_CLAIMS).get(how)
    return named_by(node, field) if field is not None else None


def _kept_or_unique(keys: Iterable[str], current: str | None) -> str | None:
    found = list(keys)
    if current is not None and current in found:
        return current  # a link already made holds while its Host exists
    return found[0] if len(found) == 1 else None
