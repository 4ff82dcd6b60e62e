"""The Go-built tools of the install tests, each built (or fetched) once from the Go module
proxy by its script under tools/ and cached under ~/.cache/hoststate, like the control
plane (testbed/kube.py): Helm, the OLM bundle validator, krew's manifest validator,
prometheus-operator's CRDs."""

from __future__ import annotations

import subprocess
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def _cached(script: str, timeout: float) -> Path:
    """What ``tools/<script>`` printed last on stdout: the cached binary or directory
    (the first run builds it, every later one finds the cache)."""
    done = subprocess.run(
        [str(TOOLS / script)], capture_output=True, text=True, timeout=timeout, check=False
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = "\n".join(done.stderr.strip().splitlines()[-10:])
        raise RuntimeError(f"tools/{script} failed ({done.returncode}): {tail}")
    return Path(lines[-1])


def helm() -> Path:
    """The helm binary (helm.sh/helm/v3, pinned in tools/helm/go.mod); offline
    (``template``, ``lint``) it assumes the Kubernetes minor of its client-go."""
    return _cached("helm/build.sh", timeout=1800)


def olm_validator() -> Path:
    """tools/olm/validate, built: ``validate-bundle [-json] [-operatorhub=false] DIR``
    prints the operator-framework validators' findings and exits 1 on any error."""
    return _cached("olm/build.sh", timeout=1800)


def krew_validator() -> Path:
    """krew's validate-krew-manifest (sigs.k8s.io/krew, pinned in tools/krew/go.mod):
    ``-manifest FILE -skip-install`` exits non-zero and says why on an invalid manifest."""
    return _cached("krew/build.sh", timeout=1200)


def clusterctl() -> Path:
    """clusterctl (sigs.k8s.io/cluster-api/cmd/clusterctl, pinned in tools/clusterctl/go.mod);
    run it with ``CLUSTERCTL_DISABLE_VERSIONCHECK=true``, or it asks GitHub for a release."""
    return _cached("clusterctl/build.sh", timeout=2400)


def cluster_api_crds() -> Path:
    """The directory of Cluster API's Cluster and Machine CRDs
    (``cluster.x-k8s.io_clusters.yaml``, ``cluster.x-k8s.io_machines.yaml``) at the version
    clusterctl is built from: clusterctl refuses a cluster without the first; the second
    is the Machine whose in-place update hoststate reads."""
    return _cached("clusterctl/crds.sh", timeout=600)


def prometheus_operator_crds() -> Path:
    """The directory of prometheus-operator's own CRDs (with their schema):
    ``monitoring.coreos.com_servicemonitors.yaml`` and ``..._prometheusrules.yaml``."""
    return _cached("prometheus-operator/crds.sh", timeout=600)


def alertmanager() -> Path:
    """Prometheus' Alertmanager (pinned in tools/alertmanager/build.sh), ``amtool`` beside
    it: for the inhibition docs/alerts.md gives beside the Machine Config Operator's."""
    return _cached("alertmanager/build.sh", timeout=1800)
