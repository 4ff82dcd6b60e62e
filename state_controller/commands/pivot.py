"""``state-controller pivot``: Hosts, their Secrets and HostStates moved into a cluster."""

from __future__ import annotations

import argparse
import sys

HELP = (
    "move Hosts, their Secrets and HostStates into a cluster (from a bootstrap's state dir "
    "or another cluster)"
)


def add(p: argparse.ArgumentParser) -> None:
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--state-dir", metavar="DIR", help="a bootstrap's state directory")
    source.add_argument("--from", dest="source", metavar="KUBECONFIG", help="another cluster")
    into = p.add_mutually_exclusive_group(required=True)
    into.add_argument("--kubeconfig", metavar="FILE", help="the cluster to move into")
    into.add_argument("--to", dest="target", metavar="KUBECONFIG", help="same as --kubeconfig")
    p.add_argument("--from-context", help="context of --from's kubeconfig")
    p.add_argument("--to-context", help="context of the target's kubeconfig")
    p.add_argument("-n", "--namespace", default=None, help="only this namespace's hosts")
    p.add_argument("--workers", type=int, default=8, help="hosts moved at once (default 8)")


def main(args: argparse.Namespace) -> int:
    from ..pivot import PivotOptions, run_pivot

    if args.workers < 1:
        print("--workers must be ≥ 1", file=sys.stderr)
        return 2
    return run_pivot(
        PivotOptions(
            target=args.kubeconfig or args.target,
            state_dir=args.state_dir,
            source=args.source,
            source_context=args.from_context,
            target_context=args.to_context,
            namespace=args.namespace,
            workers=args.workers,
        )
    )
