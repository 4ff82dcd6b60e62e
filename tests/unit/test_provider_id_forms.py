"""Every form a peer writes on a Node to name its machine links the Node, each by what it
says (name or UID), and a providerID in none of them links nothing.

The forms, as their sources write them: cluster-api-provider-metal3 v1.13.2,
``baremetal/metal3machine_manager.go`` (``getPossibleProviderIDs``: ``providerIDNew``
``metal3://<namespace>/<bmh>/<m3m>``, ``providerIDLegacy`` ``metal3://<bmh uid>``;
``SetProviderIDFromNodeLabel``: the label ``metal3.io/uuid=<bmh uid>``, which its
``examples/clusterctl-templates/clusterctl-cluster.yaml`` has kubeadm give the kubelet);
openshift/cluster-api-provider-baremetal, ``pkg/cloud/baremetal/actuators/machine/
actuator.go`` (``providerIDForHost``: ``baremetalhost:///<namespace>/<bmh>/<uid>``).
"""

from __future__ import annotations

from typing import Any

import pytest

from state_controller.runtime.indexes.nodes import NodeIndex
from state_controller.updates.links import (
    BY_LABEL,
    BY_PROVIDER,
    BY_UUID_LABEL,
    UID,
    claim_of,
    host_of,
    names_read,
)
from state_controller.updates.provider_ids import FORMS, Field, parse
from state_controller.updates.signals import node_signals

KEY, UID_OF_KEY = "fleet/worker-7", "6d2b0c1e-7a51-4e0b-9a53-2f1c4e8d9b10"
OTHER, UID_OF_OTHER = "team-0/worker-7", "0f3c9a8e-1111-4c22-8e33-444455556666"


class Hosts:
    """Two machines of one name in two namespaces, each with its UID."""

    def named(self, name: str) -> list[str]:
        uids = {UID + UID_OF_KEY: [KEY], UID + UID_OF_OTHER: [OTHER]}
        if name in uids:
            return uids[name]
        return [k for k in (KEY, OTHER) if k.partition("/")[2] == name]


def raw_node(provider_id: str = "", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "n-7", "uid": "node-uid", "labels": labels},
        "spec": {"providerID": provider_id} if provider_id else {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def node(provider_id: str = "", **labels: str) -> Any:
    return node_signals(raw_node(provider_id, **labels))


WRITTEN = [
    pytest.param(node(f"metal3://{KEY}/m3m-worker-7x9"), BY_PROVIDER, id="capm3"),
    pytest.param(node(f"metal3://{UID_OF_KEY}"), BY_PROVIDER, id="capm3-legacy-uid"),
    pytest.param(node(f"baremetalhost:///{KEY}/{UID_OF_KEY}"), BY_PROVIDER, id="machine-api"),
    pytest.param(node(**{"metal3.io/uuid": UID_OF_KEY}), BY_UUID_LABEL, id="metal3.io/uuid"),
]


@pytest.mark.parametrize(("signals", "claim"), WRITTEN)
def test_each_form_links_the_node_to_its_machine(signals: Any, claim: str) -> None:
    assert claim_of(signals) == claim
    assert host_of(signals, Hosts().named) == KEY
    # and a machine of that name (or UID) coming or going is heard of
    assert names_read(signals) & {"worker-7", UID + UID_OF_KEY}


def test_the_table_has_one_row_per_form_and_each_row_reads_its_own_sample() -> None:
    """A sample made from each row is read back by that row, and by no other row of its
    field that comes first (so no form hides another)."""
    assert {f.field for f in FORMS} == set(Field)
    for form in FORMS:
        sample = form.sample
        assert parse(sample, form) is not None, form
        earlier = FORMS[: FORMS.index(form)]
        assert not [e for e in earlier if e.field == form.field and parse(sample, e)], form


def test_the_providerid_decides_over_the_uuid_label_and_the_label_over_hoststates() -> None:
    """cluster-api-provider-metal3 sets the providerID after finding the Node by its label:
    when both are there, the providerID speaks; the label speaks over hoststate's own."""
    both = node(f"metal3://{OTHER}/m3m-1", **{"metal3.io/uuid": UID_OF_KEY})
    assert host_of(both, Hosts().named) == OTHER
    labelled = node(
        **{
            "metal3.io/uuid": UID_OF_OTHER,
            "hoststate.io/host": "worker-7",
            "hoststate.io/host-namespace": "fleet",
        }
    )
    assert claim_of(labelled) == BY_UUID_LABEL
    assert host_of(labelled, Hosts().named) == OTHER


@pytest.mark.parametrize(
    "provider_id",
    [
        "aws:///eu-west-1a/i-0123",  # another provider's: not ours to read
        "metal3://fleet/worker-7",  # two parts: no form of metal3's
        "metal3://fleet//m3m",  # an empty name
        "baremetalhost:///fleet/worker-7",  # machine-api always writes the UID
        "metal3://",
    ],
)
def test_a_providerid_of_no_form_is_passed_over(provider_id: str) -> None:
    signals = node(provider_id, **{"hoststate.io/host": "fleet/worker-7"})
    assert claim_of(signals) == BY_LABEL  # the next claim decides
    assert host_of(signals, Hosts().named) == KEY


def test_a_uid_no_machine_has_links_nothing_and_no_name_claims_it() -> None:
    """A Host named like the UID does not answer for it (a name is anyone's to give)."""
    signals = node(**{"metal3.io/uuid": "not-a-known-uid"})
    assert host_of(signals, Hosts().named) is None
    assert names_read(signals) == {UID + "not-a-known-uid"}


def test_a_node_its_uuid_label_moved_to_another_machine_gets_it_no_power_cycle() -> None:
    """cluster-api-provider-metal3's templates have the kubelet write ``metal3.io/uuid``
    (``--node-labels``), so a kubelet may change it: the link follows, but remediation is
    told not to power-cycle the machine on that Node's word until the label is back."""
    index = NodeIndex(Hosts().named)
    index.observe("n-7", raw_node(**{"metal3.io/uuid": UID_OF_KEY}))
    assert index.key_of("n-7") == KEY and index.link_doubt("n-7") == ""
    index.observe("n-7", raw_node(**{"metal3.io/uuid": UID_OF_OTHER}))
    assert index.key_of("n-7") == OTHER
    doubt = index.link_doubt("n-7")
    assert "metal3.io/uuid label, which changed" in doubt and UID_OF_KEY in doubt
    # cluster-api-provider-metal3 then writes the providerID: no label decides any more
    index.observe("n-7", raw_node(f"metal3://{OTHER}/m3m-1", **{"metal3.io/uuid": UID_OF_OTHER}))
    assert index.key_of("n-7") == OTHER and index.link_doubt("n-7") == ""
