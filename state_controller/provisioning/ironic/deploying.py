"""An image onto a host's node and off it: deploying, tearing down, and adopting a node
that already runs one.

Each operation reads the node once, decides from its ``provision_state`` what, if
anything, Ironic must be asked to do next, asks, and answers with a semantic result;
calling it again polls. The three are tables from provision state to step, kept side by
side because they meet at the same states (``available``, ``active``, ``deploy failed``,
``clean failed``) and each must leave the node where the others can go on.
"""

from __future__ import annotations

from dataclasses import replace

from ..results import Outcome, Result, complete, failed
from .attempt import Attempt
from .faults import adopted_message
from .node_work import NodeWork
from .nodes import powered
from .states import BUSY_STATES, busy


def provision(work: NodeWork, at: Attempt) -> Result:
    node = work.node(at)
    state = node["provision_state"]
    if state == "active":
        return complete(powered_on=powered(node))
    if state == "wait call-back" and at.host.force_reboot:  # ..forced_reboot
        # torn down, then deployed again once available (as baremetal-operator v0.13.2,
        # pkg/provisioner/ironic/ironic.go, Provision)
        return replace(work.started(at, node, "deleted"), restarted=True)
    if state in BUSY_STATES:
        return busy(node, work.poll_delay)
    if state == "available":
        return work.deploy(at, node)
    if state == "deploy failed":
        report = work.failure(node, "deploying the image")
        return report if report is not None else work.deploy(at, node)
    if state == "manageable":
        return work.started(at, node, "provide")
    if state == "clean failed":
        return work.failed_then_retry(at, node, "cleaning before deploying", "manage")
    work.cannot("provision", node)


def deprovision(work: NodeWork, at: Attempt) -> Result:
    node = work.node(at)
    state = node["provision_state"]
    if state == "available":
        return complete(powered_on=False)
    if state in BUSY_STATES - {"wait call-back"}:
        return busy(node, work.poll_delay)
    if state == "error":  # a teardown that failed (deleting -> error)
        return work.failed_then_retry(at, node, "tearing down the host", "deleted")
    if state in ("active", "deploy failed", "wait call-back"):
        return work.started(at, node, "deleted")
    if state == "manageable":
        return work.started(at, node, "provide")
    if state == "clean failed":
        return work.failed_then_retry(at, node, "cleaning the disks", "manage")
    if state in ("inspect failed", "adopt failed"):
        return work.started(at, node, "manage")
    work.cannot("deprovision", node)


def adopt(work: NodeWork, at: Attempt) -> Result:
    node = work.node(at)
    uuid, state = node["uuid"], node["provision_state"]
    if state in ("active", "service failed"):  # a failed servicing leaves the image
        adopted, lost = work.memory.adoption_done(uuid)
        if not adopted:
            return complete()
        return Result(Outcome.COMPLETE, adopted=True, message=adopted_message(lost))
    if state in BUSY_STATES:
        return busy(node, work.poll_delay)
    if state == "available":
        if not at.host.externally_provisioned:
            # torn down (and cleaned) behind our back: adopting would claim an image runs
            return failed(
                f"the Ironic node {node['name']} is available: it was torn down "
                "outside hoststate and its image no longer runs; to deploy it again, "
                "remove spec.image and set it back"
            )
        return work.started(at, node, "manage")  # adopt needs manageable
    if state == "adopt failed" and (report := work.failure(node, "adopting the running host")):
        return report
    if state in ("manageable", "adopt failed"):
        work.write_deploy_info(at, node)
        result = work.started(at, node, "adopt")
        work.memory.adoption_asked(uuid)
        return result
    work.cannot("adopt", node)
