"""metal3 BareMetalHosts observed: baremetal-operator drives them (played here, through
BMO's own CRD on the real kube-apiserver), hoststate tells their story through the same
HostState, conditions, Events, metrics and stuck detection as a Host it drives, and never
writes a BareMetalHost."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest

from state_controller.api.states import ProvisioningState as S
from state_controller.books.stuck import StuckPolicy
from state_controller.cluster.interface import BAREMETALHOSTS, HOSTSTATES, Cluster
from state_controller.observability.collectors import STATE_CODES
from state_controller.runtime.config import ControllerConfig
from state_controller.simulation.baremetal_operator import PlayedBMO
from state_controller.simulation.nodes import SimulatedNode
from state_controller.updates.signals import MCO
from testbed.scenarios import WORKER, condition, events_for
from tests.conftest import FAST_BACKOFF, NODE_STATE_NAMESPACE, wait_for

NS = "fleet"
# what an image server answered, as Ironic's last_error quotes it
WORDS = "Image download failed: HTTP/1.1 403 Forbidden <title>internal admin</title>"


def observing(stuck: StuckPolicy | None = None) -> ControllerConfig:
    return ControllerConfig(
        workers=2,
        backoff=FAST_BACKOFF,
        observe_baremetalhosts=True,
        stuck=stuck or StuckPolicy(),
    )


def state_shown(cluster: Cluster, name: str) -> dict[str, Any]:
    return cluster.get(HOSTSTATES, NS, name).get("status") or {}


def wait_state(cluster: Cluster, name: str, state: str) -> dict[str, Any]:
    status: dict[str, Any] = wait_for(
        lambda: (
            (s := state_shown(cluster, name)).get("provisioning", {}).get("state") == state and s
        ),
        what=f"the HostState of {name} in {state!r}",
    )
    return status


def test_a_baremetalhost_life_is_reported_at_bmos_times_and_never_written(
    cluster: Cluster, run_controller: Any
) -> None:
    stuck = StuckPolicy(thresholds={S.INSPECTING: 2.0})
    with run_controller(cluster, config=observing(stuck)) as running:
        bmo = PlayedBMO(cluster, NS, "worker-0")
        t0 = time.time() - 600  # BMO's clock: what it wrote, not when it was seen
        bmo.show("registering", started=("register",), at=t0)
        wait_state(cluster, "worker-0", "registering")
        bmo.show("inspecting", ended=("register",), started=("inspect",), at=t0 + 30)
        # held in inspection past its 2 s threshold: Stuck, told on the BareMetalHost
        wait_for(
            lambda: condition(cluster.get(HOSTSTATES, NS, "worker-0"), "Stuck")["status"] == "True",
            what="worker-0 stuck in inspection",
        )
        wait_for(
            lambda: any(e["reason"] == "Stuck" for e in events_for(cluster, "worker-0")),
            what="the Stuck Event",
        )
        bmo.show("available", ended=("inspect",), at=t0 + 300)
        wait_state(cluster, "worker-0", "available")  # else it is one marked jump
        bmo.show("provisioning", started=("provision",), at=t0 + 320, poweredOn=True)
        wait_state(cluster, "worker-0", "provisioning")
        last = bmo.show("provisioned", ended=("provision",), at=t0 + 500, poweredOn=True)
        status = wait_state(cluster, "worker-0", "provisioned")

        state = cluster.get(HOSTSTATES, NS, "worker-0")
        [owner] = state["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"]) == ("BareMetalHost", last["metadata"]["uid"])
        assert state["spec"]["bareMetalHost"] == "worker-0"
        assert status["phase"] == "Provisioned"
        assert condition(state, "Ready")["status"] == "True"
        moves = [(h["from"], h["to"], h["reason"]) for h in status["history"]]
        assert moves == [
            ("", "registering", "FirstObserved"),
            ("registering", "inspecting", "Observed"),
            ("inspecting", "available", "Observed"),
            ("available", "provisioning", "Observed"),
            ("provisioning", "provisioning", "PoweredOn"),
            ("provisioning", "provisioned", "Observed"),
        ]
        assert "operationHistory.provision.end" in status["history"][-1]["message"]
        times = [h["at"] for h in status["history"]]
        assert times == sorted(times)  # the power record takes BMO's write time too
        # BMO's 270 s of inspection, not the seconds between two looks of this test
        assert (
            running.sample("hoststate_state_duration_seconds_sum", {"state": "inspecting"}) == 270
        )
        assert (
            running.sample("hoststate_transitions_total", {"from": "inspecting", "to": "available"})
            == 1
        )
        # the per-host series the Fleet dashboard reads, as for a driven host
        labels = {"namespace": NS, "host": "worker-0"}
        assert running.sample("hoststate_host_state", labels) == STATE_CODES[S.PROVISIONED]

        # never written: the BareMetalHost is as the played BMO last wrote it
        wait_for(running.controller.idle)
        now = cluster.get(BAREMETALHOSTS, NS, "worker-0")
        assert now["metadata"]["resourceVersion"] == last["metadata"]["resourceVersion"]
        assert "finalizers" not in now["metadata"]


def test_bmos_errors_are_taken_with_its_count_and_a_restart_records_nothing_new(
    cluster: Cluster, run_controller: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="state_controller.runtime.baremetalhosts.reconciler")
    with run_controller(cluster, config=observing()) as first:
        bmo = PlayedBMO(cluster, NS, "worker-1")
        bmo.show("provisioning", started=("provision",))
        failing = {
            "operationalStatus": "error",
            "errorType": "provisioning error",
            "errorMessage": WORDS,
        }
        bmo.show("provisioning", errorCount=3, **failing)
        status = wait_for(
            lambda: (
                (s := state_shown(cluster, "worker-1"))["provisioning"].get("errorCount") == 3 and s
            ),
            what="BMO's error count on the HostState",
        )
        assert status["provisioning"]["errorType"] == "provisioning error"
        assert condition(cluster.get(HOSTSTATES, NS, "worker-1"), "Degraded")["reason"] == (
            "ProvisioningError"
        )
        wait_for(
            lambda: any(
                e["reason"] == "ProvisioningFailed" for e in events_for(cluster, "worker-1")
            ),
            what="the ProvisioningFailed Event",
        )
        # Ironic's words (what a server answered) reach the operator's log, once, and
        # neither the HostState nor an Event: they say which failure it was
        assert (
            "provisioning or deprovisioning the host failed"
            in (status["provisioning"]["errorMessage"])
        )
        shown = json.dumps(
            [cluster.get(HOSTSTATES, NS, "worker-1"), events_for(cluster, "worker-1")]
        )
        # the server's words, not a bare "403": a uid, a resourceVersion or a timestamp
        # of the objects shown may hold those three digits
        assert not any(w in shown for w in ("internal admin", "HTTP/1.1 403", "403 Forbidden"))
        said = [r for r in caplog.records if WORDS in r.getMessage()]
        assert len(said) == 1 and said[0].levelname == "WARNING", said
        assert getattr(said[0], "host", None) == f"{NS}/worker-1"
        bmo.claim("Metal3Machine", NS, "worker-1-abc")  # kept across the restart too
        wait_for(
            lambda: any(e["reason"] == "Claimed" for e in events_for(cluster, "worker-1")),
            timeout=60,
            what="the Claimed Event",
        )
        wait_for(first.controller.idle)
        kept = cluster.get(HOSTSTATES, NS, "worker-1")
        told = sorted((e["reason"], e.get("count", 1)) for e in events_for(cluster, "worker-1"))

    with run_controller(cluster, config=observing()) as second:
        wait_for(
            lambda: second.controller.reconciled(
                "bmh:fleet/worker-1", bmo.obj["metadata"]["resourceVersion"]
            ),
            what="the restarted controller's reconcile of worker-1",
        )
        wait_for(second.controller.idle)
        again = cluster.get(HOSTSTATES, NS, "worker-1")
        assert again["metadata"]["resourceVersion"] == kept["metadata"]["resourceVersion"]
        assert second.book("fleet/worker-1").cursor.error_count == 3
        assert second.book("fleet/worker-1").facts.consumer == f"Metal3Machine {NS}/worker-1-abc"
        now_told = sorted((e["reason"], e.get("count", 1)) for e in events_for(cluster, "worker-1"))
        assert now_told == told  # no Event told again


def test_the_node_of_a_baremetalhost_tells_its_updates_in_the_same_history(
    cluster: Cluster, run_controller: Any
) -> None:
    """One machine, one story: cluster-api-provider-metal3's providerID links the Node to
    the BareMetalHost, and the Node's update is a chapter after its provisioning."""
    with run_controller(cluster, config=observing()) as running:
        bmo = PlayedBMO(cluster, NS, "worker-2")
        bmo.show("provisioned", started=("provision",), ended=("provision",), poweredOn=True)
        wait_state(cluster, "worker-2", "provisioned")
        node = SimulatedNode(
            cluster, "node-2", labels=WORKER, provider_id=f"metal3://{NS}/worker-2/m-2"
        )
        node.register()
        node.annotate(
            {MCO + "currentConfig": "v1", MCO + "desiredConfig": "v1", MCO + "state": "Done"}
        )
        wait_for(
            lambda: cluster.get(HOSTSTATES, NS, "worker-2")["spec"]["node"] == "node-2",
            what="node-2 linked to the BareMetalHost's HostState",
        )
        node.annotate({MCO + "desiredConfig": "v2", MCO + "state": "Working"})
        wait_for(
            lambda: (
                (state_shown(cluster, "worker-2").get("update") or {}).get("step")
                not in (None, "updated")
            ),
            what="the update under way",
        )
        node.annotate({MCO + "currentConfig": "v2", MCO + "state": "Done"})
        wait_for(
            lambda: (
                (state_shown(cluster, "worker-2").get("update") or {}).get("currentConfig") == "v2"
            ),
            what="the update done",
        )
        wait_for(running.controller.idle)
        status = state_shown(cluster, "worker-2")
        tos = [h["to"] for h in status["history"]]
        assert tos[0] == "provisioned" and tos[-1] == "provisioned"
        assert "update pending" in tos or "preparing update" in tos, tos
        assert status["chapters"][-1]["name"] == "update"
        assert status["chapters"][-1]["outcome"] == "completed"
        assert not cluster.list(HOSTSTATES, NODE_STATE_NAMESPACE)[0]  # no node-only book


