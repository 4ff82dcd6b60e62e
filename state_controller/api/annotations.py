"""Annotations the controller understands on a Host (all under ``hoststate.io/``)."""

PREFIX = "hoststate.io/"

PAUSED = PREFIX + "paused"
"""Present: do nothing and write nothing (used while moving objects between clusters)."""

DETACHED = PREFIX + "detached"
"""Present: forget the host in the backend without deprovisioning; removing it resumes."""

STATUS = PREFIX + "status"
"""A JSON copy of ``Host.status``; restores the status when the status is empty."""

MOVED_FROM = PREFIX + "moved-from"
"""Set by ``pivot`` on the Host it creates, naming where it comes from, until the move ends."""

HARDWARE_DETAILS = PREFIX + "hardware-details"
"""JSON hardware details to use when inspection is disabled."""

INSPECT = PREFIX + "inspect"
"""``disabled``: skip inspection. Any other value (or empty): inspect again when idle."""

REBOOT = PREFIX + "reboot"
"""Present: power-cycle the host once, then the controller removes the annotation."""

INSPECT_DISABLED = "disabled"

FINALIZER = "hoststate.io/host"
"""Keeps a Host until the controller has deprovisioned and deleted it in the backend."""

ALL = (PAUSED, DETACHED, STATUS, MOVED_FROM, HARDWARE_DETAILS, INSPECT, REBOOT)
