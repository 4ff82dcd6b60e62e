"""``kubectl wait --for=condition=Provisioned host/NAME`` on a real control plane.

The real kubectl waits on the Host's own conditions: it returns 0 once a host is
provisioned, and times out (non-zero) on a host whose provisioning fails every time (the
simulated hardware's fault plan says so), whose Provisioned condition stays False with
the reason ProvisioningFailed. kubectl compares each condition's observedGeneration
with the Host's generation: a condition about an older spec is not met. The failed
host's wait is the docs' sample kubectl-wait-failed (testbed.samples).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Any

import pytest

from state_controller.cluster.interface import HOSTS, SECRETS
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.fault_plan import Fault, FaultPlan
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.controller import HostController
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed import samples
from testbed.control_plane import ControlPlane
from testbed.kube import HOSTS_NS, kubectl
from tests.conftest import FAST_BACKOFF, wait_for

NS = HOSTS_NS
GOOD = "rack2-node-01"
BAD = "rack2-node-02"  # every deploy of its image fails
WAIT = 120.0  # generous: two shared cores, and a CI run may be going on


def condition(kube: KubeCluster, name: str, ctype: str) -> dict[str, Any]:
    host = kube.get(HOSTS, NS, name)
    conditions = (host.get("status") or {}).get("conditions") or ()
    return next((dict(c) for c in conditions if c["type"] == ctype), {})


@pytest.fixture
def hosts(admin: KubeCluster) -> Iterator[tuple[KubeCluster, HostController]]:
    """Two hosts with an image, one of whose deploys always fail, and a controller."""
    plan = FaultPlan({f"{NS}/{BAD}": [Fault("provisioning", times=None)]})
    controller = HostController(
        admin,
        SimulatedProvisioner(faults=plan),
        config=ControllerConfig(namespaces=(NS,), backoff=FAST_BACKOFF),
    )
    controller.start()
    try:
        for index, name in ((60, GOOD), (61, BAD)):
            manifest = host_manifest(NS, index)
            manifest["metadata"]["name"] = name
            manifest["spec"]["bmc"]["credentialsName"] = f"{name}-bmc"
            admin.create(SECRETS, secret_manifest(NS, f"{name}-bmc", "admin", "pw"))
            admin.create(HOSTS, manifest)
        yield admin, controller
    finally:
        controller.stop()


def test_kubectl_wait_returns_when_provisioned_and_times_out_when_provisioning_failed(
    control_plane: ControlPlane, hosts: tuple[KubeCluster, HostController]
) -> None:
    kube, controller = hosts
    done = kubectl(
        control_plane,
        *(
            "wait",
            "-n",
            NS,
            "--for=condition=Provisioned",
            f"host/{GOOD}",
            f"--timeout={WAIT:.0f}s",
        ),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"host.hoststate.io/{GOOD} condition met" in done.stdout
    provisioned = condition(kube, GOOD, "Provisioned")
    generation = kube.get(HOSTS, NS, GOOD)["metadata"]["generation"]
    assert provisioned["reason"] == "Provisioned"
    assert provisioned["observedGeneration"] == generation
    ready = kubectl(
        control_plane, "wait", "-n", NS, "--for=condition=Ready", f"host/{GOOD}", "--timeout=60s"
    )
    assert ready.returncode == 0

    wait_for(
        lambda: condition(kube, BAD, "Provisioned").get("reason") == "ProvisioningFailed",
        WAIT,
        f"{BAD}'s deploy failed",
    )
    wait = ("wait", "-n", NS, "--for=condition=Provisioned", f"host/{BAD}", "--timeout=5s")
    failed = kubectl(control_plane, *wait, check=False)
    assert failed.returncode == 1
    assert "timed out" in failed.stderr
    told = condition(kube, BAD, "Provisioned")
    assert told["status"] == "False" and "checksum" in told["message"]
    why = ("get", "host", BAD, "-n", NS, "-o", f"jsonpath={samples.CONDITIONS}")
    message = '{.status.conditions[?(@.type=="Provisioned")].message}{"\\n"}'
    said = ("get", "host", BAD, "-n", NS, "-o", f"jsonpath={message}")
    sample = "".join(
        f"$ kubectl {shlex.join(args)}\n{done.stdout}{done.stderr}"
        for args, done in (
            (wait, failed),
            (why, kubectl(control_plane, *why)),
            (said, kubectl(control_plane, *said)),
        )
    )
    print(sample)
    assert samples.made_by_a_test("kubectl-wait-failed", sample) == []
    # the other way round, it is met at once
    not_provisioned = kubectl(
        control_plane,
        *("wait", "-n", NS, "--for=condition=Provisioned=false", f"host/{BAD}", "--timeout=30s"),
    )
    assert not_provisioned.returncode == 0

    # a condition about an older generation is not met: with the controller stopped, a
    # change of the spec leaves the conditions one generation behind the Host
    controller.stop()
    kube.patch(HOSTS, NS, GOOD, {"spec": {"description": "rack 2, slot 1"}})
    assert kube.get(HOSTS, NS, GOOD)["metadata"]["generation"] == generation + 1
    behind = kubectl(
        control_plane,
        *("wait", "-n", NS, "--for=condition=Provisioned", f"host/{GOOD}", "--timeout=3s"),
        check=False,
    )
    assert behind.returncode == 1, behind.stdout
