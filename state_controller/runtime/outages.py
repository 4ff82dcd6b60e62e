"""An outage told the way a person on call wants it: one line when it starts, a reminder
while it lasts, one line when it ends.

Every call to a dependency (the API server, the provisioner's backend) reports
how it went; nothing else logs a failure that only says "it is unreachable".
Measured against a 15 s kube-apiserver restart under a running controller:
before, 529 to 1,611 log lines with 21 to 60 Python tracebacks (every informer,
worker, status and Event write logging its own failure); now a handful, no
traceback (tests/cluster/test_outages.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..books.stuck import human_duration
from ..cluster.interface import unreachable

log = logging.getLogger("state_controller.outages")

REMIND_EVERY = 30.0  # seconds between "still unreachable" lines


class Outage:
    """The state of one dependency, named as the log lines name it."""

    def __init__(
        self,
        name: str,
        *,
        remind_every: float = REMIND_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.remind_every = remind_every
        self.clock = clock
        self.down = False
        self._since = self._reminded = 0.0
        self._failures = 0
        self._lock = threading.Lock()

    def failed(self, error: BaseException | str) -> None:
        now = self.clock()
        with self._lock:
            self._failures += 1
            if not self.down:
                self.down, self._since, self._reminded, self._failures = True, now, now, 1
                log.error(
                    "%s unreachable: %s",
                    self.name,
                    _one_line(error),
                    extra={"outage": self.name, "event": "started"},
                )
            elif now - self._reminded >= self.remind_every:
                self._reminded = now
                log.warning(
                    "%s still unreachable after %s (%d failed calls): %s",
                    self.name,
                    human_duration(now - self._since),
                    self._failures,
                    _one_line(error),
                    extra={"outage": self.name, "event": "continues"},
                )

    def recovered(self) -> None:
        if not self.down:  # the common case: no lock, no work
            return
        now = self.clock()
        with self._lock:
            if not self.down:
                return
            self.down = False
            log.warning(
                "%s reachable again after %s (%d failed calls)",
                self.name,
                human_duration(now - self._since),
                self._failures,
                extra={"outage": self.name, "event": "ended"},
            )


def log_failure(
    logger: logging.Logger,
    error: BaseException,
    message: str,
    *args: object,
    extra: dict[str, str] | None = None,
) -> None:
    """A failure the caller retries: with its traceback, unless the API server was
    unreachable — then at debug only, as the outage is told once where calls are counted."""
    if unreachable(error):
        logger.debug(message + ": %s", *args, error, extra=extra)
    else:
        logger.exception(message, *args, extra=extra)


def _one_line(error: BaseException | str) -> str:
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return " ".join(text.split())[:300]
