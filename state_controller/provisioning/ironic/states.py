"""What an Ironic node's state means for the operation that reads it.

* a busy state (:data:`BUSY_STATES`): Ironic works on it, poll again — unless the node is
  in maintenance, which stops Ironic's timeouts; then :func:`wait_out_maintenance` says
  why the host waits;
* a ``* failed`` state: reported once as ``failed`` with a readable message, Ironic's
  ``last_error`` kept next to it; the next attempt retries the work (Ironic allows
  ``inspect``/``active``/``adopt`` again from the failed state, ``manage`` after a failed
  cleaning). :class:`FailedStates` remembers what was reported;
* a failure Ironic made up itself because it restarted mid-operation ("... can't be
  resumed by conductor", :func:`interrupted`) is retried at once instead: the host did
  nothing wrong;
* a failed state Ironic entered before writing why (an inspection timeout moves the node
  to ``inspect failed``, then a callback records the reason) is given
  :data:`REASON_GRACE` seconds for its reason to appear.
"""

from __future__ import annotations

import threading
import time

from ..results import Result, continuing, failed, transient
from .faults import INTERRUPTED, Answer, readable
from .nodes import Node

# States Ironic leaves on its own (work in progress): wait for them.
BUSY_STATES = frozenset(
    {
        "verifying",
        "inspecting",
        "inspect wait",
        "cleaning",
        "clean wait",
        "deploying",
        "wait call-back",
        "deleting",
        "adopting",
        "rescuing",
        "rescue wait",
        "unrescuing",
        "servicing",
        "service wait",
    }
)
# Ironic deletes nodes in these states without maintenance mode.
DELETABLE_STATES = frozenset({"enroll", "manageable", "available", "adopt failed"})
# How long a reasonless failed state may wait for Ironic to write its reason.
REASON_GRACE = 5.0


def busy(node: Node, poll_delay: float) -> Result:
    """Ironic is working on the node: poll again, unless maintenance holds it.

    Ironic stops the timeouts of a node in maintenance, so a deploy waiting for its
    ramdisk would wait forever and show nothing; say why instead.
    """
    wait_out_maintenance(node)
    return continuing(poll_delay)


def wait_out_maintenance(node: Node) -> None:
    """A node in maintenance is in someone's hands: wait, visibly, and count no error.

    Operators set maintenance to work on a machine; Ironic sets it itself when it lost
    the BMC (fault ``power failure``) and clears it once the BMC answers again. Ironic
    refuses provisioning actions then (400) but would still change the power. Either way
    the host did nothing wrong, so this is a refusal (transient: shown as
    ``BackendUnavailable``, retried with backoff), not a failure.
    """
    if not node.get("maintenance"):
        return
    fault = node.get("fault")
    why = str(node.get("maintenance_reason") or "")
    if fault == "power failure":
        message = (
            f"Ironic cannot reach the BMC of node {node['name']} and put it in maintenance; "
            "it takes it out once the BMC answers: check the BMC and its network"
        )
    else:  # an operator's reason is shown; one Ironic wrote (a fault) may quote a BMC
        message = (
            f"the Ironic node {node['name']} is in maintenance"
            + (f" ({why})" if why and not fault else "")
            + "; hoststate goes on once it is taken out of maintenance"
        )
    raise Answer(transient(message, why if why not in message else "", held=True))


def interrupted(node: Node) -> bool:
    """Ironic failed the work itself because it restarted while the work ran."""
    return INTERRUPTED in str(node.get("last_error") or "")


def failure_token(node: Node) -> str:
    """Which entry into a failed state this is: the state and when Ironic entered it."""
    return f"{node['provision_state']}|{node.get('provision_updated_at')}"


class FailedStates:
    """The failed states this process has seen, per node, so each is reported once.

    Lost on restart, and that is fine: a failure is then reported once more.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reported: dict[str, str] = {}  # node -> failure already reported
        self._reasonless: dict[str, tuple[str, float]] = {}  # node -> (failure, first seen)

    def failure(
        self, node: Node, what: str, *, poll_delay: float, reason_grace: float
    ) -> Result | None:
        """``failed`` the first time a failed state is seen; None after: retry the step.
        A failure whose reason Ironic has not written yet is waited on, briefly."""
        error = str(node.get("last_error") or "")
        if not error and self._reason_may_follow(node, reason_grace):
            return continuing(min(poll_delay, reason_grace))
        if not self.should_report(node):
            return None
        checksum = str((node.get("instance_info") or {}).get("image_checksum") or "")
        return failed(f"{what} failed: {readable(error, checksum_url=checksum)}", error)

    def should_report(self, node: Node) -> bool:
        """Report a failure once; retry it on the next attempt (or at once if Ironic
        itself interrupted the work by restarting)."""
        return not interrupted(node) and self._first_report(node)

    def forget(self, uuid: str) -> None:
        with self._lock:
            self._reported.pop(uuid, None)
            self._reasonless.pop(uuid, None)

    def _first_report(self, node: Node) -> bool:
        """True the first time this failure (state, time, text) is seen: report it."""
        token = f"{failure_token(node)}|{node.get('last_error')}"
        with self._lock:
            if self._reported.get(node["uuid"]) == token:
                return False
            self._reported[node["uuid"]] = token
            return True

    def _reason_may_follow(self, node: Node, grace: float) -> bool:
        """True while this reasonless failed state is younger (to us) than ``grace``."""
        token = failure_token(node)
        now = time.monotonic()
        with self._lock:
            seen, since = self._reasonless.get(node["uuid"], (token, now))
            if seen != token:
                since = now
            self._reasonless[node["uuid"]] = (token, since)
        return now - since < grace
