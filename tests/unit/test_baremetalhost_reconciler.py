"""An observed metal3 BareMetalHost reconciled by hand (runtime/baremetalhosts/reconciler.py):
its story told in a HostState of its own (owned by it), the BareMetalHost never
written; its goal read from its spec as baremetal-operator reads it; a restart records
nothing new; a Host of the same name tells the story instead; baremetal-operator's error
text reaches the operator's log once per change and never the HostState; its story kept
across a clusterctl move."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from state_controller.api import annotations as ann
from state_controller.api.objects import Obj
from state_controller.api.states import ProvisioningState as S
from state_controller.books.journal import Entry
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import BAREMETALHOSTS, HOSTS, HOSTSTATES, NotFound
from state_controller.cluster.schema import validators
from state_controller.runtime.baremetalhosts.reconciler import BareMetalHostReconciler, goal_of
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.machinery.informer import Informer
from state_controller.runtime.writing.book_writer import BookWriter
from state_controller.simulation.baremetal_operator import PlayedBMO
from state_controller.simulation.fleet import host_manifest
from testbed.clocks import T0, Clock
from testbed.hand_driven import StatusWrites

NS = "metal"
KEY = f"{NS}/worker-0"


class Reported(StatusWrites):
    def __init__(self) -> None:
        super().__init__()
        self.reports: list[tuple[str, list[Entry]]] = []

    def report(self, host: Obj, entries: Sequence[Entry]) -> None:
        self.reports.append((str(host["kind"]), list(entries)))


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    store = EmbeddedCluster(validators=validators())
    yield store
    store.close()


class Observer:
    """A reconciler of observed BareMetalHosts over caches the test fills (as watch
    events would), with its own reporter: a replica, started anew when made again."""

    def __init__(self, cluster: EmbeddedCluster, clock: Clock) -> None:
        self.cluster = cluster
        self.bmhs = Informer(cluster, BAREMETALHOSTS, NS)
        self.hosts = Informer(cluster, HOSTS, NS)
        self.hoststates = Informer(cluster, HOSTSTATES, NS)
        for informer in (self.bmhs, self.hosts, self.hoststates):
            informer.start()
            assert informer.wait_synced(10)
        self.reporter = Reported()
        config = ControllerConfig()
        writer = BookWriter(cluster, self.hoststates, config, self.reporter)
        self.reconciler = BareMetalHostReconciler(
            bmhs=self.bmhs,
            hosts=self.hosts,
            hoststates=self.hoststates,
            writer=writer,
            config=config,
            clock=clock,
        )

    def sees(self, obj: Obj) -> None:
        """The watch's event for ``obj``, as written."""
        informer = self.hosts if obj["kind"] == "Host" else self.bmhs
        informer.mutate(obj)

    def stop(self) -> None:
        for informer in (self.bmhs, self.hosts, self.hoststates):
            informer.stop()


@pytest.fixture
def observers(cluster: EmbeddedCluster) -> Iterator[list[Observer]]:
    made: list[Observer] = []
    yield made
    for one in made:
        one.stop()


def observer(cluster: EmbeddedCluster, observers: list[Observer], clock: Clock) -> Observer:
    made = Observer(cluster, clock)
    observers.append(made)
    return made


def provisioned(cluster: EmbeddedCluster, **status: Any) -> PlayedBMO:
    bmo = PlayedBMO(cluster, NS, "worker-0")
    bmo.show("provisioned", started=("provision",), ended=("provision",), at=T0 - 60,
             poweredOn=True, **status)  # fmt: skip
    return bmo


