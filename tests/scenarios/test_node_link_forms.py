"""A Node named by each form a peer writes joins its BareMetalHost's HostState, on the
real kube-apiserver with baremetal-operator v0.13.2's own CRD (``tools/metal3/crds.sh``).

The forms, as their writers write them: cluster-api-provider-metal3 v1.13.2
(``baremetal/metal3machine_manager.go``): ``metal3://<namespace>/<bmh>/<m3m>``, the older
``metal3://<bmh uid>``, and, before it sets either, the Node's label
``metal3.io/uuid=<bmh uid>`` its kubeadm templates give the kubelet
(``examples/clusterctl-templates/clusterctl-cluster.yaml``); OpenShift's machine-api
(openshift/cluster-api-provider-baremetal, ``pkg/cloud/baremetal/actuators/machine/
actuator.go``, ``providerIDForHost``): ``baremetalhost:///<namespace>/<bmh>/<uid>``.
baremetal-operator is played
(:class:`~state_controller.simulation.baremetal_operator.PlayedBMO`): it writes each
host's status as ``provisioned``.
"""

from __future__ import annotations

from typing import Any

from state_controller.cluster.interface import HOSTSTATES, Cluster
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.baremetal_operator import PlayedBMO
from state_controller.simulation.nodes import SimulatedNode
from testbed.scenarios import WORKER
from tests.conftest import FAST_BACKOFF, NODE_STATE_NAMESPACE, wait_for

NS = "fleet"

# host name -> (providerID, labels) written on its Node, from the host's UID
FORMS: dict[str, Any] = {
    "capm3": lambda uid: (f"metal3://{NS}/capm3/m3m-capm3-x7", {}),
    "capm3-legacy": lambda uid: (f"metal3://{uid}", {}),
    "machine-api": lambda uid: (f"baremetalhost:///{NS}/machine-api/{uid}", {}),
    "uuid-label": lambda uid: ("", {"metal3.io/uuid": uid}),
}


def test_a_node_in_each_form_joins_its_baremetalhost(cluster: Cluster, run_controller: Any) -> None:
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, observe_baremetalhosts=True)
    with run_controller(cluster, config=config) as running:
        uids = {}
        for name in FORMS:
            bmo = PlayedBMO(cluster, NS, name)
            bmo.show("provisioned", started=("provision",), ended=("provision",))
            uids[name] = bmo.obj["metadata"]["uid"]
        for name, form in FORMS.items():
            provider_id, labels = form(uids[name])
            SimulatedNode(
                cluster, f"node-{name}", labels={**WORKER, **labels}, provider_id=provider_id
            ).register()
        for name in FORMS:
            wait_for(
                lambda name=name: (
                    (cluster.get(HOSTSTATES, NS, name).get("spec") or {}).get("node")
                    == f"node-{name}"
                ),
                what=f"node-{name} linked to the HostState of BareMetalHost {name}",
            )
        wait_for(running.controller.idle)
        # each Node joined its machine's book: none is followed on its own
        assert not cluster.list(HOSTSTATES, NODE_STATE_NAMESPACE)[0]
