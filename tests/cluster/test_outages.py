"""An outage of the kube-apiserver, as a person on call reads it in the log: one line when
it starts, a reminder while it lasts, one line when it ends; no traceback, and nothing
lost (the hosts finish as if nothing happened). What changed while the server was away
reaches the controller when it is back, a deletion included: the object is erased from
etcd while kube-apiserver is down, as another writer could have done, and the server
that comes back no longer holds the history the informer would resume from."""

from __future__ import annotations

import logging
import time

import pytest

from state_controller.api.objects import Obj
from state_controller.cluster.interface import SECRETS
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.simulated import SimulatedProvisioner, Timings
from state_controller.runtime.config import ControllerConfig
from state_controller.runtime.machinery.informer import Informer
from state_controller.simulation.fleet import create_fleet
from state_controller.wiring import observed_controller
from testbed.control_plane import ControlPlane
from testbed.kube import HOSTS_NS, host_states
from testbed.scenarios import wait_all_in
from tests.conftest import FAST_BACKOFF, wait_for

NS = HOSTS_NS
OUTAGE_SECONDS = 15  # the kube-apiserver restart measured before: 529 to 1,611 lines


def test_an_apiserver_outage_is_told_once_without_tracebacks(
    control_plane: ControlPlane, admin: KubeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sim = SimulatedProvisioner(timings=Timings(provision=4.0))
    config = ControllerConfig(namespaces=(NS,), backoff=FAST_BACKOFF)
    observed = observed_controller(admin, sim, config)
    controller = observed.controller
    controller.start()
    try:
        create_fleet(admin, NS, 5)
        wait_all_in(admin, NS, "provisioning", reported=False)
        gone = f"{NS}/host-0004"
        assert controller.books.get(gone) is not None
        caplog.clear()
        control_plane.stop_apiserver()
        assert control_plane.erase_from_etcd(f"/registry/hoststate.io/hosts/{gone}") == 1
        time.sleep(OUTAGE_SECONDS)  # the outage itself, not a wait for an event
        control_plane.start_apiserver()
        wait_all_in(admin, NS, "provisioned", timeout=120, reported=False)
        assert sorted(host_states(admin)) == [f"host-{i:04d}" for i in range(4)]  # not host-0004
        wait_for(lambda: controller.books.get(gone) is None, what=f"{gone} forgotten")
        ended = lambda: any(getattr(r, "event", "") == "ended" for r in caplog.records)  # noqa: E731
        wait_for(ended, timeout=60, what="the outage's end in the log")
        wait_for(controller.idle)
    finally:
        controller.stop()
    shown = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert [r for r in shown if r.exc_info] == []  # no traceback
    outage = [r for r in shown if str(getattr(r, "outage", "")).startswith("kube-apiserver")]
    events = [r.event for r in outage]  # type: ignore[attr-defined]
    assert events[0] == "started" and events[-1] == "ended"
    assert set(events[1:-1]) <= {"continues"}
    # one of each: runtime/machinery/outages.py, SETTLE
    assert events.count("started") == 1 and events.count("ended") == 1
    noise = [r for r in shown if r.levelno >= logging.WARNING and r not in outage]
    assert noise == [], [r.getMessage() for r in noise]
    print(
        f"\n{OUTAGE_SECONDS}s kube-apiserver outage: {len(shown)} log lines at info and above "
        f"({len(outage)} about the outage), "
        f"{len([r for r in caplog.records if r.levelno == logging.DEBUG])} at debug"
    )


def secret(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS}}


def test_an_informer_lists_again_after_an_outage_and_tells_the_deletion(
    control_plane: ControlPlane, admin: KubeCluster
) -> None:
    for name in ("a", "b", "c"):
        admin.create(SECRETS, secret(name))
    seen: list[tuple[str, Obj | None]] = []
    informer = Informer(
        admin, SECRETS, NS, handlers=[lambda key, obj: seen.append((key, obj))], relist_delay=0.2
    )
    informer.start()
    try:
        assert informer.wait_synced(30)
        assert {f"{NS}/a", f"{NS}/b", f"{NS}/c"} <= set(informer.keys())
        relists = informer.relists
        control_plane.stop_apiserver()
        assert control_plane.erase_from_etcd(f"/registry/secrets/{NS}/b") == 1
        control_plane.start_apiserver()
        admin.create(SECRETS, secret("d"))
        wait_for(lambda: (f"{NS}/b", None) in seen, timeout=60, what="b's deletion told")
        wait_for(lambda: informer.get(f"{NS}/d") is not None, timeout=60, what="d seen")
        assert informer.get(f"{NS}/b") is None
        # the server that came back starts its history after the erase: only a list knew
        assert informer.relists == relists + 1
    finally:
        informer.stop()
