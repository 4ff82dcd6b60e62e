"""One module per ``state-controller`` command: each declares its flags (``add``) and
turns them into a call of the package that does the work (``main``), with a mistake
reported in one line and exit code 2.

Every module here has the same two functions, so :mod:`state_controller.cli` only
lists them. What a command does lives below: :mod:`state_controller.demo`,
:mod:`state_controller.manager`, :mod:`state_controller.bootstrap`,
:mod:`state_controller.pivot`, :mod:`state_controller.adopt`; ``get`` and ``gen`` are
small enough to be here whole.
"""

from __future__ import annotations

import argparse
from typing import Protocol

from . import adopt, bootstrap, convert, demo, gen, get, pivot, run, version


class Command(Protocol):
    """What every module here provides."""

    HELP: str

    def add(self, p: argparse.ArgumentParser) -> None: ...

    def main(self, args: argparse.Namespace) -> int: ...


COMMANDS: dict[str, Command] = {
    "demo": demo,
    "run": run,
    "bootstrap": bootstrap,
    "pivot": pivot,
    "adopt": adopt,
    "convert": convert,
    "get": get,
    "gen": gen,
    "version": version,
}
