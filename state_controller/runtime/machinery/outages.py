"""An outage told the way a person on call wants it: one line when it starts, a reminder
while it lasts, one line when it ends.

Every call to a dependency (the API server, the provisioner's backend) reports
how it went; nothing else logs a failure that only says "it is unreachable": were
every informer, worker, status and Event write to log its own failure, one restart
of the API server would bury the few lines that matter under hundreds, with
tracebacks (tests/cluster/test_outages.py counts the lines of one restart;
docs/events-traces-logs.md shows them).

An outage ends once the dependency has answered for :data:`SETTLE` seconds with no
failure in between, not at its first answer: a restarting kube-apiserver answers a
list, then a 503 while its post-start hooks finish, and would be told down twice in
one restart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ...books.stuck import human_duration
from ...cluster.interface import unreachable

log = logging.getLogger("state_controller.outages")

REMIND_EVERY = 30.0  # seconds between "still unreachable" lines
SETTLE = 5.0  # seconds of answers, with no failure, before an outage is told ended


class Outage:
    """The state of one dependency, named as the log lines name it."""

    def __init__(
        self,
        name: str,
        *,
        remind_every: float = REMIND_EVERY,
        settle: float = SETTLE,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.name = name
        self.wall = wall
        self.remind_every = remind_every
        self.settle = settle
        self.clock = clock
        self.down = False
        self._since = self._reminded = 0.0
        self._answered: float | None = None  # the first answer since the last failure
        self._failures = 0
        self._lock = threading.Lock()
        # the last outage in epoch seconds, for the controller's status: begun, ended, why
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.message = ""

    def failed(self, error: BaseException | str) -> None:
        now = self.clock()
        with self._lock:
            self._failures += 1
            self._answered = None
            self.message = _one_line(error)
            if not self.down:
                self.down, self._since, self._reminded, self._failures = True, now, now, 1
                self.started_at, self.ended_at = self.wall(), None
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
        """The dependency answered. The outage is told ended once answers have gone on
        for ``settle`` seconds with no failure: at a later answer, or by a timer when
        nothing else calls (an idle controller after its informers listed again)."""
        if not self.down:  # the common case: no lock, no work
            return
        now = self.clock()
        with self._lock:
            if not self.down:
                return
            if self._answered is None:
                self._answered = now
                failures = self._failures
                self._later(self.settle, lambda: self._settled(failures))
            elif now - self._answered >= self.settle:
                self._end()

    def _later(self, delay: float, then: Callable[[], None]) -> None:
        timer = threading.Timer(delay, then)
        timer.daemon = True
        timer.start()

    def _settled(self, failures: int) -> None:
        with self._lock:
            if self.down and self._failures == failures and self._answered is not None:
                self._end()

    def _end(self) -> None:
        assert self._answered is not None
        self.down = False
        self.ended_at = self.wall() - (self.clock() - self._answered)  # its first answer
        log.warning(
            "%s reachable again after %s (%d failed calls)",
            self.name,
            human_duration(self._answered - self._since),
            self._failures,
            extra={"outage": self.name, "event": "ended"},
        )
        self._answered = None


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
