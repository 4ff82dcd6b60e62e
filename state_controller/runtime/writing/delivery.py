"""What the runtime has done with a host's book: written, reported, announced.

The book tells the host's story; this record says how far that story has
been delivered, and holds what the runtime keeps between steps that no
status shows. It is rebuilt on restart from the HostState (``lastSeq``); the
rest starts empty, which re-announces a host that is still stuck and lets a
failed host retry at once — what a restart should do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...durations.reading import ReadUpTo
from ...provisioning.machine import RetryWindow


@dataclass(slots=True)
class Delivery:
    confirmed_seq: int = 0  # the last transition the stored HostState's history holds
    reported: int = 0  # the journal position handed to the reporter
    stuck_announced: float | None = None  # entered-at of the state announced as stuck
    slow_announced: float | None = None  # entered-at of the step announced as slow
    retry: RetryWindow | None = None  # the machine's backoff window, handed back each step
    backend_said: str = ""  # the backend's words last logged for this host
    learned: ReadUpTo = field(default_factory=ReadUpTo)  # the last record whose time was learned
