"""``state-controller bootstrap``: the first hosts provisioned before the cluster exists."""

from __future__ import annotations

import argparse
import sys

from .flags import (
    ironic_settings,
    provisioner_flags,
    reach,
    reach_flags,
    simulated_timings_flag,
    trace_flag,
)

HELP = "provision the first hosts before the cluster exists, books kept in --state-dir"


def add(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--hosts",
        metavar="FILE",
        help="YAML of Hosts and their BMC Secrets (as for kubectl apply); needed the first "
        "time, optional when carrying on with a state dir",
    )
    p.add_argument(
        "--state-dir", required=True, metavar="DIR", help="where the books and machines are kept"
    )
    p.add_argument(
        "--metrics-bind-address",
        default="127.0.0.1:8080",
        help="'0' disables (default %(default)s)",
    )
    p.add_argument("--workers", type=int, default=4)
    simulated_timings_flag(p, "demo")
    p.add_argument(
        "--exit-when-settled", action="store_true", help="exit once every host is at its goal"
    )
    p.add_argument(
        "--timeout", type=float, default=None, help="give up settling after this many seconds"
    )
    p.add_argument("--no-table", action="store_true", help="progress lines only")
    trace_flag(p)
    provisioner_flags(p)
    reach_flags(p)


def main(args: argparse.Namespace) -> int:
    from ..bootstrap import BootstrapOptions, run_bootstrap

    if args.workers < 1 or (args.timeout is not None and args.timeout <= 0):
        print("--workers must be ≥ 1 and --timeout > 0", file=sys.stderr)
        return 2
    try:
        ironic = ironic_settings(args)
        return run_bootstrap(
            BootstrapOptions(
                state_dir=args.state_dir,
                hosts=args.hosts,
                ironic=ironic,
                simulated_timings=args.simulated_timings,
                workers=args.workers,
                metrics_bind_address=args.metrics_bind_address,
                exit_when_settled=args.exit_when_settled,
                timeout=args.timeout,
                table=not args.no_table,
                trace=args.trace,
                reach=reach(args),
            )
        )
    except ValueError as err:
        print(str(err), file=sys.stderr)
        return 2
