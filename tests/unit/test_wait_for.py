"""The tests' one way to wait names what the last try raised when time runs out; the wait
for a fleet names each host's state."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from state_controller.api import API_VERSION
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, HOSTSTATES
from state_controller.simulation.fleet import host_manifest
from testbed.scenarios import NS, wait_all_in
from tests.conftest import wait_for


def test_a_key_error_is_named_when_the_wait_times_out() -> None:
    status: dict[str, Any] = {"status": {"phase": "Provisioned"}}
    with pytest.raises(AssertionError, match=r"the last try raised KeyError: 'stauts'"):
        wait_for(lambda: status["stauts"]["phase"], timeout=0.1, what="a typo")


def test_a_false_last_try_names_no_old_error() -> None:
    tries: Iterator[KeyError | bool] = iter([KeyError("early"), False, False, False])

    def predicate() -> bool:
        value = next(tries, False)
        if isinstance(value, Exception):
            raise value
        return value

    with pytest.raises(AssertionError) as caught:
        wait_for(predicate, timeout=0.1, what="nothing")
    assert "raised" not in str(caught.value)


def _hosts(states: dict[str, tuple[str, str | None]]) -> EmbeddedCluster:
    """Hosts in NS, each with the state its Host.status says and the one its HostState
    reports (None: no HostState)."""
    cluster = EmbeddedCluster()
    for index, (name, (state, reported)) in enumerate(states.items()):
        host = cluster.create(HOSTS, host_manifest(NS, index))
        assert host["metadata"]["name"] == name
        status: dict[str, Any] = {"provisioning": {"state": state}}
        if state == "registering":
            status |= {"errorType": "registration error", "errorMessage": "BMC said no"}
        cluster.update_status(HOSTS, {**host, "status": status})
        if reported is not None:
            made = cluster.create(
                HOSTSTATES,
                {"apiVersion": API_VERSION, "kind": "HostState",
                 "metadata": {"name": name, "namespace": NS}},
            )  # fmt: skip
            cluster.update_status(
                HOSTSTATES, {**made, "status": {"provisioning": {"state": reported}}}
            )
    return cluster


def test_waiting_for_every_host_names_each_one_s_state_when_time_runs_out() -> None:
    cluster = _hosts(
        {
            "host-0000": ("provisioned", "provisioned"),
            "host-0001": ("provisioned", "provisioning"),  # the HostState not written yet
            "host-0002": ("registering", "registering"),
            "host-0003": ("provisioned", None),
        }
    )
    try:
        with pytest.raises(AssertionError) as caught:
            wait_all_in(cluster, NS, "provisioned", timeout=0.1)
        told = str(caught.value)
        assert "waiting for every Host in fleet provisioned; now: host-0000: provisioned;" in told
        assert "host-0001: <reporting> {'host': {'provisioning'" in told
        assert "'hostState': {'state': 'provisioning'}" in told
        assert "host-0002: registering" in told and "'errorMessage': 'BMC said no'" in told
        assert "host-0003: <not reported>" in told
        # Host.status alone: only the failing host lags; a named host that is not there
        with pytest.raises(AssertionError, match="host-0002: registering") as caught:
            wait_all_in(cluster, NS, "provisioned", timeout=0.1, reported=False)
        assert "host-0001" in str(caught.value) and "<reporting>" not in str(caught.value)
        with pytest.raises(AssertionError, match="host-0009: <gone>"):
            wait_all_in(cluster, NS, "provisioned", ["host-0000", "host-0009"], timeout=0.1)
        wait_all_in(cluster, NS, "provisioned", ["host-0000"], timeout=0.1)
        wait_all_in(cluster, NS, "provisioned", ["host-0001", "host-0003"], reported=False)
    finally:
        cluster.close()


def test_waiting_for_every_host_of_an_empty_namespace_waits() -> None:
    """No Host yet is not every Host done: a wait begun before the fleet is created waits."""
    cluster = EmbeddedCluster()
    try:
        for reported in (True, False):
            with pytest.raises(AssertionError, match="now: no Host in fleet"):
                wait_all_in(cluster, NS, "provisioned", timeout=0.1, reported=reported)
    finally:
        cluster.close()
