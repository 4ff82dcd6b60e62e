"""What the tests against the real control plane share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from state_controller.cluster.kube import KubeCluster
from testbed.control_plane import ControlPlane
from testbed.kube import HOSTS_NS
from tests.conftest import empty_namespace


@pytest.fixture
def admin(control_plane: ControlPlane) -> Iterator[KubeCluster]:
    """The cluster as its administrator; the Hosts' namespace is emptied afterwards."""
    kube = KubeCluster.from_kubeconfig(str(control_plane.kubeconfig))
    yield kube
    empty_namespace(kube, HOSTS_NS)
    kube.close()
