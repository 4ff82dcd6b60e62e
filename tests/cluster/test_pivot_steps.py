"""A pivot interrupted after any of its steps, and run again, ends as an uninterrupted one;
a second run writes nothing; a target holding a different Host refuses before any write.

The source is a bootstrap's store made in this process (the controller in bootstrap
mode over simulated machines); the target is the session's real kube-apiserver.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from state_controller.api import annotations as ann
from state_controller.api.hoststate import Mode
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, HOSTSTATES, SECRETS, Cluster
from state_controller.cluster.kube import KubeCluster
from state_controller.cluster.schema import validators
from state_controller.pivot import STEPS, Interrupted, Refused, pivot
from state_controller.pivot.moves import Move, SecretUsers
from state_controller.pivot.target import ensure_namespaces
from state_controller.provisioning.hardware_file import HardwareFile
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.fleet import create_fleet, host_manifest
from testbed.control_plane import ControlPlane
from testbed.scenarios import wait_all_in
from tests.conftest import FAST_BACKOFF, empty_namespace, wait_for

pytestmark = pytest.mark.slow

HOSTS_PER_SOURCE = 2
WRITES = ("create", "update", "update_status", "patch", "delete")


@pytest.fixture
def target(control_plane: ControlPlane) -> Iterator[KubeCluster]:
    kube = KubeCluster.from_kubeconfig(str(control_plane.kubeconfig))
    yield kube
    kube.close()


@pytest.fixture
def namespaces(target: KubeCluster) -> Iterator[list[str]]:
    """The target's namespaces a test moves hosts into: emptied afterwards."""
    made: list[str] = []
    yield made
    for namespace in made:
        empty_namespace(target, namespace)


def bootstrapped(path: Path, namespace: str, run_controller: Any) -> EmbeddedCluster:
    """A bootstrap's store with its hosts provisioned, as ``bootstrap`` leaves it."""
    store = EmbeddedCluster(path=path, validators=validators())
    sim = SimulatedProvisioner(hardware=HardwareFile(path))
    config = ControllerConfig(workers=2, backoff=FAST_BACKOFF, mode=Mode.BOOTSTRAP)
    with run_controller(store, sim, config) as running:
        names = [k.rpartition("/")[2] for k in create_fleet(store, namespace, HOSTS_PER_SOURCE)]
        wait_all_in(store, namespace, "provisioned", names, reported=False)
        wait_for(running.controller.idle)
    return store


def end_state(cluster: Cluster, namespace: str) -> dict[str, Any]:
    """What a move leaves in the target, without what differs between any two moves
    (times, uids, resourceVersions): equal for equal moves."""
    out: dict[str, Any] = {}
    for host in cluster.list(HOSTS, namespace)[0]:
        meta = host["metadata"]
        notes = dict(meta.get("annotations") or {})
        status = json.loads(notes.pop(ann.STATUS, "{}"))
        status.pop("lastUpdated", None)
        status.get("goodCredentials", {}).pop("version", None)
        for record in status.get("recentTransitions") or ():
            record.pop("at", None)
        status.get("provisioning", {}).pop("enteredAt", None)
        for condition in status.get("conditions") or ():
            condition.pop("lastTransitionTime", None)
        out[f"host/{meta['name']}"] = {
            "spec": host["spec"], "annotations": notes, "status": status,
            "finalizers": meta.get("finalizers"), "labels": meta.get("labels"),
        }  # fmt: skip
    for state in cluster.list(HOSTSTATES, namespace)[0]:
        meta, status = state["metadata"], state["status"]
        owner = cluster.get(HOSTS, namespace, meta["name"])["metadata"]["uid"]
        assert [o["uid"] for o in meta["ownerReferences"]] == [owner]
        out[f"hoststate/{meta['name']}"] = {
            "spec": state["spec"], "mode": status["mode"], "phase": status["phase"],
            "history": [(h["seq"], h["chapter"], h["from"], h["to"], h["reason"])
                        for h in status["history"]],
            "chapters": [(c["name"], c["transitions"], c.get("outcome"))
                         for c in status["chapters"]],
            "conditions": sorted((c["type"], c["status"], c["reason"])
                                 for c in status["conditions"]),
            "lastSeq": status["lastSeq"],
        }  # fmt: skip
    for secret in cluster.list(SECRETS, namespace)[0]:
        out[f"secret/{secret['metadata']['name']}"] = secret["data"]
    return out


def source_left(source: Cluster) -> list[str]:
    return [
        f"{r.plural}/{o['metadata']['name']}"
        for r in (HOSTS, HOSTSTATES, SECRETS)
        for o in source.list(r, None)[0]
    ]


