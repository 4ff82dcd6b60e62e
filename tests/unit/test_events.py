"""Events: reaching provisioned is one; an Event that repeats one (same object, reason and
message within 10 minutes) is counted on it, not created again."""

from __future__ import annotations

from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import EVENTS, HOSTS
from state_controller.observability.events import EventRecorder
from state_controller.simulation.fleet import host_manifest
from testbed.clocks import T0


def test_a_repeat_is_counted_on_the_event_it_repeats() -> None:
    cluster = EmbeddedCluster()
    host = cluster.create(HOSTS, host_manifest("ns", 0))
    events = EventRecorder(cluster, instance="test")
    events.emit(host, "Warning", "RegistrationError", "BMC refused the credentials", T0)
    events.emit(host, "Warning", "RegistrationError", "BMC refused the credentials", T0 + 60)
    events.emit(host, "Warning", "RegistrationError", "BMC refused the credentials", T0 + 120)
    [event] = cluster.list(EVENTS, "ns")[0]
    assert event["count"] == 3
    assert event["firstTimestamp"] == "2027-01-15T08:00:00Z"
    assert event["lastTimestamp"] == "2027-01-15T08:02:00Z"
    events.emit(host, "Warning", "RegistrationError", "BMC address does not resolve", T0 + 180)
    events.emit(host, "Warning", "RegistrationError", "BMC refused the credentials", T0 + 900)
    counts = sorted((e["message"], e["count"]) for e in cluster.list(EVENTS, "ns")[0])
    assert counts == [
        ("BMC address does not resolve", 1),
        ("BMC refused the credentials", 1),  # 13 minutes on: a new one
        ("BMC refused the credentials", 3),
    ]


def test_a_repeat_of_an_expired_event_is_created_again() -> None:
    cluster = EmbeddedCluster()
    host = cluster.create(HOSTS, host_manifest("ns", 0))
    events = EventRecorder(cluster, instance="test")
    events.emit(host, "Normal", "Registered", "registered", T0)
    [event] = cluster.list(EVENTS, "ns")[0]
    cluster.delete(EVENTS, "ns", event["metadata"]["name"])  # the API server's TTL
    events.emit(host, "Normal", "Registered", "registered", T0 + 10)
    [again] = cluster.list(EVENTS, "ns")[0]
    assert again["count"] == 1