def test_a_node_named_by_the_older_uid_provider_id_joins_its_baremetalhost(
    cluster: Cluster, run_controller: Any
) -> None:
    """cluster-api-provider-metal3's older providerID, metal3://<BareMetalHost UID>."""
    with run_controller(cluster, config=observing()):
        bmo = PlayedBMO(cluster, NS, "worker-3")
        bmo.show("provisioned", started=("provision",), ended=("provision",))
        wait_state(cluster, "worker-3", "provisioned")
        uid = bmo.obj["metadata"]["uid"]
        SimulatedNode(cluster, "node-3", labels=WORKER, provider_id=f"metal3://{uid}").register()
        wait_for(
            lambda: cluster.get(HOSTSTATES, NS, "worker-3")["spec"]["node"] == "node-3",
            what="node-3 linked by the BareMetalHost's UID",
        )


def test_bmos_conditions_and_the_consumer_are_shown_and_a_claim_is_an_event(
    cluster: Cluster, run_controller: Any
) -> None:
    """What BMO writes beside the state (its own conditions) and who uses the host
    (spec.consumerRef, as cluster-api-provider-metal3 sets it) reach the HostState apart
    from hoststate's own conditions; a claim, a release and the BMC turning critical are
    Events on the BareMetalHost."""

    def reasons() -> list[str]:
        return [e["reason"] for e in events_for(cluster, "worker-4")]

    with run_controller(cluster, config=observing()) as running:
        bmo = PlayedBMO(cluster, NS, "worker-4")
        bmo.show("available", healthy="Healthy")
        status = wait_for(
            lambda: (
                (s := state_shown(cluster, "worker-4")).get("bareMetalHost", {}).get("conditions")
                and s
            ),
            timeout=60,
            what="BMO's conditions on the HostState",
        )
        shown = {c["type"]: c for c in status["bareMetalHost"]["conditions"]}
        assert shown["AvailableForProvisioning"]["status"] == "True"
        assert shown["Healthy"]["reason"] == "Healthy"
        written = bmo.obj["status"]["conditions"][0]["lastTransitionTime"]
        assert shown["Manageable"]["lastTransitionTime"] == written  # BMO's time, as written
        assert status["bareMetalHost"]["online"] is True
        assert "Healthy" not in {c["type"] for c in status["conditions"]}  # not ours
        assert "consumer" not in status

        bmo.claim("Metal3Machine", NS, "worker-4-abc")
        wait_for(
            lambda: (
                state_shown(cluster, "worker-4").get("consumer")
                == f"Metal3Machine {NS}/worker-4-abc"
            ),
            timeout=60,
            what="the consumer on the HostState",
        )
        wait_for(lambda: "Claimed" in reasons(), timeout=60, what="the Claimed Event")
        [claimed] = [e for e in events_for(cluster, "worker-4") if e["reason"] == "Claimed"]
        assert claimed["type"] == "Normal"
        assert (
            claimed["message"] == f"claimed by Metal3Machine {NS}/worker-4-abc (spec.consumerRef)"
        )

        bmo.show("available", healthy="CriticalError")
        wait_for(
            lambda: "HealthyCriticalError" in reasons(), timeout=60, what="the BMC health Event"
        )
        bmo.release()
        wait_for(lambda: "Released" in reasons(), timeout=60, what="the Released Event")
        wait_for(running.controller.idle, timeout=60)
        status = state_shown(cluster, "worker-4")
        assert "consumer" not in status
        healthy = next(c for c in status["bareMetalHost"]["conditions"] if c["type"] == "Healthy")
        assert (healthy["status"], healthy["reason"]) == ("False", "CriticalError")
        assert reasons().count("Claimed") == 1  # each change told once
