"""A pivot moves each BMC Secret with its labels: one labelled
hoststate.io/bmc-credentials=true stays readable by the target's controller, and one
without the label moves unlabelled, so the move grants nothing the source did not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from state_controller.cluster.interface import HOSTS, SECRETS
from state_controller.cluster.kube import KubeCluster
from state_controller.pivot import pivot
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.control_plane import ControlPlane
from tests.cluster.test_pivot_steps import bootstrapped
from tests.conftest import empty_namespace

pytestmark = pytest.mark.slow

NS = "pv-credentials"
LABEL = "hoststate.io/bmc-credentials"


@pytest.fixture
def target(control_plane: ControlPlane) -> Iterator[KubeCluster]:
    kube = KubeCluster.from_kubeconfig(str(control_plane.kubeconfig))
    yield kube
    empty_namespace(kube, NS)
    kube.close()


def test_secrets_move_with_their_labels_and_none_is_added(
    target: KubeCluster, run_controller: Any, tmp_path: Path
) -> None:
    source = bootstrapped(tmp_path / "source.db", NS, run_controller)
    loose = secret_manifest(NS, "loose-bmc", "admin", "pw")
    loose["metadata"].pop("labels", None)
    source.create(SECRETS, loose)
    host = host_manifest(NS, 9)
    host["spec"]["bmc"]["credentialsName"] = "loose-bmc"
    source.create(HOSTS, host)

    report = pivot(source, target, workers=1)
    assert len(report.moved) == 3
    labels = {
        s["metadata"]["name"]: (s["metadata"].get("labels") or {}).get(LABEL)
        for s in target.list(SECRETS, NS)[0]
    }
    assert labels == {"host-0000-bmc": "true", "host-0001-bmc": "true", "loose-bmc": None}
    source.close()
