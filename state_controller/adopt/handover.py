"""Handing one machine over from baremetal-operator: a table of steps, each idempotent.

A host goes over in the order a careful operator would take it by hand:

``pause``
    baremetal-operator's ``baremetalhost.metal3.io/paused`` annotation on the
    BareMetalHost (value ``hoststate.io/adopt``), with ``hoststate.io/handed-over-to``
    naming the Host: from now on BMO leaves the machine alone, for good. The
    BareMetalHost and its Ironic node are read again after the pause and must still be
    at rest (BMO may have begun something between the first look and the pause);
    otherwise the pause is taken back and the host refused;
``secret``
    the BMC Secret gets ``hoststate.io/bmc-credentials=true``, and the deployed OS's
    data Secrets (user, network, meta and preprovisioning network data) that exist get
    ``hoststate.io/host-data=true``: the only Secrets the controller reads. A label
    changes the Secret's resourceVersion, so credentials baremetal-operator had checked
    are recorded as checked at the new version. Only Secrets of the BareMetalHost's own
    namespace are labelled, the ones baremetal-operator reads; the line names each;
``mark``
    the Ironic node gets hoststate's owner mark (``extra.hoststate_host``, see
    :mod:`~..provisioning.ironic.ownership`) and ``extra.hoststate_handed_over_from``
    (the BareMetalHost's uid): the controller takes no node of that name without it, and
    a Host found on a later run counts as this handover's only when its node carries it,
    since anyone who may create a Host may write its annotations;
``host``
    the Host is created with the same spec, paused, with ``hoststate.io/status``
    holding the status BMO's stands for (state, Ironic node ID, image, hardware,
    power, credentials) and ``hoststate.io/adopted-from`` (the BareMetalHost's uid);
``hoststate``
    the HostState that told the BareMetalHost's story is given to the Host: owner,
    label and spec; its history stays where it is, so the story is one;
``unpause``
    the Host's pause is removed: the controller restores the status, records the
    handover and finds the node by its UUID; nothing is registered, inspected,
    cleaned or deployed again.

Every step first looks at what is there already: run again, a handover carries on
where it stopped, and one that is complete writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..api import API_VERSION
from ..api import annotations as ann
from ..api.baremetalhost import DATA, PAUSED, host_spec
from ..api.objects import Obj
from ..cluster.interface import BAREMETALHOSTS, HOSTS, HOSTSTATES, SECRETS, Cluster, NotFound
from ..provisioning.ironic import ownership
from ..provisioning.ironic.nodes import Node
from ..runtime.writing.book_writer import hoststate_of_host
from .ironic_node import node_refusal
from .translate import (
    PAUSED_FOR_ADOPTION,
    bmh_refusal,
    data_secret_names,
    dropped_on_handover,
    restored_status,
    status_annotation,
    vouched_credentials,
)

Verdict = Literal["handed over", "would hand over", "already handed over", "refused"]


class IronicNodes(Protocol):
    def read_node(self, uuid: str) -> Node | None: ...

    def mark_node(self, uuid: str, marks: dict[str, str]) -> None: ...


@dataclass
class Outcome:
    """What became of one host: the verdict, and its line's words."""

    key: str
    verdict: Verdict
    detail: str
    writes: int = 0
    steps: list[str] = field(default_factory=list)

    def line(self) -> str:
        return f"{self.key}: {self.verdict}" + (f": {self.detail}" if self.detail else "")


class Refused(Exception):
    """This host cannot be handed over now; the message says why and what to do."""


