"""``state-controller get``: hosts, hoststates or nodepools listed as ``kubectl get`` lists
them (the same printer columns), from a cluster, a demo's store or a bootstrap's state dir."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kubernetes.config import ConfigException

from ..api.columns import HOST_COLUMNS, HOSTSTATE_COLUMNS, NODEPOOL_COLUMNS

HELP = "list hosts, hoststates or nodepools as kubectl get does"


def add(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "kind",
        choices=["hoststates", "hoststate", "hs", "hosts", "host", "hst", "nodepools", "hsnp"],
    )
    p.add_argument("name", nargs="?", help="only this object")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--store", help="sqlite file of an embedded cluster (demo --store)")
    where.add_argument("--state-dir", help="a bootstrap's state directory (bootstrap --state-dir)")
    where.add_argument("--kubeconfig", help="a cluster's kubeconfig ('-' for in-cluster/default)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("-n", "--namespace", default=None)
    p.add_argument("-o", "--output", choices=["wide", "json"], default=None)


def main(args: argparse.Namespace) -> int:
    import urllib3

    from ..cluster.embedded import EmbeddedCluster
    from ..cluster.interface import HOSTS, HOSTSTATES, NODEPOOLS, ApiError
    from ..cluster.kube import KubeCluster
    from ..screens.tables import render, rows

    if args.state_dir is not None:
        from ..bootstrap.state_dir import StateDir

        kept = StateDir(args.state_dir)
        args.store = str(kept.store)
        if not kept.exists:
            print(
                f"--state-dir: {args.state_dir} holds no bootstrap; start one with "
                "state-controller bootstrap --hosts FILE --state-dir DIR",
                file=sys.stderr,
            )
            return 2
    if args.store is not None and not Path(args.store).exists():
        print(
            f"--store: {args.store} does not exist; start a demo with --store first",
            file=sys.stderr,
        )
        return 2
    if args.kind in ("hosts", "host", "hst"):
        resource, columns = HOSTS, HOST_COLUMNS
    elif args.kind in ("nodepools", "hsnp"):
        resource, columns = NODEPOOLS, NODEPOOL_COLUMNS
    else:
        resource, columns = HOSTSTATES, HOSTSTATE_COLUMNS
    cluster: EmbeddedCluster | KubeCluster
    if args.store is not None:
        cluster = EmbeddedCluster(path=args.store, read_only=True)
    else:
        kubeconfig = None if args.kubeconfig == "-" else args.kubeconfig
        try:
            cluster = KubeCluster.from_kubeconfig(kubeconfig, args.context)
        except (ConfigException, OSError) as err:
            print(f"--kubeconfig {args.kubeconfig}: {err}", file=sys.stderr)
            return 2
    try:
        items, _ = cluster.list(resource, args.namespace)
    except (ApiError, OSError, urllib3.exceptions.HTTPError) as err:
        print(f"state-controller get: {err}", file=sys.stderr)
        return 1
    finally:
        cluster.close()
    if args.name is not None:
        items = [i for i in items if i["metadata"]["name"] == args.name]
        if not items:
            print(f'{resource.plural} "{args.name}" not found', file=sys.stderr)
            return 1
    if args.output == "json":
        print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2))
        return 0
    if not items:
        print(
            f"No resources found{f' in {args.namespace} namespace' if args.namespace else ''}.",
            file=sys.stderr,
        )
        return 0
    namespaces = args.namespace is None and resource.namespaced
    table = rows(items, columns, wide=args.output == "wide", namespaces=namespaces)
    print(render(table))
    return 0
