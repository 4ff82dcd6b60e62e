"""A backend's own words reach the operator's log, never what a Host's author reads.

Ironic's text quotes what a BMC or an image server answered, at an address the Host's
author chose: in the status or an Event it would read back banners and pages of any
port the conductor reaches. The machine's sentence says which failure it was."""

from __future__ import annotations

import json
import logging

import pytest

from state_controller.cluster.interface import EVENTS, HOSTS, HOSTSTATES
from state_controller.provisioning.provisioner import HostView
from state_controller.provisioning.results import Result, failed
from state_controller.provisioning.simulated import SimulatedProvisioner
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.clocks import Clock
from testbed.hand_driven import HandDriven

BANNER = "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3 answered on 10.0.0.5:22"
OURS = "could not validate the BMC at bmc-0000.demo.example: the BMC did not answer"
KEY = "ns/host-0000"


class AnsweringBMC(SimulatedProvisioner):
    """Registration fails with what a remote server said, in the order given."""

    def __init__(self, words: list[str]) -> None:
        super().__init__()
        self.words = words

    def register(self, host: HostView, *, credentials_changed: bool) -> Result:
        if self.words:
            return failed(OURS, details=self.words.pop(0))
        return super().register(host, credentials_changed=credentials_changed)


def logged(caplog: pytest.LogCaptureFixture, words: str) -> int:
    return sum(
        1
        for r in caplog.records
        if getattr(r, "host", None) == KEY and words in r.getMessage() and r.levelname == "WARNING"
    )


def test_the_words_are_logged_once_each_and_never_stored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="state_controller.runtime.hosts.reconciler")
    other = "HTTP/1.1 403 Forbidden <title>internal admin</title>"
    clock = Clock()
    s = HandDriven(provisioner=AnsweringBMC([BANNER, BANNER, other]), clock=clock)
    s.add_secret(secret_manifest("ns", "host-0000-bmc", "admin", "pw"))
    s.create(host_manifest("ns", 0))

    s.reconcile(KEY)
    status = s.store.get(HOSTS, "ns", "host-0000")["status"]
    assert status["errorType"] == "registration error"
    assert status["errorMessage"] == OURS
    assert logged(caplog, BANNER) == 1

    clock.advance(600)  # past any backoff
    s.reconcile(KEY)  # the same failure again: counted in the status, not logged again
    assert s.store.get(HOSTS, "ns", "host-0000")["status"]["errorCount"] == 2
    assert logged(caplog, BANNER) == 1
    clock.advance(600)
    s.reconcile(KEY)  # another answer: logged
    assert logged(caplog, other) == 1

    stored = json.dumps(
        [s.store.list(resource, "ns")[0] for resource in (HOSTS, HOSTSTATES, EVENTS)]
    )
    assert OURS in stored
    for words in (BANNER, other, "OpenSSH", "internal admin"):
        assert words not in stored
    s.close()