@dataclass
class Handover:
    cluster: Cluster
    ironic: IronicNodes
    namespace: str
    name: str
    include_consumed: bool = False
    writes: int = 0
    done: list[str] = field(default_factory=list)
    labelled: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def run(self, *, dry_run: bool) -> Outcome:
        try:
            return self._run(dry_run)
        except Refused as refused:
            return Outcome(self.key, "refused", str(refused), self.writes, self.done)

    def _run(self, dry_run: bool) -> Outcome:
        bmh = self._get(BAREMETALHOSTS)
        if bmh is None:
            raise Refused("there is no such BareMetalHost")
        host = self._get(HOSTS)
        uid = bmh["metadata"]["uid"]
        if host is not None and _annotations(host).get(ann.ADOPTED_FROM) != uid:
            raise Refused(
                f"a Host {self.key} exists already and was not adopted from this "
                "BareMetalHost; delete or rename it, or leave this host with baremetal-operator"
            )
        spec, problem = host_spec(bmh)
        if spec is None:
            raise Refused(problem)
        secret = self._secret(spec)
        _refuse_other_namespaces(spec, self.namespace)
        # once its Host exists, the machine is hoststate's: BMO's status is left as it was
        node = self._read_node(bmh) if host is not None else self._check_at_rest(bmh)
        todo = self._todo(bmh, host, secret, spec, node)
        if not todo:
            return Outcome(self.key, "already handed over", "")
        if host is not None and not self._handed_over(node, uid):
            raise Refused(
                f"a Host {self.key} exists with {ann.ADOPTED_FROM} naming this BareMetalHost, "
                f"but its Ironic node does not carry this handover's mark (extra."
                f"{ownership.HANDED_OVER_FROM}): anyone who may create a Host may write that "
                "annotation, so this Host may not be the one adopt made; delete it, then "
                "run again"
            )
        if dry_run:
            plan = self._plan(bmh, node, todo, secret, spec)
            return Outcome(self.key, "would hand over", plan)
        for step in todo:
            bmh = STEPS[step](self, bmh, spec, secret)
            self.done.append(step)
        return Outcome(self.key, "handed over", self._told(bmh), self.writes, self.done)

    # -- reading ------------------------------------------------------------------------

    def _get(self, resource: Any, name: str | None = None) -> Obj | None:
        try:
            return self.cluster.get(resource, self.namespace, name or self.name)
        except NotFound:
            return None

    def _secret(self, spec: dict[str, Any]) -> Obj:
        name = str((spec.get("bmc") or {}).get("credentialsName") or "")
        if not name:
            raise Refused("spec.bmc.credentialsName is empty: a Host needs BMC credentials")
        secret = self._get(SECRETS, name)
        if secret is None:
            raise Refused(
                f"its BMC Secret {self.namespace}/{name} (spec.bmc.credentialsName) does not "
                "exist; create it, then run again"
            )
        return secret

    def _node_id(self, bmh: Obj) -> str:
        return str(((bmh.get("status") or {}).get("provisioning") or {}).get("ID") or "")

    def _read_node(self, bmh: Obj) -> Node | None:
        """The BareMetalHost's Ironic node as it is now, None when Ironic has none."""
        uuid = self._node_id(bmh)
        try:
            return self.ironic.read_node(uuid) if uuid else None
        except RuntimeError as err:
            raise Refused(f"Ironic could not be asked about node {uuid}: {err}") from None

    def _marks(self, bmh: Obj) -> dict[str, str]:
        return {ownership.OWNER: self.key, ownership.HANDED_OVER_FROM: bmh["metadata"]["uid"]}

    def _handed_over(self, node: Node | None, uid: str) -> bool:
        """Whether the node carries this handover's mark (a Host made by another hand finds
        no node, or one without it)."""
        extra = (node or {}).get("extra") or {}
        return node is not None and extra.get(ownership.HANDED_OVER_FROM) == uid

    def _check_at_rest(self, bmh: Obj) -> Node:
        """The BareMetalHost and its Ironic node, both at rest; else :class:`Refused`."""
        problem = bmh_refusal(bmh, include_consumed=self.include_consumed)
        if problem:
            raise Refused(problem)
        prov = (bmh.get("status") or {}).get("provisioning") or {}
        uuid = str(prov.get("ID") or "")
        try:
            node = self.ironic.read_node(uuid)
        except RuntimeError as err:
            raise Refused(f"Ironic could not be asked about node {uuid}: {err}") from None
        problem = node_refusal(node, uuid, f"{self.namespace}~{self.name}", str(prov.get("state")))
        if problem or node is None:
            raise Refused(problem)
        return node

    def _unlabelled(self, secret: Obj, spec: dict[str, Any]) -> dict[str, dict[str, str]]:
        """Secret name -> the labels it still needs (BMC credentials, data for the OS;
        a Secret of both uses gets both)."""
        needs: dict[str, dict[str, str]] = {}
        if _label(secret, ann.BMC_CREDENTIALS) != "true":
            needs[secret["metadata"]["name"]] = {ann.BMC_CREDENTIALS: "true"}
        for name in data_secret_names(spec):
            data = self._get(SECRETS, name)
            if data is not None and _label(data, ann.HOST_DATA) != "true":
                needs.setdefault(name, {})[ann.HOST_DATA] = "true"
        return needs

    def _todo(
        self, bmh: Obj, host: Obj | None, secret: Obj, spec: dict[str, Any], node: Node | None
    ) -> list[str]:
        todo = []
        bmh_notes = _annotations(bmh)
        if bmh_notes.get(PAUSED) != PAUSED_FOR_ADOPTION or ann.HANDED_OVER_TO not in bmh_notes:
            todo.append("pause")
        if self._unlabelled(secret, spec):
            todo.append("secret")
        extra = (node or {}).get("extra") or {}
        if node is not None and any(extra.get(k) != v for k, v in self._marks(bmh).items()):
            todo.append("mark")
        if host is None:
            todo.append("host")
        state = self._get(HOSTSTATES)
        if state is not None and (state.get("spec") or {}).get("bareMetalHost"):
            todo.append("hoststate")
        if host is None or _annotations(host).get(ann.PAUSED) == PAUSED_FOR_ADOPTION:
            todo.append("unpause")
        return todo

    def _plan(
        self, bmh: Obj, node: Node | None, todo: list[str], secret: Obj, spec: dict[str, Any]
    ) -> str:
        prov = (bmh.get("status") or {}).get("provisioning") or {}
        words = [str(prov.get("state") or "")]
        if node is not None:
            words.append(f"Ironic node {node.get('uuid')} {node.get('provision_state')}")
        state = self._get(HOSTSTATES)
        records = len(((state or {}).get("status") or {}).get("history") or [])
        if state is not None:
            words.append(f"{records} record{'' if records == 1 else 's'} of history kept")
        later, others = dropped_on_handover(bmh)
        if later:
            words.append(f"not carried (used only by a later preparation): {', '.join(later)}")
        if others:
            words.append(f"not carried: {', '.join(others)}")
        if "secret" in todo:
            words.append(f"would label {_labels_told(self._unlabelled(secret, spec))}")
        return f"{'; '.join(words)}; steps: {', '.join(todo)}"

    def _told(self, bmh: Obj) -> str:
        prov = (bmh.get("status") or {}).get("provisioning") or {}
        words = [f"{prov.get('state')}, Ironic node {prov.get('ID')}"]
        if self.labelled:
            words.append(f"labelled {', '.join(self.labelled)}")
        return f"{'; '.join(words)}; steps: {', '.join(self.done)}"

    # -- the steps ----------------------------------------------------------------------

    def _patch(self, resource: Any, name: str, patch: Obj) -> Obj:
        self.writes += 1
        return self.cluster.patch(resource, self.namespace, name, patch)

    def _pause(self, bmh: Obj, spec: dict[str, Any], secret: Obj) -> Obj:
        marks = {PAUSED: PAUSED_FOR_ADOPTION, ann.HANDED_OVER_TO: f"Host {self.key}"}
        version = bmh["metadata"]["resourceVersion"]
        paused = self._patch(
            BAREMETALHOSTS,
            self.name,
            {"metadata": {"annotations": marks, "resourceVersion": version}},
        )
        if self._get(HOSTS) is not None:
            return paused  # carried on from a run that had got further
        try:  # what BMO began between the first look and the pause shows now
            self._check_at_rest(paused)
        except Refused:
            self._patch(
                BAREMETALHOSTS, self.name, {"metadata": {"annotations": dict.fromkeys(marks)}}
            )
            raise
        return paused

    def _label_secrets(self, bmh: Obj, spec: dict[str, Any], secret: Obj) -> Obj:
        for name, labels in self._unlabelled(secret, spec).items():
            self._patch(SECRETS, name, {"metadata": {"labels": labels}})
            self.labelled.append(_labels_told({name: labels}))
        return bmh

    def _mark_node(self, bmh: Obj, spec: dict[str, Any], secret: Obj) -> Obj:
        uuid = self._node_id(bmh)
        try:
            self.ironic.mark_node(uuid, self._marks(bmh))
        except RuntimeError as err:
            raise Refused(f"Ironic did not take hoststate's mark on node {uuid}: {err}") from None
        self.writes += 1
        return bmh

    def _create_host(self, bmh: Obj, spec: dict[str, Any], secret: Obj) -> Obj:
        fresh = self._get(SECRETS, secret["metadata"]["name"]) or secret
        vouched = vouched_credentials(bmh, secret) or vouched_credentials(bmh, fresh)
        version = str(fresh["metadata"].get("resourceVersion", "")) if vouched else ""
        status = restored_status(bmh, version)
        body = {
            "apiVersion": API_VERSION,
            "kind": "Host",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "annotations": {
                    ann.PAUSED: PAUSED_FOR_ADOPTION,
                    ann.STATUS: status_annotation(status),
                    ann.ADOPTED_FROM: bmh["metadata"]["uid"],
                },
            },
            "spec": spec,
        }
        self.writes += 1
        self.cluster.create(HOSTS, body)
        return bmh

    def _give_hoststate(self, bmh: Obj, spec: dict[str, Any], secret: Obj) -> Obj:
        host = self._get(HOSTS)
        if host is None:
            raise Refused("its Host went away during the handover; run again")
        ours = hoststate_of_host(host)["metadata"]  # what the controller would have made
        self._patch(
            HOSTSTATES,
            self.name,
            {
                "metadata": {
                    "ownerReferences": ours["ownerReferences"],
                    "labels": {**ours["labels"], ann.BAREMETALHOST: None},
                },
                "spec": {"host": self.name, "bareMetalHost": None},
            },
        )
        return bmh

    def _unpause(self, bmh: Obj, spec: dict[str, Any], secret: Obj) -> Obj:
        self._patch(HOSTS, self.name, {"metadata": {"annotations": {ann.PAUSED: None}}})
        return bmh


