"""The ``kubectl-hoststate`` executable: ``kubectl hoststate history|why|eta ...``.

kubectl runs an executable named ``kubectl-hoststate`` found on PATH for ``kubectl
hoststate``, with the arguments that follow; the package installs one (pyproject's
``[project.scripts]``), and ``python3 -m state_controller.plugin.main`` is the same.
Which cluster and namespace are kubectl's: ``--kubeconfig`` (else $KUBECONFIG, else
~/.kube/config, else the pod's service account), ``--context``, ``-n/--namespace`` (else
the context's namespace, else ``default``). Exit codes: 0 done, 1 the object or the
cluster could not be read (one line on stderr says which and what to do), 2 a mistake in
the arguments.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import NoReturn

from ..api.timefmt import parse_rfc3339
from ..books.stuck import parse_duration
from . import eta, history, why
from .reading import Failure, Target

PROG = "kubectl hoststate"
SUBCOMMANDS: dict[str, ModuleType] = {"history": history, "why": why, "eta": eta}


class _Parser(argparse.ArgumentParser):
    """A mistake on the command line is one line that says what is wrong."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {PROG} --help)\n")


def _cluster_flags(p: argparse.ArgumentParser, default: object) -> None:
    """kubectl's flags for which cluster and namespace; before or after the subcommand."""
    p.add_argument(
        "--kubeconfig", default=default, help="default: $KUBECONFIG, then ~/.kube/config"
    )
    p.add_argument("--context", default=default, help="a context of the kubeconfig")
    p.add_argument(
        "-n",
        "--namespace",
        default=default,
        help="the HostState's namespace (default: the context's, else default)",
    )


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Read hoststate's HostStates and NodePools and say, in words, what a "
        "machine went through, what it waits on, and when a pool's rollout will end.",
    )
    _cluster_flags(p, None)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, module in SUBCOMMANDS.items():
        one = sub.add_parser(name, help=module.HELP, description=module.__doc__)
        _cluster_flags(one, argparse.SUPPRESS)  # after the subcommand, as kubectl users type
        module.add(one)
    return p


def since_at(text: str, now: float) -> float:
    """``--since``: a duration back from ``now`` (``45m``, ``1h30m``) or an RFC 3339 time."""
    at = parse_rfc3339(text)
    if at is not None:
        return at
    try:
        return now - parse_duration(text)
    except ValueError:
        raise ValueError(
            f"--since {text!r} is neither a duration (45m, 2h, 1h30m) nor an RFC 3339 "
            "time (2026-11-28T21:00:00Z)"
        ) from None


def main(argv: list[str] | None = None, clock: Callable[[], float] = time.time) -> int:
    """Parse, read, print; the exit code (see the module's docstring)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    now = clock()
    if getattr(args, "limit", 0) < 0:
        parser.error("--limit must be 0 (no limit) or more")
    args.since_at = None
    if getattr(args, "since", None):
        try:
            args.since_at = since_at(args.since, now)
        except ValueError as err:
            parser.error(str(err))
    target = Target(args.kubeconfig, args.context)
    try:
        if args.namespace is None:
            args.namespace = target.namespace()
        text = SUBCOMMANDS[args.command].run(args, target, now)
    except Failure as err:
        print(f"{PROG} {args.command}: {err}", file=sys.stderr)
        return 1
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # piped into head: what was read is enough
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
