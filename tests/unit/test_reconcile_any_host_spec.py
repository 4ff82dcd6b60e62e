"""Property: whatever spec and annotations a Host carries, a reconcile never raises,
and every host ends in a defined state with statuses that match the API models."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state_controller.api import annotations as ann
from state_controller.api.host_status import HostStatus
from state_controller.api.hoststate import HostStateStatus
from state_controller.api.states import ProvisioningState
from state_controller.cluster.interface import HOSTS, HOSTSTATES, NotFound
from state_controller.simulation.fleet import secret_manifest
from testbed.hand_driven import HandDriven

PASSWORD = "Zq7-never-shown"
text = st.text(max_size=40)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), text)
addresses = st.one_of(
    st.sampled_from(
        ["ipmi://10.0.0.1", "redfish://bmc.example/redfish/v1/Systems/1", "ipmi://bad.invalid",
         "ipmb://x", "redfish://", "ipmi://h:99999", "", "idrac-virtualmedia://h:443/x"]
    ),
    text,
)  # fmt: skip
bmc = st.fixed_dictionaries(
    {},
    optional={
        "address": addresses,
        "credentialsName": st.sampled_from(["creds", "missing", "Bad_Name", ""]),
        "disableCertificateVerification": scalars,
    },
)
image = st.fixed_dictionaries(
    {},
    optional={
        "url": st.sampled_from(["http://i.example/os.img", "ftp://x", "", "file:///os.img"]),
        "checksum": st.sampled_from(["abc", "", "http://i.example/os.sha256"]),
        "checksumType": st.sampled_from(["md5", "sha256", "crc32"]),
        "diskFormat": st.sampled_from(["raw", "qcow2", "floppy"]),
    },
)
specs = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "bmc": st.one_of(bmc, scalars),
            "image": st.one_of(image, scalars),
            "online": st.one_of(st.booleans(), scalars),
            "externallyProvisioned": st.booleans(),
            "bootMACAddress": st.sampled_from(["52:54:00:00:00:01", "zz", ""]),
            "onlin": st.booleans(),
            "rootDeviceHints": st.one_of(st.just({"minSizeGigabytes": -1}), st.just({"wwn": "x"})),
        },
    ),
    scalars,
    st.lists(scalars, max_size=2),
)
annotation_values = st.one_of(
    text, st.just("disabled"), st.just("{}"), st.just('{"cpu": {"count": 4}}'), st.just("{bad")
)
annotation_maps = st.dictionaries(st.sampled_from(list(ann.ALL)), annotation_values, max_size=3)
secrets = st.sampled_from(["good", "absent", "no-password", "not-base64"])


def _secret(kind: str) -> dict[str, Any] | None:
    if kind == "absent":
        return None
    secret = secret_manifest("ns", "creds", "admin", PASSWORD)
    if kind == "no-password":
        del secret["data"]["password"]
    if kind == "not-base64":
        secret["data"]["password"] = "%%%"
    return secret


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=specs,
    annotations=annotation_maps,
    secret=secrets,
    delete_after=st.one_of(st.none(), st.integers(0, 4)),
    rounds=st.integers(1, 6),
)
def test_reconcile_never_raises_and_lands_in_a_defined_state(
    spec: Any, annotations: dict[str, str], secret: str, delete_after: int | None, rounds: int
) -> None:
    s = HandDriven()  # no schema validation: anything may be stored
    store, hosts, reconciler = s.store, s.hosts, s.reconciler
    try:
        created_secret = _secret(secret)
        if created_secret is not None:
            s.add_secret(created_secret)
        s.create(
            {"apiVersion": "hoststate.io/v1alpha1", "kind": "Host",
             "metadata": {"name": "h", "namespace": "ns", "annotations": annotations},
             "spec": spec},
        )  # fmt: skip
        paused = ann.PAUSED in annotations
        writes_before = store.stats["update_status"]
        for round_ in range(rounds):
            if delete_after == round_:
                store.delete(HOSTS, "ns", "h")
            try:
                hosts.mutate(store.get(HOSTS, "ns", "h"))
            except NotFound:
                hosts.forget("ns/h")
            reconciler.reconcile("ns/h")

        if paused:
            assert store.stats["update_status"] == writes_before
            return
        book = reconciler.books.get("ns/h")
        try:
            stored = store.get(HOSTS, "ns", "h")
        except NotFound:
            return  # deleted and released: a defined end
        assert book is not None
        assert isinstance(book.cursor.state, ProvisioningState)
        HostStatus.model_validate(stored["status"])
        assert stored["status"]["provisioning"]["state"] == book.cursor.state.value
        state = store.get(HOSTSTATES, "ns", "h")
        parsed = HostStateStatus.model_validate(state["status"])
        assert parsed.provisioning.state == book.cursor.state.value
        if book.cursor.error_type is not None:
            assert parsed.provisioning.error_message  # every error says why
        assert PASSWORD not in json.dumps(stored) and PASSWORD not in json.dumps(state)
    finally:
        s.close()
