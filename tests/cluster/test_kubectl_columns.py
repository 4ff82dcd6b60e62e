"""The real ``kubectl get`` on a real control plane fits a 120-column terminal.

Hosts with 20-character names, driven by the controller into the phases whose words are
longest side by side: one failing (its BMC never answers) and stuck, one externally
provisioned, and two whose Nodes are mid-update (one preparing it, one rebooting). Then
``kubectl get hoststates``, ``hosts`` and ``nodepools`` print their default columns in at
most 120 characters per line, the update step, the error count and the stuck flag among
them, and ``-o wide`` prints every column the CRD declares, every condition included.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
import yaml

from state_controller.api.states import ProvisioningState
from state_controller.api.updates import UpdateStep
from state_controller.books.stuck import StuckPolicy
from state_controller.cluster.interface import HOSTS, HOSTSTATES, NODEPOOLS, SECRETS
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.controller import HostController
from state_controller.simulation.fleet import host_manifest, secret_manifest
from state_controller.simulation.nodes import SimulatedNode
from testbed.control_plane import ControlPlane
from testbed.kube import HOSTS_NS, ROOT, kubectl
from tests.conftest import FAST_BACKOFF, remove_nodes, wait_for

NS = HOSTS_NS
WIDTH = 120
PREPARING = "rack12-worker-0042ab"  # its Node begins an update and stays at its first step
REBOOTING = "rack12-worker-0043ab"  # its Node is drained and goes down for its reboot
FAILING = "rack12-worker-0044ab"  # its BMC never answers: a registration error, again
EXTERNAL = "rack12-worker-0045ab"  # externally provisioned: the longest phase there is
WORKER = {"node-role.kubernetes.io/worker": ""}
WAIT = 60.0  # generous: two shared cores


def crd_columns(plural: str) -> list[dict[str, Any]]:
    crd = yaml.safe_load((ROOT / "api" / "v1alpha1" / f"hoststate.io_{plural}.yaml").read_text())
    return list(crd["spec"]["versions"][0]["additionalPrinterColumns"])


def parse_table(text: str) -> list[dict[str, str]]:
    """kubectl's table, cut at the header's column starts (cells may be empty)."""
    header, *lines = text.rstrip("\n").splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    ends = [*starts[1:], None]
    names = header.split()
    return [
        dict(
            zip(names, [line[a:b].strip() for a, b in zip(starts, ends, strict=True)], strict=True)
        )
        for line in lines
    ]


def host(name: str, index: int, *, bmc_host: str = "", external: bool = False) -> dict[str, Any]:
    manifest = host_manifest(NS, index, image=not external)
    manifest["metadata"]["name"] = name
    bmc = manifest["spec"]["bmc"]
    bmc["credentialsName"] = f"{name}-bmc"
    if bmc_host:
        bmc["address"] = f"redfish://{bmc_host}/redfish/v1/Systems/1"
    if external:
        manifest["spec"]["externallyProvisioned"] = True
    return manifest


def status(kube: KubeCluster, name: str) -> dict[str, Any]:
    return dict(kube.get(HOSTSTATES, NS, name).get("status") or {})


def phase_is(kube: KubeCluster, name: str, phase: str) -> bool:
    return status(kube, name).get("phase") == phase


def step_is(kube: KubeCluster, name: str, step: UpdateStep) -> bool:
    return (status(kube, name).get("update") or {}).get("step") == step.value


def stuck(kube: KubeCluster, name: str) -> str:
    conditions = status(kube, name).get("conditions") or ()
    return next((str(c["status"]) for c in conditions if c["type"] == "Stuck"), "")


@pytest.fixture
def fleet(control_plane: ControlPlane, admin: KubeCluster) -> Iterator[KubeCluster]:
    """The four hosts, each where its name says, with the controller still running."""
    policy = StuckPolicy(thresholds={ProvisioningState.REGISTERING: 0.5})
    controller = HostController(
        admin,
        SimulatedProvisioner(),
        config=ControllerConfig(namespaces=(NS,), backoff=FAST_BACKOFF, stuck=policy),
    )
    controller.start()
    try:
        hosts = [
            host(PREPARING, 42),
            host(REBOOTING, 43),
            host(FAILING, 44, bmc_host="rack12-bmc-0044.invalid"),
            host(EXTERNAL, 45, external=True),
        ]
        for manifest in hosts:
            name = manifest["metadata"]["name"]
            admin.create(SECRETS, secret_manifest(NS, f"{name}-bmc", "admin", "pw"))
            admin.create(HOSTS, manifest)
        nodes = {
            name: SimulatedNode(admin, name, labels=WORKER, provider_id=f"metal3://{NS}/{name}/m")
            for name in (PREPARING, REBOOTING)
        }
        for name, node in nodes.items():
            wait_for(partial(phase_is, admin, name, "Provisioned"), WAIT, f"{name} provisioned")
            node.register()
            node.annotate({"hoststate.io/current-config": "v1"})
            wait_for(partial(step_is, admin, name, UpdateStep.UPDATED), WAIT, f"{name} followed")
            node.annotate(
                {"hoststate.io/desired-config": "v2", "hoststate.io/update-state": "Working"}
            )
        nodes[REBOOTING].cordon()
        wait_for(partial(step_is, admin, REBOOTING, UpdateStep.APPLYING), WAIT, "drained")
        nodes[REBOOTING].go_down()
        wait_for(partial(step_is, admin, REBOOTING, UpdateStep.REBOOTING), WAIT, "rebooting")
        wait_for(partial(step_is, admin, PREPARING, UpdateStep.PREPARING), WAIT, "preparing")
        wait_for(partial(phase_is, admin, FAILING, "Failed"), WAIT, "the failing host failed")
        wait_for(lambda: stuck(admin, FAILING) == "True", WAIT, "the failing host stuck")
        wait_for(partial(phase_is, admin, EXTERNAL, "ExternallyProvisioned"), WAIT, "adopted")
        wait_for(
            lambda: (
                (admin.get(NODEPOOLS, None, "worker").get("status") or {}).get(
                    "updatingMachineCount"
                )
                == 2
            ),
            WAIT,
            "the pool's counts written (at most once a second)",
        )
        yield admin
    finally:
        controller.stop()
        remove_nodes(admin)


def get(plane: ControlPlane, *args: str) -> str:
    out = kubectl(plane, "get", *args).stdout
    print(f"$ kubectl get {' '.join(args)}\n{out}")  # the samples the docs show
    return out


def widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_kubectl_get_fits_120_columns_and_wide_shows_every_condition(
    control_plane: ControlPlane, fleet: KubeCluster
) -> None:
    outs: dict[str, str] = {}
    widths: dict[str, int] = {}
    for kind, args in (
        ("hoststates", ("-n", NS)),
        ("hosts", ("-n", NS)),
        ("nodepools", ()),
    ):
        out = outs[kind] = get(control_plane, kind, *args)
        widths[kind] = widest(out)
        assert widths[kind] <= WIDTH, out
        # the default view is the CRD's priority-0 columns, in its order
        declared = [c["name"].upper() for c in crd_columns(kind) if not c.get("priority")]
        assert out.splitlines()[0].split() == ["NAME", *declared]

    table = {row["NAME"]: row for row in parse_table(outs["hoststates"])}
    assert set(table) == {PREPARING, REBOOTING, FAILING, EXTERNAL}
    assert (table[PREPARING]["PHASE"], table[PREPARING]["STEP"]) == ("Updating", "preparing update")
    assert (table[REBOOTING]["PHASE"], table[REBOOTING]["STEP"]) == ("Updating", "rebooting")
    assert table[EXTERNAL]["PHASE"] == "ExternallyProvisioned"
    failed = table[FAILING]
    assert (failed["PHASE"], failed["STUCK"], failed["STEP"]) == ("Failed", "True", "")
    assert int(failed["ERRORS"]) >= 1

    hosts = {row["NAME"]: row for row in parse_table(outs["hosts"])}
    assert hosts[FAILING]["ERROR"] == "registration error" and int(hosts[FAILING]["ERRORS"]) >= 1
    assert hosts[EXTERNAL]["STATE"] == "externally provisioned"

    # -A adds the NAMESPACE column and nothing else
    everywhere = get(control_plane, "hoststates", "-A")
    namespaces = {line.split()[0] for line in everywhere.splitlines()[1:]}
    widths["hoststates -A"] = widest(everywhere)
    assert widths["hoststates -A"] <= WIDTH + 3 + max(len("NAMESPACE"), *map(len, namespaces))
    print(f"widest lines: {widths}")

    # -o wide: every column the CRD declares, every condition among them
    for kind, args in (("hoststates", ("-n", NS)), ("hosts", ("-n", NS)), ("nodepools", ())):
        wide = outs[f"{kind} wide"] = get(control_plane, kind, *args, "-o", "wide")
        assert wide.splitlines()[0].split() == ["NAME"] + [
            c["name"].upper() for c in crd_columns(kind)
        ]
    rows = parse_table(outs["hoststates wide"])
    wide_rows = {row["NAME"]: row for row in rows}
    conditions = [c for c in crd_columns("hoststates") if "conditions[" in c["jsonPath"]]
    assert (
        {"UPDATEPREPARED", "RESUMED", "CORDONED", "NODEDEGRADED"}
        <= {c["name"].upper() for c in conditions}
        <= set(rows[0])
    )
    rebooting = wide_rows[REBOOTING]
    assert (rebooting["NODE"], rebooting["STATE"]) == (REBOOTING, "provisioned")
    assert (rebooting["UPDATED"], rebooting["UPDATEEXECUTED"], rebooting["REBOOTEDNODE"]) == (
        "False", "True", "Unknown",
    )  # fmt: skip
    assert (wide_rows[FAILING]["STATE"], wide_rows[FAILING]["REGISTERED"]) == (
        "registering", "False",
    )  # fmt: skip
    assert "did not answer" in wide_rows[FAILING]["MESSAGE"]
