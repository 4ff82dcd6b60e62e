"""The handover's pure parts (a BareMetalHost read as a Host, the refusals, the Ironic
node's check) and its steps on the embedded store: interrupted anywhere, run again, it
ends where an uninterrupted one would, and a finished one writes nothing."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from state_controller.adopt import translate
from state_controller.adopt.handover import STEPS, Handover, Step
from state_controller.adopt.ironic_node import node_refusal
from state_controller.api import annotations as ann
from state_controller.api.baremetalhost import host_spec, not_carried
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import BAREMETALHOSTS, HOSTS, HOSTSTATES, SECRETS
from state_controller.cluster.schema import validators
from state_controller.runtime.hosts.inputs import status_annotation

NS = "metal"
UUID = "6b5c2bd2-2f6b-4b1c-9b0e-3c1d2a0f9e11"
IMAGE = {"url": "http://192.0.2.80/os.qcow2", "checksum": "a" * 64, "checksumType": "sha256",
         "format": "qcow2"}  # fmt: skip


def bmh(state: str = "provisioned", **status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "bmc": {"address": "redfish://192.0.2.10/redfish/v1/Systems/1",
                "credentialsName": "worker-0-bmc"},
        "bootMACAddress": "52:54:00:00:10:01",
        "online": True,
        "rootDeviceHints": {"deviceName": "/dev/sda", "wwnWithExtension": "0x5000"},
        "userData": {"name": "worker-0-user-data"},
    }  # fmt: skip
    prov: dict[str, Any] = {"state": state, "ID": UUID, "bootMode": "UEFI"}
    if state == "provisioned":
        spec["image"] = dict(IMAGE)
        prov["image"] = dict(IMAGE)
    return {
        "apiVersion": BAREMETALHOSTS.api_version,
        "kind": BAREMETALHOSTS.kind,
        "metadata": {"name": "worker-0", "namespace": NS, "uid": "bmh-uid"},
        "spec": spec,
        "status": {"operationalStatus": "OK", "poweredOn": True, "provisioning": prov,
                   "goodCredentials": {"credentials": {"name": "worker-0-bmc", "namespace": NS},
                                       "credentialsVersion": "17"},
                   "hardware": {"cpu": {"arch": "x86_64", "count": 8, "flags": ["vmx"]},
                                "ramMebibytes": 4096},
                   **status},
    }  # fmt: skip


def test_the_host_spec_carries_what_the_machine_lives_by() -> None:
    spec, problem = host_spec(bmh(), with_data=False)
    assert problem == ""
    assert spec == {
        "bmc": {"address": "redfish://192.0.2.10/redfish/v1/Systems/1",
                "credentialsName": "worker-0-bmc"},
        "bootMACAddress": "52:54:00:00:10:01",
        "online": True,
        "image": {"url": IMAGE["url"], "checksum": IMAGE["checksum"], "checksumType": "sha256",
                  "diskFormat": "qcow2"},
        "rootDeviceHints": {"deviceName": "/dev/sda"},
    }  # fmt: skip
    assert not_carried(bmh()) == ["rootDeviceHints.wwnWithExtension"]
    assert not_carried(bmh(), with_data=False) == ["userData", "rootDeviceHints.wwnWithExtension"]
    # a handover carries the deployed OS's data; RAID serves only a later preparation
    with_raid = bmh()
    with_raid["spec"]["raid"] = {"softwareRAIDVolumes": [{"level": "1"}]}
    assert translate.dropped_on_handover(with_raid) == (
        ["raid"],
        ["rootDeviceHints.wwnWithExtension"],
    )
    assert translate.data_secret_names(
        {**with_raid["spec"], "preprovisioningNetworkDataName": "n"}
    ) == [
        "worker-0-user-data",
        "n",
    ]


def test_a_custom_deploy_goes_over_with_what_was_deployed() -> None:
    custom = bmh()
    custom["spec"].pop("image")
    custom["status"]["provisioning"].pop("image")
    custom["spec"]["customDeploy"] = {"method": "install_coreos"}
    assert "customDeploy differs" in translate.bmh_refusal(custom, include_consumed=False)
    custom["status"]["provisioning"]["customDeploy"] = {"method": "install_coreos"}
    assert translate.bmh_refusal(custom, include_consumed=False) == ""
    status = translate.restored_status(custom, "")
    assert status["provisioning"]["customDeploy"] == {"method": "install_coreos"}
    spec, _ = host_spec(custom)
    assert spec is not None and spec["customDeploy"] == {"method": "install_coreos"}


def test_a_spec_a_host_cannot_hold_is_refused_naming_the_field() -> None:
    bad = bmh()
    bad["spec"]["bootMACAddress"] = "not-a-mac"
    spec, problem = host_spec(bad)
    assert spec is None
    assert problem.startswith("its spec cannot be a Host's: spec.bootMACAddress")


def test_the_restored_status_is_one_the_controller_restores() -> None:
    status = translate.restored_status(bmh(), "18")
    assert status["provisioning"] == {"state": "provisioned", "id": UUID, "bootMode": "UEFI",
        "image": {"url": IMAGE["url"], "checksum": IMAGE["checksum"], "checksumType": "sha256",
                  "diskFormat": "qcow2"}}  # fmt: skip
    assert status["goodCredentials"] == {"name": "worker-0-bmc", "version": "18"}
    assert "flags" not in status["hardware"]["cpu"]  # only the fields a Host's status has
    annotation = {ann.STATUS: translate.status_annotation(status)}
    restored, problem = status_annotation(annotation)
    assert problem is None and restored is not None
    # what a tenant could write there is not taken: the node is found by its name and
    # hoststate's mark, and the credentials are sent and checked again
    assert "id" not in restored["provisioning"] and "goodCredentials" not in restored
    assert restored["provisioning"]["state"] == "provisioned"
    ready = translate.restored_status(bmh("ready"), "")
    assert ready["provisioning"]["state"] == "available" and "goodCredentials" not in ready


def test_credentials_are_vouched_for_only_at_the_version_bmo_checked() -> None:
    secret = {"metadata": {"name": "worker-0-bmc", "namespace": NS, "resourceVersion": "17"}}
    assert translate.vouched_credentials(bmh(), secret)
    secret["metadata"]["resourceVersion"] = "19"
    assert not translate.vouched_credentials(bmh(), secret)


def _with(changes: dict[str, Any], *, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    out = bmh()
    for path, value in changes.items():
        where, _, field = path.rpartition(".")
        target = out
        for part in where.split("."):
            target = target.setdefault(part, {})
        target[field] = value
    out["metadata"].update(meta or {})
    return out


@pytest.mark.parametrize(
    ("host", "says"),
    [
        (_with({}, meta={"deletionTimestamp": "2026-01-01T00:00:00Z"}), "being deleted"),
        (_with({}, meta={"annotations": {"baremetalhost.metal3.io/paused": "clusterctl"}}),
         "paused by someone else (clusterctl)"),
        (_with({}, meta={"annotations": {"baremetalhost.metal3.io/detached": ""}}),
         "Ironic no longer holds its node"),
        (_with({"status.provisioning.state": "inspecting"}), "working on it (state 'inspecting')"),
        (_with({"status.operationalStatus": "error", "status.errorType": "provisioning error"}),
         "'error' (provisioning error)"),
        (_with({"status.provisioning.ID": ""}), "no Ironic node"),
        (_with({"spec.customDeploy": {"method": "install_coreos"}}), "customDeploy differs"),
        (_with({"spec.image.url": "http://192.0.2.80/new.qcow2"}), "a deploy to do"),
        (_with({"spec.online": False}), "a power change to make"),
        (_with({"spec.consumerRef": {"kind": "Metal3Machine", "namespace": NS, "name": "m-1"}}),
         "used by Metal3Machine metal/m-1"),
    ],
)  # fmt: skip
def test_a_host_bmo_is_busy_with_is_refused_with_the_way_out(
    host: dict[str, Any], says: str
) -> None:
    assert says in translate.bmh_refusal(host, include_consumed=False)


def test_a_host_at_rest_may_go_and_a_used_one_when_asked() -> None:
    assert translate.bmh_refusal(bmh(), include_consumed=False) == ""
    consumed = _with({"spec.consumerRef": {"kind": "Metal3Machine", "name": "m-1"}})
    assert translate.bmh_refusal(consumed, include_consumed=True) == ""
    paused_by_us = _with({}, meta={"annotations": {"baremetalhost.metal3.io/paused":
                                                   translate.PAUSED_FOR_ADOPTION}})  # fmt: skip
    assert translate.bmh_refusal(paused_by_us, include_consumed=False) == ""


def node(**fields: Any) -> dict[str, Any]:
    return {"uuid": UUID, "name": f"{NS}~worker-0", "provision_state": "active",
            "target_provision_state": None, "reservation": None, "maintenance": False,
            **fields}  # fmt: skip


@pytest.mark.parametrize(
    ("found", "says"),
    [
        (None, "Ironic has no node"),
        (node(name="other~worker-0"), "not 'metal~worker-0'"),
        (node(provision_state="deploying", target_provision_state="active"), "working on node"),
        (node(reservation="conductor-1"), "a conductor holds node"),
        (node(maintenance=True, maintenance_reason="disk swap"), "maintenance (disk swap)"),
        (node(provision_state="deploy failed"), "'deploy failed', not what"),
    ],
)
def test_a_node_ironic_is_busy_with_is_refused(found: dict[str, Any] | None, says: str) -> None:
    assert says in node_refusal(found, UUID, f"{NS}~worker-0", "provisioned")


def test_a_node_at_rest_may_go() -> None:
    assert node_refusal(node(), UUID, f"{NS}~worker-0", "provisioned") == ""
    assert (
        node_refusal(node(provision_state="manageable"), UUID, f"{NS}~worker-0", "available") == ""
    )


class Nodes:
    def __init__(self) -> None:
        self.nodes = {UUID: node()}

    def read_node(self, uuid: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.nodes.get(uuid))

    def mark_node(self, uuid: str, marks: dict[str, str]) -> None:
        self.nodes[uuid]["extra"] = {**(self.nodes[uuid].get("extra") or {}), **marks}


def _fleet(cluster: EmbeddedCluster) -> None:
    cluster.create(SECRETS, {"apiVersion": "v1", "kind": "Secret",
                             "metadata": {"name": "worker-0-bmc", "namespace": NS},
                             "data": {"username": "YQ==", "password": "Yg=="}})  # fmt: skip
    made = cluster.create(BAREMETALHOSTS, bmh())
    made["status"] = bmh()["status"]
    cluster.update_status(BAREMETALHOSTS, made)
    cluster.create(HOSTSTATES, {
        "apiVersion": "hoststate.io/v1alpha1", "kind": "HostState",
        "metadata": {"name": "worker-0", "namespace": NS,
                     "labels": {ann.BAREMETALHOST: "worker-0"},
                     "ownerReferences": [{"apiVersion": BAREMETALHOSTS.api_version,
                                          "kind": "BareMetalHost", "name": "worker-0",
                                          "uid": made["metadata"]["uid"]}]},
        "spec": {"bareMetalHost": "worker-0", "node": ""},
    })  # fmt: skip


def _everything(cluster: EmbeddedCluster) -> str:
    kept = {}
    for resource in (BAREMETALHOSTS, HOSTS, HOSTSTATES, SECRETS):
        for obj in cluster.list(resource, NS)[0]:
            meta = {k: v for k, v in obj["metadata"].items()
                    if k not in ("resourceVersion", "uid", "creationTimestamp", "generation",
                                 "managedFields")}  # fmt: skip
            meta["ownerReferences"] = [
                {k: v for k, v in o.items() if k != "uid"} for o in meta.get("ownerReferences", [])
            ]
            kept[f"{resource.plural}/{obj['metadata']['name']}"] = {**obj, "metadata": meta}
    text = json.dumps(kept, sort_keys=True, default=str)
    return text.replace(cluster.get(BAREMETALHOSTS, NS, "worker-0")["metadata"]["uid"], "<uid>")


class Stop(Exception):
    pass


@pytest.mark.parametrize("stop_at", list(STEPS))
def test_a_handover_stopped_at_any_step_ends_as_one_that_was_not(
    stop_at: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        EmbeddedCluster(validators=validators()) as whole,
        EmbeddedCluster(validators=validators()) as broken,
    ):
        for cluster in (whole, broken):
            _fleet(cluster)
        ironic = Nodes()  # the broken cluster's Ironic: what was marked stays marked
        done = Handover(whole, Nodes(), NS, "worker-0").run(dry_run=False)
        assert done.verdict == "handed over" and done.steps == list(STEPS), done.line()

        def stop(*args: Any) -> Any:
            raise Stop(stop_at)

        table: dict[str, Step] = {**STEPS, stop_at: stop}
        monkeypatch.setattr("state_controller.adopt.handover.STEPS", table)
        with pytest.raises(Stop):
            Handover(broken, ironic, NS, "worker-0").run(dry_run=False)
        monkeypatch.setattr("state_controller.adopt.handover.STEPS", STEPS)
        plan = Handover(broken, ironic, NS, "worker-0").run(dry_run=True)
        assert plan.verdict == "would hand over" and f"steps: {stop_at}" in plan.detail
        again = Handover(broken, ironic, NS, "worker-0").run(dry_run=False)
        assert again.verdict == "handed over", again.line()
        assert again.steps == list(STEPS)[list(STEPS).index(stop_at) :]
        assert _everything(broken) == _everything(whole)
        finished = Handover(broken, ironic, NS, "worker-0").run(dry_run=False)
        assert (finished.verdict, finished.writes) == ("already handed over", 0)


class DeployBegins:
    """The cluster, as seen while baremetal-operator starts a deploy at the first write."""

    def __init__(self, cluster: EmbeddedCluster, nodes: Nodes) -> None:
        self.cluster, self.nodes = cluster, nodes

    def get(self, resource: Any, namespace: str | None, name: str) -> dict[str, Any]:
        return self.cluster.get(resource, namespace, name)

    def patch(self, resource: Any, namespace: str | None, name: str, body: Any) -> Any:
        self.nodes.nodes[UUID]["target_provision_state"] = "active"
        return self.cluster.patch(resource, namespace, name, body)


def test_a_host_bmo_began_work_on_meanwhile_is_left_to_it() -> None:
    """Between the first look and the pause, BMO started a deploy: the pause is taken
    back and nothing else is written."""
    with EmbeddedCluster(validators=validators()) as cluster:
        _fleet(cluster)
        nodes = Nodes()
        watched = DeployBegins(cluster, nodes)
        outcome = Handover(watched, nodes, NS, "worker-0").run(dry_run=False)  # type: ignore[arg-type]
        assert outcome.verdict == "refused" and "working on node" in outcome.detail
        assert outcome.writes == 2  # the pause, and taking it back
        left = cluster.get(BAREMETALHOSTS, NS, "worker-0")
        assert not left["metadata"].get("annotations")
        assert cluster.list(HOSTS, NS)[0] == []


def test_a_host_adopt_did_not_make_is_not_carried_on() -> None:
    """A tenant's Host named after the BareMetalHost, with ``adopted-from`` naming it and
    paused as adopt pauses its own: a run takes it for one it stopped half-way only when
    the Ironic node carries the handover's mark, which the tenant cannot write. Nothing is
    paused, labelled, marked or given."""
    with EmbeddedCluster(validators=validators()) as cluster:
        _fleet(cluster)
        uid = cluster.get(BAREMETALHOSTS, NS, "worker-0")["metadata"]["uid"]
        cluster.create(HOSTS, {
            "apiVersion": "hoststate.io/v1alpha1", "kind": "Host",
            "metadata": {"name": "worker-0", "namespace": NS,
                         "annotations": {ann.ADOPTED_FROM: uid, ann.PAUSED: "hoststate.io/adopt"}},
            "spec": host_spec(bmh())[0],
        })  # fmt: skip
        before = _everything(cluster)
        nodes = Nodes()
        outcome = Handover(cluster, nodes, NS, "worker-0").run(dry_run=False)
        assert outcome.verdict == "refused" and outcome.writes == 0, outcome.line()
        assert "does not carry this handover's mark" in outcome.detail
        assert _everything(cluster) == before
        assert "extra" not in nodes.nodes[UUID]


def test_the_line_names_each_secret_labelled_and_the_node_is_marked() -> None:
    with EmbeddedCluster(validators=validators()) as cluster:
        _fleet(cluster)
        cluster.create(SECRETS, {"apiVersion": "v1", "kind": "Secret",
                                 "metadata": {"name": "worker-0-user-data", "namespace": NS},
                                 "data": {"userData": "I2Nsb3VkLWNvbmZpZw=="}})  # fmt: skip
        nodes = Nodes()
        plan = Handover(cluster, nodes, NS, "worker-0").run(dry_run=True)
        assert (
            "would label Secret worker-0-bmc (hoststate.io/bmc-credentials=true), "
            "Secret worker-0-user-data (hoststate.io/host-data=true)"
        ) in plan.detail
        done = Handover(cluster, nodes, NS, "worker-0").run(dry_run=False)
        assert done.verdict == "handed over", done.line()
        assert (
            "labelled Secret worker-0-bmc (hoststate.io/bmc-credentials=true), "
            "Secret worker-0-user-data (hoststate.io/host-data=true)"
        ) in done.detail
        uid = cluster.get(BAREMETALHOSTS, NS, "worker-0")["metadata"]["uid"]
        assert nodes.nodes[UUID]["extra"] == {
            "hoststate_host": f"{NS}/worker-0",
            "hoststate_handed_over_from": uid,
        }


def test_a_data_secret_of_another_namespace_is_refused_and_nothing_labelled() -> None:
    """baremetal-operator reads it in its own namespace; labelling the Secret of that name
    in the host's namespace would hand over another Secret."""
    with EmbeddedCluster(validators=validators()) as cluster:
        _fleet(cluster)
        made = cluster.get(BAREMETALHOSTS, NS, "worker-0")
        made["spec"]["userData"] = {"name": "worker-0-user-data", "namespace": "elsewhere"}
        cluster.update(BAREMETALHOSTS, made)
        before = _everything(cluster)
        outcome = Handover(cluster, Nodes(), NS, "worker-0").run(dry_run=False)
        assert outcome.verdict == "refused" and outcome.writes == 0, outcome.line()
        assert "spec.userData names the Secret elsewhere/worker-0-user-data" in outcome.detail
        assert _everything(cluster) == before
