"""A BareMetalHost handed over to a Host, whose pause was taken away.

``adopt`` pauses the BareMetalHost (``baremetalhost.metal3.io/paused``) so that
baremetal-operator leaves the machine to the Host of the same name for good. Whoever may
edit the BareMetalHost can remove that annotation, and then two controllers drive one
machine: baremetal-operator acts on any difference between its spec and its status
(a power change, a deploy, a teardown) while hoststate drives the same Ironic node.
Nothing else would notice, so the controller that observes BareMetalHosts tells it: a
Warning Event on the BareMetalHost and on the Host (the reporter logs each as a warning
too), naming the two ways out. Told once each time the pause goes; told again after a restart.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ...api import annotations as ann
from ...api.baremetalhost import PAUSED
from ...api.objects import Obj
from ...books.journal import Notice
from ..machinery.reporting import Reporter

UNPAUSED = "HandedOverHostUnpaused"


def unpaused_message(namespace: str, name: str) -> str:
    """What the Events and the log say, with the commands of both ways out."""
    return (
        f"the BareMetalHost {namespace}/{name} was handed over to the Host of the same name, "
        f"but its {PAUSED} annotation is gone: baremetal-operator acts on the machine again "
        "while hoststate drives it. Pause it again: kubectl annotate bmh "
        f"{name} -n {namespace} {PAUSED}=hoststate.io/adopt; or give the host back to "
        "baremetal-operator as docs/baremetal-operator.md says (pause and delete the Host "
        "first)"
    )


class UnpauseWatch:
    """Tells once per unpause; forgets a BareMetalHost that is paused again or gone."""

    def __init__(self, reporter: Reporter, clock: Callable[[], float]) -> None:
        self.reporter = reporter
        self.clock = clock
        self._told: set[str] = set()
        self._lock = threading.Lock()

    def look(self, key: str, bmh: Obj | None, host: Obj | None) -> None:
        """``bmh``: the BareMetalHost under ``key``; ``host``: the Host of that name."""
        if bmh is None or host is None or not _unpaused_after_handover(bmh, host):
            with self._lock:
                self._told.discard(key)
            return
        with self._lock:
            if key in self._told:
                return
            self._told.add(key)
        namespace, _, name = key.partition("/")
        message = unpaused_message(namespace, name)
        notice = Notice("Warning", UNPAUSED, message, self.clock(), "")
        self.reporter.report(bmh, [notice])
        self.reporter.report(host, [notice])


def _unpaused_after_handover(bmh: Obj, host: Obj) -> bool:
    """Not paused, and handed over: by ``adopt``'s mark on the BareMetalHost or the
    Host's ``adopted-from`` (either will do for a warning)."""
    bmh_notes = bmh["metadata"].get("annotations") or {}
    if PAUSED in bmh_notes:
        return False
    host_notes = host["metadata"].get("annotations") or {}
    adopted = host_notes.get(ann.ADOPTED_FROM) == bmh["metadata"].get("uid")
    return ann.HANDED_OVER_TO in bmh_notes or adopted