def test_its_story_is_told_in_a_hoststate_of_its_own_and_the_bmh_never_written(
    cluster: EmbeddedCluster, observers: list[Observer]
) -> None:
    clock = Clock()
    bmo = provisioned(cluster)
    one = observer(cluster, observers, clock)
    one.sees(bmo.obj)

    one.reconciler.reconcile(KEY)

    state = cluster.get(HOSTSTATES, NS, "worker-0")
    assert state["status"]["provisioning"]["state"] == "provisioned"
    assert state["spec"] == {"bareMetalHost": "worker-0", "node": ""}
    assert state["metadata"]["labels"] == {ann.BAREMETALHOST: "worker-0"}
    (owner,) = state["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("BareMetalHost", bmo.obj["metadata"]["uid"])
    stored = cluster.get(BAREMETALHOSTS, NS, "worker-0")
    assert stored["metadata"]["resourceVersion"] == bmo.obj["metadata"]["resourceVersion"]
    assert [kind for kind, _ in one.reporter.reports] == ["BareMetalHost"]


def test_a_restart_records_nothing_new(cluster: EmbeddedCluster, observers: list[Observer]) -> None:
    clock = Clock()
    bmo = provisioned(cluster)
    first = observer(cluster, observers, clock)
    first.sees(bmo.obj)
    first.reconciler.reconcile(KEY)
    written = cluster.get(HOSTSTATES, NS, "worker-0")

    clock.advance(30)
    again = observer(cluster, observers, clock)  # a new replica: its book from the HostState
    again.sees(bmo.obj)
    again.reconciler.reconcile(KEY)

    assert cluster.get(HOSTSTATES, NS, "worker-0") == written
    assert again.reporter.reports == []
    assert [outcome for _, outcome in again.reporter.writes] == ["unchanged"]


def test_a_host_of_the_same_name_tells_the_story_instead(
    cluster: EmbeddedCluster, observers: list[Observer]
) -> None:
    bmo = provisioned(cluster)
    host = host_manifest(NS, 0)
    host["metadata"]["name"] = "worker-0"
    one = observer(cluster, observers, Clock())
    one.sees(bmo.obj)
    one.sees(cluster.create(HOSTS, host))

    one.reconciler.reconcile(KEY)

    with pytest.raises(NotFound):
        cluster.get(HOSTSTATES, NS, "worker-0")
    assert one.reporter.reports == [] and KEY not in one.reconciler.books


def test_bmos_error_text_is_logged_once_per_change_and_never_shown(
    cluster: EmbeddedCluster, observers: list[Observer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="state_controller.runtime.baremetalhosts.reconciler")
    clock = Clock()
    words = "Failed to get power state for node 3b1e: <html>a BMC's own page</html>"
    bmo = provisioned(cluster, operationalStatus="error", errorType="power management error",
                      errorMessage=words, errorCount=1)  # fmt: skip
    one = observer(cluster, observers, clock)
    one.sees(bmo.obj)

    for _ in range(3):
        clock.advance(1)
        one.reconciler.reconcile(KEY)

    logged = [r.getMessage() for r in caplog.records if words in r.getMessage()]
    assert len(logged) == 1 and "power management error" in logged[0]
    assert words not in str(cluster.get(HOSTSTATES, NS, "worker-0"))
    assert all(words not in str(entries) for _, entries in one.reporter.reports)


def bmh(**spec: Any) -> Obj:
    return {"metadata": {"name": "worker-0"}, "spec": spec}


BMC = {"address": "redfish://bmc.example/redfish/v1/Systems/1"}


@pytest.mark.parametrize(
    ("obj", "goal"),
    [
        ({"metadata": {"deletionTimestamp": "2027-01-15T08:00:00Z"}, "spec": {"bmc": BMC}},
         S.NONE),
        (bmh(), S.UNMANAGED),
        (bmh(bmc=BMC, externallyProvisioned=True, image={"url": "http://i/os"}),
         S.EXTERNALLY_PROVISIONED),
        (bmh(bmc=BMC, image={"url": "http://i/os"}), S.PROVISIONED),
        (bmh(bmc=BMC, customDeploy={"method": "install_coreos"}), S.PROVISIONED),
        (bmh(bmc=BMC), S.AVAILABLE),
    ],
    ids=["deleted", "no-bmc", "externally-provisioned", "image", "custom-deploy", "nothing"],
)  # fmt: skip
def test_the_goal_is_where_baremetal_operator_takes_the_host(obj: Obj, goal: S) -> None:
    assert goal_of(obj) == goal


PAUSED_BY_CAPM3 = {"baremetalhost.metal3.io/paused": "metal3.io/capm3"}


def test_a_baremetalhost_moved_by_clusterctl_keeps_its_story(
    cluster: EmbeddedCluster, observers: list[Observer]
) -> None:
    """Paused as Cluster API Provider Metal3 pauses it for a move (v1.13.2,
    SetPauseAnnotation: the paused annotation and its status in
    baremetalhost.metal3.io/status), its HostState keeps its status in an annotation;
    created anew without status (as clusterctl leaves both in the target), the
    BareMetalHost is read as baremetal-operator will restore it and the HostState gets
    its history back, nothing recorded twice; unpaused, the annotation goes."""
    clock = Clock()
    bmo = provisioned(cluster)
    source = observer(cluster, observers, clock)
    source.sees(bmo.obj)
    source.reconciler.reconcile(KEY)
    bmo_status = {k: v for k, v in bmo.obj["status"].items() if k != "hardware"}
    notes = {**PAUSED_BY_CAPM3, "baremetalhost.metal3.io/status": json.dumps(bmo_status)}
    paused = cluster.patch(BAREMETALHOSTS, NS, "worker-0", {"metadata": {"annotations": notes}})
    source.sees(paused)
    clock.advance(5)
    source.reconciler.reconcile(KEY)
    kept = cluster.get(HOSTSTATES, NS, "worker-0")
    assert json.loads(kept["metadata"]["annotations"][ann.STATUS]) == kept["status"]
    history = kept["status"]["history"]

    # the move: both deleted here and created anew, metadata and spec only
    for resource in (HOSTSTATES, BAREMETALHOSTS):
        cluster.delete(resource, NS, "worker-0")
    target = observer(cluster, observers, clock)
    new_bmh = cluster.create(BAREMETALHOSTS, {k: v for k, v in paused.items() if k != "status"}
                             | {"metadata": _new(paused)})  # fmt: skip
    target.sees(new_bmh)
    target.reconciler.reconcile(KEY)  # its HostState not here yet: none is created
    with pytest.raises(NotFound):
        cluster.get(HOSTSTATES, NS, "worker-0")
    owner = {**kept["metadata"]["ownerReferences"][0], "uid": new_bmh["metadata"]["uid"]}
    body = {k: v for k, v in kept.items() if k != "status"}
    created = cluster.create(HOSTSTATES, {**body, "metadata": {**_new(kept),
                                          "ownerReferences": [owner]}})  # fmt: skip
    target.hoststates.mutate(created)
    clock.advance(5)
    target.reconciler.reconcile(KEY)
    restored = cluster.get(HOSTSTATES, NS, "worker-0")
    assert restored["status"]["history"] == history  # back, and nothing recorded again
    assert ann.STATUS in restored["metadata"]["annotations"]  # paused still: kept

    unpaused = cluster.patch(
        BAREMETALHOSTS, NS, "worker-0",
        {"metadata": {"annotations": {"baremetalhost.metal3.io/paused": None}}},
    )  # fmt: skip
    target.sees(unpaused)
    target.reconciler.reconcile(KEY)
    done = cluster.get(HOSTSTATES, NS, "worker-0")
    assert ann.STATUS not in (done["metadata"].get("annotations") or {})
    assert done["status"]["history"] == history


def test_a_baremetalhost_deleted_for_a_move_is_not_told(
    cluster: EmbeddedCluster, observers: list[Observer]
) -> None:
    """clusterctl marks what it deletes from the source (delete-for-move): the host lives on
    in the target, so its HostState here is left as it is and nothing is reported."""
    bmo = provisioned(cluster)
    one = observer(cluster, observers, Clock())
    one.sees(bmo.obj)
    one.reconciler.reconcile(KEY)
    before = cluster.get(HOSTSTATES, NS, "worker-0")
    reports = len(one.reporter.reports)
    marked = {"metadata": {"annotations": {ann.DELETE_FOR_MOVE: ""}}}
    one.sees(cluster.patch(BAREMETALHOSTS, NS, "worker-0", marked))
    one.reconciler.reconcile(KEY)
    assert cluster.get(HOSTSTATES, NS, "worker-0") == before
    assert len(one.reporter.reports) == reports and KEY not in one.reconciler.books


def _new(obj: Obj) -> Obj:
    """An object's metadata as clusterctl creates it elsewhere: what its users wrote."""
    meta = obj["metadata"]
    keep = ("name", "namespace", "labels", "annotations", "ownerReferences")
    return {k: meta[k] for k in keep if k in meta}
