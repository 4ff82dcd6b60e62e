"""A forced detach on a real Ironic (tools/ironic/requirements.txt): a node whose deploy
waits on its ramdisk (``wait call-back``: the test rig has no agent to call back) is
removed from Ironic without being deprovisioned, which is what ``"force": true`` in the
detached annotation asks of a host mid-operation (baremetal-operator v0.13.2: ``Detach``
with ``force``, pkg/provisioner/ironic/ironic.go, aborts such a wait and deletes)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from state_controller.provisioning.results import Outcome
from testbed.ironic_server import IronicServer
from tests.ironic.helpers import IronicAPI, eventually, provisioner, registered, settled, view_of

pytestmark = pytest.mark.slow


class Image(BaseHTTPRequestHandler):
    """An image Ironic can check before it boots the (absent) deploy ramdisk."""

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_HEAD

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def image_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Image)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/os.qcow2"
    server.shutdown()
    server.server_close()
    thread.join()


def test_a_node_waiting_on_its_deploy_ramdisk_is_detached(
    ironic: IronicServer, api: IronicAPI, image_url: str
) -> None:
    prov = provisioner(ironic.url, {"host-0000": {"deploy_interface": "direct"}})
    image = {"url": image_url, "checksum": "0" * 64, "checksumType": "sha256"}
    view = registered(prov, replace(view_of("force", 0), image=image, automated_cleaning=False))
    assert prov.provision(view).outcome in (Outcome.CONTINUING, Outcome.RETRY_AFTER)

    def waiting() -> bool:
        prov.provision(view)  # polled, as the controller polls it
        node = api.node(view.provider_id)
        return node is not None and node["provision_state"] == "wait call-back"

    eventually(waiting, what="the deploy waiting on its ramdisk")
    done = settled(lambda: prov.detach(view), "detached")
    assert done.outcome is Outcome.COMPLETE, done
    assert api.node(view.provider_id) is None
    assert prov.actions[(f"force~{view.name}", "deleted")] == 0  # not deprovisioned


def test_a_forced_reboot_deploys_a_node_waiting_on_its_ramdisk_again(
    ironic: IronicServer, api: IronicAPI, image_url: str
) -> None:
    """``"force": true`` in a reboot annotation (``HostView.force_reboot``) tears a deploy
    waiting on its ramdisk down and deploys it again (baremetal-operator v0.13.2:
    ``Provision`` with ``forceReboot``, pkg/provisioner/ironic/ironic.go)."""
    prov = provisioner(ironic.url, {"host-0001": {"deploy_interface": "direct"}})
    image = {"url": image_url, "checksum": "0" * 64, "checksumType": "sha256"}
    view = registered(prov, replace(view_of("reboot", 1), image=image, automated_cleaning=False))
    name = f"reboot~{view.name}"

    def waiting() -> bool:
        prov.provision(view)  # polled, as the controller polls it
        node = api.node(view.provider_id)
        return node is not None and node["provision_state"] == "wait call-back"

    eventually(waiting, what="the deploy waiting on its ramdisk")
    restarted = prov.provision(replace(view, force_reboot=True))
    assert restarted.restarted and restarted.outcome is Outcome.CONTINUING, restarted
    assert prov.actions[(name, "deleted")] == 1

    def deployed_again() -> bool:
        prov.provision(view)
        return prov.actions[(name, "active")] == 2

    eventually(deployed_again, what="the deploy started again")
    eventually(waiting, what="the second deploy waiting on its ramdisk")
    settled(lambda: prov.detach(view), "detached")
