"""A real OpenStack Ironic (standalone, fake-hardware) on loopback for these scenarios.

``tools/ironic/install.sh`` builds (once, cached) the virtualenv Ironic runs from. Two
servers per session: ``ironic``, where only the fake management interface is slow
(setting a boot device holds the node lock for 10 s: a lock to run into), and
``slow_ironic``, whose fake deploys take 4 s (a deploy to interrupt). Each test starts
with no nodes in the server(s) it uses.

A scenario on the fast server takes what it needs of: ``api`` (Ironic as the test looks
at it), ``prov`` (the provisioner on fake-hardware), ``cluster`` (an embedded one with
schema validation: here it replaces the session-wide fixture of the same name, which runs
on two kinds of cluster) and ``observed`` (the controller over both, running for the test).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.provisioning.ironic import IronicProvisioner
from state_controller.wiring import Observed
from testbed.ironic_server import IronicServer
from testbed.processes import installed
from tests.ironic.helpers import IronicAPI, new_cluster, provisioner, running

ROOT = Path(__file__).resolve().parents[2]
# Only the fake management interface is slow on the "fast" server: nothing in a host's life
# calls it, a test does to hold a node's lock (not vendor: its passthru is also a clean step).
# 20 s: the controller must ask for its work while the lock is held, and one CI run on a
# busy machine saw no request within 10 s of the spec change.
FAST_DELAYS = {"management": 20}
SLOW_DELAYS = {"deploy": 4}


@pytest.fixture(scope="session")
def ironic_venv() -> str:
    return str(installed("ironic"))


@pytest.fixture(scope="session")
def ironic_server(
    ironic_venv: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[IronicServer]:
    yield from _serve(ironic_venv, tmp_path_factory.mktemp("ironic"), FAST_DELAYS)


@pytest.fixture(scope="session")
def slow_ironic_server(
    ironic_venv: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[IronicServer]:
    yield from _serve(ironic_venv, tmp_path_factory.mktemp("ironic-slow"), SLOW_DELAYS)


def _serve(venv: str, workdir: Path, delays: dict[str, float]) -> Iterator[IronicServer]:
    with IronicServer(venv, workdir, fake_delays=delays) as server:
        yield server


def _running_and_empty(server: IronicServer) -> IronicServer:
    """A test may have stopped the session's server, and leaves nodes behind: undo both."""
    if not server.running:
        server.start()
    IronicAPI(server.url).purge()
    return server


@pytest.fixture
def ironic(ironic_server: IronicServer) -> IronicServer:
    """The fast Ironic, running and empty."""
    return _running_and_empty(ironic_server)


@pytest.fixture
def slow_ironic(slow_ironic_server: IronicServer) -> IronicServer:
    """The Ironic with slow fake deploys, running and empty."""
    return _running_and_empty(slow_ironic_server)


@pytest.fixture
def api(ironic: IronicServer) -> IronicAPI:
    return IronicAPI(ironic.url)


@pytest.fixture
def prov(ironic: IronicServer) -> IronicProvisioner:
    return provisioner(ironic.url)


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    store = new_cluster()
    yield store
    store.close()


@pytest.fixture
def observed(cluster: EmbeddedCluster, prov: IronicProvisioner) -> Iterator[Observed]:
    """The controller over ``cluster`` and ``prov``, stopped after the test."""
    with running(cluster, prov) as controller:
        yield controller
