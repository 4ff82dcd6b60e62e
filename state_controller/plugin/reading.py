"""The plugin's reads of the API: which cluster and namespace (as kubectl chooses them),
and the HostStates, NodePools and Nodes it shows. Every failure becomes a
:class:`Failure` whose message names the object and says what to do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from ..api.objects import Obj
from ..cluster.interface import (
    HOSTSTATES,
    MACHINECONFIGNODES,
    NODEPOOLS,
    NODES,
    ApiError,
    NotFound,
)
from ..cluster.kube import KubeCluster

DEFAULT_NAMESPACE = "default"


class Failure(Exception):
    """What went wrong, in one line for the person who ran the command (exit code 1)."""


@dataclass(frozen=True)
class Target:
    """Which cluster to read: a kubeconfig file (None: $KUBECONFIG, ~/.kube/config, else
    the pod's service account) and a context of it (None: its current context)."""

    kubeconfig: str | None = None
    context: str | None = None

    def connect(self) -> KubeCluster:
        """A client for the cluster; a kubeconfig that cannot be read is a Failure."""
        from kubernetes.config import ConfigException

        try:
            return KubeCluster.from_kubeconfig(self.kubeconfig, self.context)
        except (ConfigException, OSError, TypeError, ValueError) as err:
            where = self.kubeconfig or "$KUBECONFIG or ~/.kube/config"
            raise Failure(
                f"cannot load the kubeconfig ({where}"
                + (f", context {self.context}" if self.context else "")
                + f"): {err}; pass --kubeconfig FILE or --context NAME"
            ) from None

    def hoststate(self, namespace: str, name: str) -> Obj:
        """The HostState ``namespace/name``, read with a client of its own."""
        cluster = self.connect()
        try:
            return hoststate(cluster, namespace, name)
        finally:
            cluster.close()

    def namespace(self) -> str:
        """The namespace kubectl would use: the context's own, else ``default`` (in a pod
        with no kubeconfig, the pod's namespace)."""
        from kubernetes.config import ConfigException, list_kube_config_contexts

        try:
            contexts, current = cast(Any, list_kube_config_contexts)(self.kubeconfig)
        except (ConfigException, OSError, TypeError, ValueError):
            return _pod_namespace()
        if self.context:
            current = next((c for c in contexts if c.get("name") == self.context), None)
        context: dict[str, Any] = (current or {}).get("context") or {}
        return str(context.get("namespace") or DEFAULT_NAMESPACE)


def _pod_namespace() -> str:
    try:
        with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as f:
            return f.read().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


def _reads(what: str, err: Exception) -> Failure:
    """An error of the API server (or of reaching it) while reading ``what``."""
    code = getattr(err, "code", None)
    if code == 403:
        return Failure(f"not allowed to read {what}: {err}; ask for get and list on it")
    if isinstance(err, ApiError):
        return Failure(f"reading {what}: {err}")
    return Failure(
        f"cannot reach the API server to read {what}: {err}; check the kubeconfig's "
        "server (--kubeconfig, --context)"
    )


NO_SUCH_KIND = "the server could not find the requested resource"  # a 404 of the path itself


def _not_found(what: str, err: NotFound, fix: str) -> Failure:
    """A 404: the object is not there, or the API server serves no such kind (hoststate's
    CRDs not installed)."""
    if NO_SUCH_KIND in str(err):
        return Failure(
            f"reading {what}: the API server serves no {what.split()[0]}s "
            "(hoststate.io/v1alpha1): are hoststate's CRDs installed? (docs/cluster.md)"
        )
    return Failure(f"{what} not found; {fix}")


def _io_errors() -> tuple[type[Exception], ...]:
    import urllib3

    return (ApiError, OSError, urllib3.exceptions.HTTPError)


def hoststate(cluster: KubeCluster, namespace: str, name: str) -> Obj:
    """The HostState ``namespace/name``; not found is a Failure that says where to look."""
    try:
        return cluster.get(HOSTSTATES, namespace, name)
    except NotFound as err:
        raise _not_found(
            f"HostState {namespace}/{name}",
            err,
            f"list them with kubectl get hoststates -n {namespace} (or -A for every namespace)",
        ) from None
    except _io_errors() as err:
        raise _reads(f"HostState {namespace}/{name}", err) from None


def nodepool(cluster: KubeCluster, name: str) -> Obj:
    """The NodePool ``name`` (cluster-scoped)."""
    try:
        return cluster.get(NODEPOOLS, None, name)
    except NotFound as err:
        raise _not_found(
            f"NodePool {name}", err, "list them with kubectl get nodepools.hoststate.io"
        ) from None
    except _io_errors() as err:
        raise _reads(f"NodePool {name}", err) from None


def hoststates(cluster: KubeCluster) -> list[Obj]:
    """Every HostState, in every namespace."""
    try:
        return cluster.list(HOSTSTATES, None)[0]
    except _io_errors() as err:
        raise _reads("HostStates in all namespaces", err) from None


def nodes(cluster: KubeCluster) -> list[Obj]:
    """Every Node (their labels say their pool)."""
    try:
        return cluster.list(NODES, None)[0]
    except _io_errors() as err:
        raise _reads("Nodes", err) from None


def machineconfignodes(cluster: KubeCluster) -> list[Obj]:
    """Every MachineConfigNode (OpenShift's; each names its Node's pool); none where the
    API server does not serve the kind (not OpenShift)."""
    try:
        return cluster.list(MACHINECONFIGNODES, None)[0]
    except NotFound:
        return []
    except _io_errors() as err:
        raise _reads("MachineConfigNodes (machineconfiguration.openshift.io/v1)", err) from None
