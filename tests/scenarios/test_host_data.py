"""User, network and meta data for the deployed OS, from Secrets labelled
hoststate.io/host-data=true: given at deploy; a missing, unlabelled or malformed
Secret holds the deploy with an error naming the field; contents never shown."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest

from state_controller.cluster.interface import EVENTS, HOSTS, HOSTSTATES, SECRETS, Cluster
from state_controller.provisioning.provisioner import HostData
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.alias_bomb import alias_bomb
from tests.conftest import wait_for

NS = "fleet"
LABEL = "hoststate.io/host-data"  # written out: what users write
USER_DATA = "#cloud-config\nruncmd: [echo s3cr3t-user-data-7f2a]\n"
NETWORK_DATA = "links:\n- id: eth0\n  type: phy\n  ethernet_mac_address: 52:54:00:00:00:01\n"
META_DATA = "local-hostname: node-7f2a\n"


def _data_secret(name: str, key: str, text: str, *, labelled: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {LABEL: "true"} if labelled else {},
        },
        "type": "Opaque",
        "data": {key: base64.b64encode(text.encode()).decode()},
    }


def _host(cluster: Cluster, **refs: str) -> str:
    host = host_manifest(NS, 0)
    for field_name, secret in refs.items():
        host["spec"][field_name] = {"name": secret}
    name = str(host["metadata"]["name"])
    cluster.create(SECRETS, secret_manifest(NS, f"{name}-bmc", "admin", "pw"))
    cluster.create(HOSTS, host)
    return name


def _status(cluster: Cluster, name: str) -> dict[str, Any]:
    status: dict[str, Any] = cluster.get(HOSTS, NS, name).get("status") or {}
    return status


def test_the_data_is_given_at_deploy_and_never_shown(
    cluster: Cluster, run_controller: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    cluster.create(SECRETS, _data_secret("ud", "userData", USER_DATA))
    cluster.create(SECRETS, _data_secret("nd", "networkData", NETWORK_DATA))
    cluster.create(SECRETS, _data_secret("md", "value", META_DATA))  # BMO's fallback key
    with run_controller(cluster) as running:
        name = _host(cluster, userData="ud", networkData="nd", metaData="md")
        wait_for(
            lambda: _status(cluster, name).get("provisioning", {}).get("state") == "provisioned",
            timeout=60,
            what="the host provisioned",
        )
        machine = running.sim.machine(cluster.get(HOSTS, NS, name)["spec"]["bmc"]["address"])
        expected = HostData(
            user_data=USER_DATA,
            network_data={
                "links": [
                    {"id": "eth0", "type": "phy", "ethernet_mac_address": "52:54:00:00:00:01"}
                ]
            },
            meta_data={"local-hostname": "node-7f2a"},
        )
        assert machine.config_drive == {"digest": expected.digest(), "sizes": expected.sizes()}
        wait_for(  # the Host's status is written first, its HostState's after it
            lambda: "ProvisioningComplete" in json.dumps(cluster.list(HOSTSTATES, NS)[0]),
            what="the HostState telling the deployment",
        )
        places = {
            "hosts": json.dumps(cluster.list(HOSTS, NS)[0]),
            "hoststates": json.dumps(cluster.list(HOSTSTATES, NS)[0]),
            "events": json.dumps(cluster.list(EVENTS, NS)[0]),
            "logs": "\n".join(r.getMessage() + str(r.__dict__) for r in caplog.records),
        }
        assert "ProvisioningComplete" in places["hoststates"]  # there is something to scan
        for secret in ("s3cr3t-user-data-7f2a", "node-7f2a", "ethernet_mac_address"):
            assert [where for where, text in places.items() if secret in text] == []


@pytest.mark.parametrize(
    ("secret", "message"),
    [
        (
            None,
            'spec.userData: Secret "ud" not found in namespace "fleet"; create it with the '
            'key "userData" and the label hoststate.io/host-data=true',
        ),
        (
            _data_secret("ud", "userData", USER_DATA, labelled=False),
            'spec.userData: the Secret "ud" has no label hoststate.io/host-data=true; add it '
            "if it holds this host's userData: kubectl label secret ud -n fleet "
            "hoststate.io/host-data=true",
        ),
        (
            _data_secret("ud", "other", USER_DATA),
            'spec.userData: Secret "fleet/ud" has no "userData" key (nor "value"); put the '
            'userData under "userData" in its data',
        ),
    ],
    ids=["missing", "unlabelled", "no-key"],
)
def test_a_bad_user_data_secret_holds_the_deploy_until_fixed(
    cluster: Cluster, run_controller: Any, secret: dict[str, Any] | None, message: str
) -> None:
    if secret is not None:
        cluster.create(SECRETS, secret)
    with run_controller(cluster) as running:
        name = _host(cluster, userData="ud")
        wait_for(
            lambda: _status(cluster, name).get("errorMessage") == message,
            timeout=60,
            what="the user data error on the Host",
        )
        status = _status(cluster, name)
        assert status["errorType"] == "provisioning error"
        assert status["provisioning"]["state"] == "available"  # nothing deployed
        address = cluster.get(HOSTS, NS, name)["spec"]["bmc"]["address"]
        assert running.sim.machine(address).disk_image is None
        wait_for(
            lambda: any(
                c["type"] == "Degraded" and message in c.get("message", "")
                for c in (cluster.get(HOSTSTATES, NS, name).get("status") or {}).get(
                    "conditions", []
                )
            ),
            timeout=30,
            what="the HostState's Degraded condition with the message",
        )
        # the Host's summary and the HostState's detail say the same of the refused deploy
        conditions = cluster.get(HOSTSTATES, NS, name)["status"]["conditions"]
        provisioned = next(c for c in conditions if c["type"] == "Provisioned")
        assert (provisioned["status"], provisioned["reason"]) == ("False", "ProvisioningFailed")
        on_host = next(
            c for c in _status(cluster, name)["conditions"] if c["type"] == "Provisioned"
        )
        assert on_host["reason"] == "ProvisioningFailed"
        fixed = _data_secret("ud", "userData", USER_DATA)
        if secret is None:
            cluster.create(SECRETS, fixed)
        else:
            current = cluster.get(SECRETS, NS, "ud")
            current["metadata"]["labels"] = fixed["metadata"]["labels"]
            current["data"] = fixed["data"]
            cluster.update(SECRETS, current)
        wait_for(
            lambda: _status(cluster, name).get("provisioning", {}).get("state") == "provisioned",
            timeout=60,
            what="the host provisioned once the Secret is right",
        )
        assert running.sim.machine(address).config_drive is not None


def test_network_data_that_is_no_object_is_refused(cluster: Cluster, run_controller: Any) -> None:
    cluster.create(SECRETS, _data_secret("nd", "networkData", "just a line of text"))
    with run_controller(cluster):
        name = _host(cluster, networkData="nd")
        wait_for(
            lambda: (
                "spec.networkData: the networkData in Secret"
                in str(_status(cluster, name).get("errorMessage"))
            ),
            timeout=60,
            what="the network data error",
        )
        assert "just a line" not in json.dumps(cluster.get(HOSTS, NS, name))


def test_an_alias_bomb_is_refused_and_every_other_host_goes_on(
    cluster: Cluster, run_controller: Any
) -> None:
    """A tenant's 200-byte Secret that expands to megabytes is refused naming the field;
    a provisioned Host whose Secret turns into one stays as deployed; the next Host is
    provisioned as if nothing happened."""
    cluster.create(SECRETS, _data_secret("nd", "networkData", NETWORK_DATA))
    cluster.create(SECRETS, _data_secret("bomb", "networkData", alias_bomb(6)))

    def host(index: int, **spec: Any) -> str:
        manifest = host_manifest(NS, index)
        manifest["spec"].update(spec)
        name = str(manifest["metadata"]["name"])
        cluster.create(SECRETS, secret_manifest(NS, f"{name}-bmc", "admin", "pw"))
        cluster.create(HOSTS, manifest)
        return name

    def state(name: str) -> str:
        return str(_status(cluster, name).get("provisioning", {}).get("state"))

    with run_controller(cluster) as running:
        deployed = host(0, networkData={"name": "nd"})
        wait_for(lambda: state(deployed) == "provisioned", timeout=60, what="host 0 deployed")
        secret = cluster.get(SECRETS, NS, "nd")
        secret["data"] = _data_secret("nd", "networkData", alias_bomb(6))["data"]
        cluster.update(SECRETS, secret)
        refused = host(1, networkData={"name": "bomb"})
        wait_for(
            lambda: (
                _status(cluster, refused).get("errorMessage")
                == (
                    'spec.networkData: the networkData in Secret "fleet/bomb" stands for more '
                    "than 256 KiB written out (each use of a YAML alias counts in full); write "
                    "it out in full, within those bounds"
                )
            ),
            timeout=60,
            what="the refused network data on host 1",
        )
        after = host(2)
        wait_for(lambda: state(after) == "provisioned", timeout=60, what="host 2 deployed")
        assert state(refused) == "available" and state(deployed) == "provisioned"
        address = cluster.get(HOSTS, NS, refused)["spec"]["bmc"]["address"]
        assert running.sim.machine(address).disk_image is None


def test_changed_user_data_waits_for_the_next_deploy_and_says_so(
    cluster: Cluster, run_controller: Any
) -> None:
    cluster.create(SECRETS, _data_secret("ud", "userData", USER_DATA))
    with run_controller(cluster) as running:
        name = _host(cluster, userData="ud")
        wait_for(
            lambda: _status(cluster, name).get("provisioning", {}).get("state") == "provisioned",
            timeout=60,
            what="the host provisioned",
        )
        address = cluster.get(HOSTS, NS, name)["spec"]["bmc"]["address"]
        given = running.sim.machine(address).config_drive
        assert given == {
            "digest": HostData(user_data=USER_DATA).digest(),
            "sizes": {"user_data": len(USER_DATA)},
        }
        secret = cluster.get(SECRETS, NS, "ud")
        secret["data"] = _data_secret("ud", "userData", USER_DATA + "# more\n")["data"]
        cluster.update(SECRETS, secret)
        wait_for(
            lambda: [
                e for e in cluster.list(EVENTS, NS)[0] if e.get("reason") == "HostDataChanged"
            ],
            timeout=60,
            what="the HostDataChanged event",
        )
        wait_for(
            lambda: any(
                c["type"] == "Provisioned"
                and c["status"] == "True"
                and "takes effect on the next deploy" in c.get("message", "")
                for c in (cluster.get(HOSTSTATES, NS, name).get("status") or {}).get(
                    "conditions", []
                )
            ),
            timeout=30,
            what="the HostState's Provisioned condition saying the change waits",
        )
        assert running.sim.machine(address).config_drive == given  # not redeployed
        assert _status(cluster, name)["provisioning"]["state"] == "provisioned"
        assert _status(cluster, name).get("operationalStatus") == "OK"
        secret = cluster.get(SECRETS, NS, "ud")
        secret["data"] = _data_secret("ud", "userData", USER_DATA)["data"]
        cluster.update(SECRETS, secret)  # back to what was deployed: nothing waits
        wait_for(
            lambda: any(
                c["type"] == "Provisioned" and not c.get("message")
                for c in (cluster.get(HOSTSTATES, NS, name).get("status") or {}).get(
                    "conditions", []
                )
            ),
            timeout=30,
            what="the Provisioned condition without the note",
        )


def test_a_change_made_while_the_controller_was_down_is_told_after_its_restart(
    cluster: Cluster, run_controller: Any
) -> None:
    cluster.create(SECRETS, _data_secret("ud", "userData", USER_DATA))
    sim = SimulatedProvisioner()
    with run_controller(cluster, sim):
        name = _host(cluster, userData="ud")
        wait_for(
            lambda: (
                _status(cluster, name).get("provisioning", {}).get("dataDigest")
                == HostData(user_data=USER_DATA).digest()
            ),
            timeout=60,
            what="the deployed data's digest in the status",
        )
    secret = cluster.get(SECRETS, NS, "ud")
    secret["data"] = _data_secret("ud", "userData", USER_DATA + "# later\n")["data"]
    cluster.update(SECRETS, secret)
    with run_controller(cluster, sim):
        wait_for(
            lambda: [
                e for e in cluster.list(EVENTS, NS)[0] if e.get("reason") == "HostDataChanged"
            ],
            timeout=60,
            what="the HostDataChanged event after the restart",
        )
