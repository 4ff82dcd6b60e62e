"""The command line's side of a handover: open the cluster and Ironic, one line per host."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

import yaml
from kubernetes.config.config_exception import ConfigException

from ..cluster.interface import BAREMETALHOSTS, ApiError, NotFound, unreachable
from ..cluster.kube import KubeCluster
from ..provisioning.ironic import IronicSettings
from .handover import Handover, Outcome, Verdict
from .retire import retirement


@dataclass
class AdoptOptions:
    namespace: str
    names: list[str]  # none: every BareMetalHost of the namespace
    ironic: IronicSettings
    kubeconfig: str | None = None
    context: str | None = None
    dry_run: bool = False
    include_consumed: bool = False


def run_adopt(opts: AdoptOptions) -> int:
    """0 when every host named is handed over (or was already), 1 when any was refused
    or the run stopped, 2 when it could not begin."""
    try:
        cluster = KubeCluster.from_kubeconfig(opts.kubeconfig, opts.context)
    except (ConfigException, OSError, yaml.YAMLError, ValueError, TypeError) as err:
        print(f"--kubeconfig {opts.kubeconfig or '(default)'}: not usable ({err})", file=sys.stderr)
        return 2
    ironic = opts.ironic.provisioner(workers=1)
    try:
        problem = ironic.check()
        if problem:
            print(f"--ironic-url {opts.ironic.url}: {problem}", file=sys.stderr)
            return 2
        names = opts.names or _every_bmh(cluster, opts.namespace)
        if names is None:
            return 2
        if opts.dry_run:
            print("dry run: nothing is written", file=sys.stderr)
        outcomes: list[Outcome] = []
        for name in names:
            one = Handover(cluster, ironic, opts.namespace, name, opts.include_consumed)
            outcomes.append(one.run(dry_run=opts.dry_run))
            print(outcomes[-1].line(), flush=True)
    except KeyboardInterrupt:
        print("\nadopt interrupted; run it again to carry on", file=sys.stderr)
        return 130
    except Exception as err:
        if not isinstance(err, ApiError) and not unreachable(err):
            raise
        where = "the API server did not answer" if unreachable(err) else "an API call failed"
        print(f"adopt stopped, {where}: {err}; run it again to carry on", file=sys.stderr)
        return 1
    finally:
        cluster.close()
    print(summary(outcomes), file=sys.stderr)
    return 1 if any(o.verdict == "refused" for o in outcomes) else 0


def run_retire(
    namespace: str, names: list[str], kubeconfig: str | None, context: str | None
) -> int:
    """Print, for each BareMetalHost handed over, the commands that delete it with nothing
    done to the machine (:mod:`.retire`); write nothing. 0 when every one named can be
    retired, 1 when any is refused (one line saying why), 2 when it could not begin."""
    try:
        cluster = KubeCluster.from_kubeconfig(kubeconfig, context)
    except (ConfigException, OSError, yaml.YAMLError, ValueError, TypeError) as err:
        print(f"--kubeconfig {kubeconfig or '(default)'}: not usable ({err})", file=sys.stderr)
        return 2
    try:
        every = names or _every_bmh(cluster, namespace)
        if every is None:
            return 2
        told = [retirement(cluster, namespace, name) for name in every]
    except Exception as err:
        if not isinstance(err, ApiError) and not unreachable(err):
            raise
        print(f"adopt --retire stopped: {err}", file=sys.stderr)
        return 1
    finally:
        cluster.close()
    for one in told:
        print(one.text(), file=sys.stderr if one.refusal else sys.stdout, flush=True)
    return 1 if any(one.refusal for one in told) else 0


def _every_bmh(cluster: KubeCluster, namespace: str) -> list[str] | None:
    try:
        items, _ = cluster.list(BAREMETALHOSTS, namespace)
    except NotFound:
        print(
            "this cluster serves no metal3.io BareMetalHosts: is baremetal-operator installed?",
            file=sys.stderr,
        )
        return None
    if not items:
        print(f"namespace {namespace} has no BareMetalHosts", file=sys.stderr)
    return sorted(item["metadata"]["name"] for item in items)


def summary(outcomes: list[Outcome]) -> str:
    counts = Counter(o.verdict for o in outcomes)
    order: tuple[Verdict, ...] = (
        "handed over",
        "would hand over",
        "already handed over",
        "refused",
    )
    parts = [f"{counts[v]} {v}" for v in order if counts[v]]
    writes = sum(o.writes for o in outcomes)
    return f"{', '.join(parts) or 'no hosts'}; {writes} writes"
