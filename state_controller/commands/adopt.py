"""``state-controller adopt baremetalhosts``: machines handed over from baremetal-operator."""

from __future__ import annotations

import argparse
import sys

from .flags import ironic_settings, kube_flags, provisioner_flags

HELP = (
    "take metal3 BareMetalHosts over from baremetal-operator, host by host, with nothing "
    "registered, inspected or deployed again"
)


def add(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", choices=["baremetalhosts", "baremetalhost", "bmh"], help="what to adopt")
    p.add_argument("names", nargs="*", metavar="NAME", help="default: every one of the namespace")
    p.add_argument("-n", "--namespace", required=True, help="the BareMetalHosts' namespace")
    kube_flags(p)
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="write nothing: one line per host, what would be done or why it is refused",
    )
    p.add_argument(
        "--include-consumed",
        action="store_true",
        help="take hosts with a spec.consumerRef too (cluster-api-provider-metal3 goes on "
        "writing their BareMetalHost, and nothing of it reaches the machine any more)",
    )
    p.add_argument(
        "--retire",
        action="store_true",
        help="write nothing: print the commands that delete each handed-over BareMetalHost "
        "with nothing done to its machine, or say why one is not to be deleted yet "
        "(needs no --ironic-url)",
    )
    provisioner_flags(p)


def main(args: argparse.Namespace) -> int:
    from ..adopt import AdoptOptions, run_adopt
    from ..adopt.command import run_retire

    if args.retire:
        return run_retire(args.namespace, args.names, args.kubeconfig, args.context)
    try:
        ironic = ironic_settings(args)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    if ironic is None:
        print(
            "--ironic-url is required: the Ironic baremetal-operator uses, which hoststate "
            "drives from now on (its nodes are checked before any host is taken)",
            file=sys.stderr,
        )
        return 2
    return run_adopt(
        AdoptOptions(
            namespace=args.namespace,
            names=args.names,
            ironic=ironic,
            kubeconfig=args.kubeconfig,
            context=args.context,
            dry_run=args.dry_run,
            include_consumed=args.include_consumed,
        )
    )
