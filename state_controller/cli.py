"""``state-controller``: the entry point. Each command is a module of
:mod:`state_controller.commands`; this file only assembles them and sets up logging and
the trace exporter they share."""

from __future__ import annotations

import argparse
import faulthandler
import signal
import sys

from .commands import COMMANDS
from .commands.flags import OneLineParser
from .observability.logs import LEVELS
from .observability.logs import configure as configure_logs
from .observability.tracing import exporter_from_env

TRACED = ("demo", "run", "bootstrap")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="state-controller",
        description="Observability-first state controller for bare-metal hosts.",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    p.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="text (default): readable lines; json: one JSON object per line",
    )
    p.add_argument(
        "--log-level",
        choices=list(LEVELS),
        default=None,
        help="default: info for run, warning otherwise (the demo's table owns the screen)",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for name, command in COMMANDS.items():
        command.add(sub.add_parser(name, help=command.HELP))
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # kill -QUIT: every thread's stack on stderr, and the process goes on (as Go prints
    # its goroutines): where a controller that stopped moving stands, without a debugger
    faulthandler.register(signal.SIGQUIT, all_threads=True)
    faulthandler.enable(all_threads=True)  # a crash (SIGSEGV, SIGABRT, …) says where, too
    default = "info" if args.command == "run" else "warning"
    configure_logs(args.log_format, args.log_level or ("debug" if args.verbose else default))
    if args.command in TRACED:
        try:  # --trace, else the standard variable
            args.trace = args.trace or exporter_from_env()
        except ValueError as err:
            print(err, file=sys.stderr)
            return 2
    return COMMANDS[args.command].main(args)


if __name__ == "__main__":
    sys.exit(main())
