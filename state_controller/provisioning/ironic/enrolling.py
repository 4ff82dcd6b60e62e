"""Enrolling a host's node and getting it ready: registration, inspection, preparation.

Each operation reads the node once, decides from its ``provision_state`` what, if
anything, Ironic must be asked to do next, asks, and answers with a semantic result;
calling it again polls. The three are tables from provision state to step, kept side by
side because they walk the same stretch of Ironic's states (``enroll`` → ``manageable``
→ ``available``) and a state one of them forgets shows against the others.
"""

from __future__ import annotations

from dataclasses import replace

from ..results import Result, complete, continuing, failed
from .attempt import Attempt
from .faults import registration_message
from .health import node_health
from .node_work import NodeWork
from .nodes import deployed_image, driver_info_patch, powered
from .states import BUSY_STATES, busy


def register(work: NodeWork, at: Attempt, credentials_changed: bool) -> Result:
    host = at.host
    node = work.find(at)
    created = node is None
    if node is None:
        node = work.create(at)
        if host.provider_id:  # it had a node Ironic no longer has
            work.memory.recreated(node["uuid"])
    uuid, state = node["uuid"], node["provision_state"]
    # Ironic masks passwords, so what it has is known from what this process sent.
    changed = credentials_changed and not work.memory.knows_credentials(uuid, host)
    if changed:
        at.patch(node, driver_info_patch(host))  # 409 while Ironic works on it: retry_after
        if state != "enroll":  # in enroll, `manage` below checks them
            at.validate_bmc(node)
        # only now: credentials that failed are sent and checked again on the retry
        work.memory.remember_credentials(uuid, host)
    if state == "enroll":
        error = str(node.get("last_error") or "")
        if error and not changed and work.failures.should_report(node):
            return failed(registration_message(host, error), error)
        if not created:
            at.ensure_port(node, known_empty=False)
        return work.started(at, node, "manage")
    if state == "verifying":
        return continuing(work.poll_delay)
    return complete(
        provider_id=uuid,
        powered_on=powered(node),
        deployed_image=deployed_image(node),
        health=node_health(node, at.client.version()),
    )


def inspect(work: NodeWork, at: Attempt, restart: bool) -> Result:
    node = work.node(at)
    uuid, state = node["uuid"], node["provision_state"]
    if restart and state not in BUSY_STATES:
        work.memory.inspection_started(uuid, node.get("inspection_finished_at"))
    if state == "inspect wait" and at.host.force_reboot:  # ..forced_reboot
        return replace(work.started(at, node, "abort"), restarted=True)
    if state in BUSY_STATES:
        return busy(node, work.poll_delay)
    if state == "inspect failed" and "aborted" in str(node.get("last_error") or ""):
        # aborted (as just above, or by anyone): started again, as baremetal-operator
        # v0.13.2 does (pkg/provisioner/ironic/inspecthardware.go, InspectHardware)
        work.memory.inspection_started(uuid, node.get("inspection_finished_at"))
        return work.started(at, node, "inspect")
    if state == "inspect failed":
        return work.failed_then_retry(at, node, "inspecting the hardware", "inspect")
    if state == "manageable":
        if work.memory.inspection_done(uuid, node.get("inspection_finished_at")):
            return complete(hardware=at.hardware(node))
        return work.started(at, node, "inspect")
    if state in ("available", "adopt failed", "clean failed"):
        return work.started(at, node, "manage")
    work.cannot("inspect", node)


def prepare(work: NodeWork, at: Attempt) -> Result:
    node = work.node(at)
    state = node["provision_state"]
    if state == "available":
        return complete()
    if state in BUSY_STATES:
        return busy(node, work.poll_delay)
    if state == "manageable":
        return work.started(at, node, "provide")
    if state == "clean failed":
        return work.failed_then_retry(at, node, "cleaning the host", "manage")
    if state in ("active", "deploy failed"):  # e.g. no longer externally provisioned
        return work.started(at, node, "deleted")
    if state == "error":  # that teardown failed
        return work.failed_then_retry(at, node, "tearing down the host", "deleted")
    if state in ("inspect failed", "adopt failed"):
        return work.started(at, node, "manage")
    work.cannot("prepare", node)