@pytest.mark.parametrize("stop_after", ["crds", *STEPS])
def test_interrupted_after_a_step_then_run_again_ends_as_an_uninterrupted_move(
    stop_after: str,
    target: KubeCluster,
    namespaces: list[str],
    run_controller: Any,
    tmp_path: Path,
) -> None:
    reference_ns, namespace = f"pv-ref-{stop_after}", f"pv-{stop_after}"
    namespaces += [reference_ns, namespace]
    reference = bootstrapped(tmp_path / "ref.db", reference_ns, run_controller)
    before = target.stats
    report = pivot(reference, target, workers=1)
    assert len(report.moved) == HOSTS_PER_SOURCE
    made = sum(target.stats[verb] - before[verb] for verb in WRITES)
    # in the target, per host: Secret, Host, HostState, its status, the unpause; and
    # the namespace. In the source: pause, finalizer, Host, Secret (the HostState goes
    # with its Host).
    assert report.namespaces_created == [reference_ns]
    assert made == 5 * HOSTS_PER_SOURCE + 1
    assert report.writes == 5 * HOSTS_PER_SOURCE + 4 * HOSTS_PER_SOURCE
    expected = end_state(target, reference_ns)
    assert len(expected) == 3 * HOSTS_PER_SOURCE, expected.keys()

    source = bootstrapped(tmp_path / "source.db", namespace, run_controller)
    with pytest.raises(Interrupted):
        pivot(source, target, workers=1, stop_after=stop_after)
    pivot(source, target, workers=1)
    got = end_state(target, namespace)
    assert got == expected
    assert source_left(source) == []  # the source let everything go
    again = pivot(source, target, workers=1)
    assert not again.changed and again.writes == 0  # a finished move writes nothing

    # each host was paused only in between: unpaused now, the history copied whole
    for host in target.list(HOSTS, namespace)[0]:
        assert ann.PAUSED not in (host["metadata"].get("annotations") or {})
    reference.close()
    source.close()


def test_a_different_host_of_the_same_name_refuses_the_move_before_any_write(
    target: KubeCluster, namespaces: list[str], run_controller: Any, tmp_path: Path
) -> None:
    namespace = "pv-refused"
    namespaces.append(namespace)
    source = bootstrapped(tmp_path / "source.db", namespace, run_controller)
    ensure_namespaces(target, [namespace])
    other = host_manifest(namespace, 7)  # another machine, under the name host-0001
    other["metadata"]["name"] = "host-0001"
    target.create(HOSTS, other)
    before = {o: source.get(HOSTS, namespace, o)["metadata"]["resourceVersion"]
              for o in ("host-0000", "host-0001")}  # fmt: skip

    with pytest.raises(Refused) as refused:
        pivot(source, target)
    message = str(refused.value)
    assert f"Host {namespace}/host-0001" in message and "bmc-0007" in message, message
    assert "host-0000" not in message
    after = {o: source.get(HOSTS, namespace, o)["metadata"]["resourceVersion"]
             for o in ("host-0000", "host-0001")}  # fmt: skip
    assert after == before  # nothing paused, nothing written
    assert [h["metadata"]["name"] for h in target.list(HOSTS, namespace)[0]] == ["host-0001"]
    source.close()


def test_an_unfinished_move_is_carried_on_only_from_its_own_source(
    target: KubeCluster, namespaces: list[str], run_controller: Any, tmp_path: Path
) -> None:
    """A pivot from another source leaves the hosts another move left paused alone; a
    host its user had paused is moved, and stays paused."""
    namespace = "pv-origin"
    namespaces.append(namespace)
    first = bootstrapped(tmp_path / "first.db", namespace, run_controller)
    first.patch(HOSTS, namespace, "host-0001", {"metadata": {"annotations": {ann.PAUSED: "ops"}}})
    with pytest.raises(Interrupted):
        pivot(first, target, workers=1, stop_after="release")  # host-0000 released, paused
    other = EmbeddedCluster(path=tmp_path / "other.db", validators=validators())
    report = pivot(other, target)
    assert report.writes == 0 and not report.moved  # nothing of the first move touched
    held = target.get(HOSTS, namespace, "host-0000")["metadata"]["annotations"]
    assert held[ann.PAUSED] == "pivot" and held[ann.MOVED_FROM].endswith("first.db")

    pivot(first, target, workers=1)
    for name, paused in (("host-0000", None), ("host-0001", "ops")):
        notes = target.get(HOSTS, namespace, name)["metadata"].get("annotations") or {}
        assert notes.get(ann.PAUSED) == paused and ann.MOVED_FROM not in notes, (name, notes)
    assert source_left(first) == []
    first.close()
    other.close()


def test_a_write_to_the_source_after_the_copy_is_copied_before_the_source_goes(
    target: KubeCluster, namespaces: list[str], run_controller: Any, tmp_path: Path
) -> None:
    """A reconcile already under way when its host was paused writes once more, between
    the copy and the release: what it wrote reaches the target before the source goes."""
    namespace = "pv-late"
    namespaces.append(namespace)
    source = bootstrapped(tmp_path / "source.db", namespace, run_controller)
    ensure_namespaces(target, [namespace])
    hosts = source.list(HOSTS, namespace)[0]
    move = Move(source, target, namespace, "host-0000", "here", SecretUsers(hosts))
    for step in ("pause", "secret", "host", "hoststate"):
        getattr(move, step)()
    late = source.get(HOSTS, namespace, "host-0000")
    late["status"]["poweredOn"] = False
    source.update_status(HOSTS, late)
    state = source.get(HOSTSTATES, namespace, "host-0000")
    state["status"]["provisioning"]["errorMessage"] = "written late"
    source.update_status(HOSTSTATES, state)
    move.release()
    move.unpause()
    moved = target.get(HOSTS, namespace, "host-0000")
    assert json.loads(moved["metadata"]["annotations"][ann.STATUS])["poweredOn"] is False
    state = target.get(HOSTSTATES, namespace, "host-0000")
    assert state["status"]["provisioning"]["errorMessage"] == "written late"
    assert move.done[-2:] == ["source removed", "unpaused"]
    source.close()
