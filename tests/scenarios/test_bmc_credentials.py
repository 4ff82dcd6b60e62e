"""BMC credentials come only from Secrets labelled for it (hoststate.io/bmc-credentials=true).

Any Secret of a namespace is not a Host's to send to a BMC of its choosing: one without the
label is refused by name, its data never read, sent or cached; the controller's Secret
informer holds none but the labelled ones.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from state_controller.cluster.interface import EVENTS, HOSTS, HOSTSTATES, SECRETS, Cluster
from state_controller.runtime.machinery.informer import InformerSet
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.scenarios import PASSWORD, state_of
from tests.conftest import wait_for, wait_reconciled

NS = "fleet"
LABEL = "hoststate.io/bmc-credentials"  # written out: what users write


def cached(secrets: InformerSet) -> list[str]:
    """The keys of the Secrets the controller's informer holds."""
    return secrets.keys()


def _unlabelled(name: str, password: str = PASSWORD) -> dict[str, Any]:
    """A Secret with username and password keys, as every basic-auth Secret has."""
    secret = secret_manifest(NS, name, "admin", password)
    secret["metadata"].pop("labels", None)
    secret["type"] = "kubernetes.io/basic-auth"
    return secret


def test_a_host_naming_an_unlabelled_secret_is_refused_and_its_bmc_never_reached(
    cluster: Cluster, run_controller: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with run_controller(cluster) as running:
        cluster.create(SECRETS, _unlabelled("app-db"))
        host = host_manifest(NS, 0)
        host["spec"]["bmc"]["credentialsName"] = "app-db"
        address = host["spec"]["bmc"]["address"]
        cluster.create(HOSTS, host)
        message = wait_for(
            lambda: cluster.get(HOSTS, NS, "host-0000")["status"]["errorMessage"],
            what="the registration error",
        )
        found = cluster.get(HOSTS, NS, "host-0000")
        assert found["status"]["errorType"] == "registration error"
        assert found["status"]["provisioning"]["state"] == "registering"
        assert message == (
            'spec.bmc.credentialsName: the Secret "app-db" has no label '
            "hoststate.io/bmc-credentials=true; add it if it holds this host's BMC "
            "credentials: kubectl label secret app-db -n fleet hoststate.io/bmc-credentials=true"
        )
        wait_for(
            lambda: any(
                c["type"] == "Degraded" and c["reason"] == "RegistrationError"
                for c in cluster.get(HOSTSTATES, NS, "host-0000")["status"]["conditions"]
            ),
            what="the HostState's Degraded condition",
        )
        wait_reconciled(running.controller, cluster, NS, "host-0000")
        assert address not in running.sim.machines()  # the BMC was never contacted
        assert f"{NS}/app-db" not in cached(running.controller.secrets)  # nor the Secret kept
        places = {
            "hosts": json.dumps(cluster.list(HOSTS, NS)[0]),
            "hoststates": json.dumps(cluster.list(HOSTSTATES, NS)[0]),
            "events": json.dumps(cluster.list(EVENTS, NS)[0]),
            "logs": "\n".join(r.getMessage() + str(r.__dict__) for r in caplog.records),
        }
        assert "app-db" in places["events"]  # there is something to scan
        assert [where for where, text in places.items() if PASSWORD in text] == []

        # the owner of the Secret says it is meant for BMCs: the host goes on
        cluster.patch(SECRETS, NS, "app-db", {"metadata": {"labels": {LABEL: "true"}}})
        wait_for(lambda: state_of(cluster, "host-0000") == "provisioned", what="provisioned")
        assert running.sim.machine(address).started["register"] >= 1


def _labelled(name: str) -> dict[str, Any]:
    secret = secret_manifest(NS, name, "admin", "pw")
    secret["metadata"]["labels"] = {LABEL: "true"}
    return secret


def test_the_controller_caches_only_labelled_secrets(cluster: Cluster, run_controller: Any) -> None:
    with run_controller(cluster) as running:
        secrets = running.controller.secrets
        cluster.create(SECRETS, _unlabelled("unrelated", "not-for-bmcs"))
        cluster.create(SECRETS, _labelled("host-0000-bmc"))
        wait_for(lambda: f"{NS}/host-0000-bmc" in cached(secrets), what="the BMC Secret cached")
        # the watch tells changes in order: the unrelated one came first, and was not kept
        assert f"{NS}/unrelated" not in cached(secrets)

        # a label taken away is a Secret gone, as the API server tells a selector's watch
        cluster.patch(SECRETS, NS, "host-0000-bmc", {"metadata": {"labels": None}})
        wait_for(lambda: f"{NS}/host-0000-bmc" not in cached(secrets), what="the Secret dropped")
        # and one given the label comes in
        cluster.patch(SECRETS, NS, "unrelated", {"metadata": {"labels": {LABEL: "true"}}})
        wait_for(lambda: f"{NS}/unrelated" in cached(secrets), what="the labelled Secret cached")