Step = Callable[[Handover, Obj, dict[str, Any], Obj], Obj]
STEPS: dict[str, Step] = {
    "pause": Handover._pause,
    "secret": Handover._label_secrets,
    "mark": Handover._mark_node,
    "host": Handover._create_host,
    "hoststate": Handover._give_hoststate,
    "unpause": Handover._unpause,
}
"""Each step, by the name a line shows, in the order they run."""


def _refuse_other_namespaces(spec: dict[str, Any], namespace: str) -> None:
    """A data Secret of another namespace: baremetal-operator reads it there, a Host never
    does, and labelling the one of the same name here would hand over another Secret."""
    for data in DATA:
        ref = spec.get(data)
        if not isinstance(ref, dict):
            continue
        other = ref.get("namespace")
        if other and other != namespace:
            raise Refused(
                f"spec.{data} names the Secret {other}/{ref.get('name')}, and a Host reads "
                f"data Secrets only in its own namespace: copy it into {namespace} and point "
                f"spec.{data} at the copy, then run again"
            )


def _labels_told(needs: dict[str, dict[str, str]]) -> str:
    """``Secret NAME (label=true, ...)`` for each Secret, as a line says it."""
    return ", ".join(
        f"Secret {name} ({', '.join(f'{k}={v}' for k, v in labels.items())})"
        for name, labels in needs.items()
    )


def _label(obj: Obj, name: str) -> str | None:
    labels = obj["metadata"].get("labels") or {}
    return labels.get(name) if isinstance(labels, dict) else None


def _annotations(obj: Obj) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})
