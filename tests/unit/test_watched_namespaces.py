"""Which namespaces `state-controller run` watches, and what each source needs to read:
no --namespace is every namespace (the observe-only install for baremetal-operator runs
so, through a ClusterRole); named ones are exactly those; following Nodes alone reads
HostStates in the controller's namespace only (the OpenShift install grants no more)."""

from __future__ import annotations

from state_controller.cli import build_parser
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.commands.run import chosen_sources, watched_namespaces
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.controller import HostController
from state_controller.runtime.machinery.informer import InformerSet


def scopes(informers: InformerSet) -> set[str | None]:
    return {i.namespace for i in informers._all}


def test_no_namespace_is_every_namespace_and_named_ones_are_those() -> None:
    parse = build_parser().parse_args
    assert watched_namespaces(parse(["run"])) is None
    assert watched_namespaces(parse(["run", "--namespace=metal3,baremetal-operator-system"])) == (
        "metal3",
        "baremetal-operator-system",
    )
    repeated = ["run", "--namespace", "metal3", "--namespace", " openshift-machine-api ,"]
    assert watched_namespaces(parse(repeated)) == ("metal3", "openshift-machine-api")
    assert watched_namespaces(parse(["run", "--namespace", " , "])) is None
    assert chosen_sources(parse(["run"])) == {"hosts"}
    assert chosen_sources(parse(["run", "--sources=baremetalhosts, machineconfignodes"])) == {
        "baremetalhosts",
        "machineconfignodes",
    }


def test_what_each_install_reads_where() -> None:
    def controller(**settings: object) -> HostController:
        config = ControllerConfig(**settings)  # type: ignore[arg-type]
        return HostController(EmbeddedCluster(), SimulatedProvisioner(), config=config)

    # manifests/observe/: BareMetalHosts and their HostStates in every namespace
    every = controller(drive_hosts=False, observe_baremetalhosts=True)
    assert scopes(every.bmhs) == scopes(every.hoststates) == {None}
    # manifests/observe-namespaces/: the named ones, and the Nodes' own HostStates
    named = controller(
        namespaces=("metal3", "baremetal-operator-system"),
        drive_hosts=False,
        observe_baremetalhosts=True,
    )
    assert scopes(named.bmhs) == {"metal3", "baremetal-operator-system"}
    assert scopes(named.hoststates) == {"metal3", "baremetal-operator-system", "hoststate-system"}
    # manifests/openshift/: Nodes alone, so HostStates of Nodes alone
    nodes = controller(drive_hosts=False, observe_machineconfignodes=True)
    assert scopes(nodes.hoststates) == {"hoststate-system"}
    # manifests/: the driven Hosts' namespace, and the Nodes' own HostStates
    driving = controller(namespaces=("metal",))
    assert scopes(driving.hosts) == {"metal"}
    assert scopes(driving.hoststates) == {"metal", "hoststate-system"}
