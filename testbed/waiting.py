"""The tests' one way to wait (tests.conftest re-exports it, where most tests import it
from): here so that testbed modules can wait too without importing conftest."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from state_controller.cluster.interface import NotFound

FIRST_POLL = 0.01  # seconds: most conditions hold within a few polls
LAST_POLL = 0.1  # the longest pause between two polls


def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    """Until ``predicate`` returns something true; NotFound and KeyError mean "not there
    yet", and the last one is named when time runs out (a typo is then read, not guessed).

    The pauses between polls grow from :data:`FIRST_POLL` to :data:`LAST_POLL`: a
    predicate often reads the API server, and one polled at a fixed short pause through
    a long wait takes CPU from the controller it waits on. A condition that comes true
    after ``t`` seconds of waiting is seen by ``1.5 t`` (and at most 0.1 s late)."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    pause = FIRST_POLL
    while True:
        try:
            value, last = predicate(), None
        except (NotFound, KeyError) as error:  # not there yet
            value, last = None, error
        if value:
            return value
        if time.monotonic() > deadline:
            raised = f"; the last try raised {type(last).__name__}: {last}" if last else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{raised}")
        time.sleep(pause)
        pause = min(pause * 1.5, LAST_POLL)
