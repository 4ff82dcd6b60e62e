"""``state-controller convert``: BareMetalHost YAML (with its Secrets) as Hosts.

The Hosts and Secrets go to stdout, ready for ``kubectl apply``; what is left to do
(documents skipped, Secrets to copy, label or fill in) goes to stderr, one line each.
"""

from __future__ import annotations

import argparse
import sys

import yaml

HELP = "print metal3 BareMetalHost YAML (and its BMC Secrets) as hoststate Hosts"


def add(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--hosts",
        required=True,
        metavar="FILE",
        help="BareMetalHosts, Hosts and their BMC Secrets, as for kubectl apply "
        "(what bootstrap --hosts takes)",
    )


def main(args: argparse.Namespace) -> int:
    from ..bootstrap.hostsfile import HostsFileError, read_hosts_file

    try:
        read = read_hosts_file(args.hosts, secrets_in_cluster=True)
    except HostsFileError as err:
        print(err, file=sys.stderr)
        return 2
    for note in read.notes:
        print(note, file=sys.stderr)
    documents = [*read.hosts, *read.secrets]
    hosts, secrets = len(read.hosts), len(read.secrets)
    print(
        f"# {hosts} Host{'' if hosts == 1 else 's'} and {secrets} Secret"
        f"{'' if secrets == 1 else 's'} from {args.hosts}"
    )
    print(yaml.safe_dump_all(documents, sort_keys=False), end="")
    return 0
